"""sandbox/README.md's module table names every module of sandbox/, and only those (issue 38,
item 5): a newcomer finds each there, one line each."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.unit

SANDBOX = ROOT / "sandbox"


def test_the_readme_lists_every_module_of_the_sandbox_once() -> None:
    text = (SANDBOX / "README.md").read_text()
    table = text.split("## Modules\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([^`]+)` \|", table, re.M)
    modules = {
        str(p.relative_to(SANDBOX).with_suffix(""))
        for p in SANDBOX.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }
    files = {p.name for p in SANDBOX.iterdir() if p.suffix in (".sh", ".yaml")}
    assert len(listed) == len(set(listed)), "a module listed twice"
    assert set(listed) == modules | files
