"""Issue 42: every promise docs/security.md makes names tests that exist. The page's last
table ("Every promise and its tests") is read; each `path::function` it names must be a test
function of that module, so a promise cannot lose its test unnoticed (as docs/kueue-manifest.md's
refusals are held by tests/unit/release/test_promises.py)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.unit

DOCS = ROOT / "docs" / "security.md"
TABLE = "## Every promise and its tests"


def promises() -> list[tuple[str, list[str]]]:
    """(promise, the tests it names), row by row."""
    text = DOCS.read_text()
    table = text[text.index(TABLE) :]
    table = table[: table.index("\n## ", len(TABLE))]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].startswith("`"):
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
    return rows


def test_every_promise_names_tests() -> None:
    rows = promises()
    assert len(rows) >= 14
    assert all(tests for _, tests in rows), [p for p, tests in rows if not tests]


@pytest.mark.parametrize("ref", [ref for _, tests in promises() for ref in tests])
def test_every_test_the_page_names_exists(ref: str) -> None:
    path, _, name = ref.partition("::")
    assert (ROOT / "tests" / path).is_file(), ref
    tree = ast.parse((ROOT / "tests" / path).read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert name.startswith("test_") and name in functions, f"{ref}: no such test function"
