"""The library as a user's type checker sees it (issue 43, item 1): the README's example
program passes mypy --strict and pyright (strict), both pinned in requirements.txt, run from a
folder outside the checkout with no config of ours, so the package is read as an installed one
(its py.typed marker); the same program with one key misspelt fails in both, naming the key.
And the config models built in code take the field names both checkers see."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpu_queues.config.model import ConfigError, ResourceGroup, Team, load_config
from tests.conftest import ROOT
from tests.unit.test_library import two_teams

pytestmark = pytest.mark.unit

README = ROOT / "README.md"
TYPO = ('"clusterQueue": f"{name}-cq"', '"clusterQueu": f"{name}-cq"')


def _readme_example() -> str:
    readme = README.read_text()
    start = readme.index("```python\n", readme.index("## Using it as a library"))
    return readme[start + len("```python\n") : readme.index("```\n", start + 1)]


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example as it is (ok.py) and with one key misspelt (typo.py), outside the repo."""
    here = tmp_path_factory.mktemp("user-program")
    assert ROOT not in here.parents
    example = _readme_example()
    assert TYPO[0] in example, "the example no longer writes the key this test misspells"
    (here / "ok.py").write_text(example)
    (here / "typo.py").write_text(example.replace(*TYPO))
    return here


def program_diagnostics(
    cmd: list[str], where: Path, env: dict[str, str] | None = None
) -> dict[str, str]:
    """Each program's diagnostics (ok.py's, typo.py's): the lines naming its file, with the
    indented lines that follow them (pyright's details), summaries left out."""
    done = subprocess.run(
        cmd,
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    out = done.stdout + done.stderr
    assert done.returncode in (0, 1), out  # 1: errors found; anything else: it did not run
    found: dict[str, list[str]] = {"ok": [], "typo": []}
    current: str | None = None
    for line in out.splitlines():
        named = [name for name in found if f"{name}.py" in line]
        if named:
            current = named[0]
        elif not line.startswith(" "):
            current = None  # a summary ("Found 2 errors", "1 error, 0 warnings")
        if current is not None:
            found[current].append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def test_mypy_strict_passes_the_example_and_names_a_misspelt_key(programs: Path) -> None:
    found = program_diagnostics(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(programs / ".mypy"),
            "ok.py",
            "typo.py",
        ],
        programs,
    )
    assert found["ok"] == ""
    assert 'Extra key "clusterQueu" for TypedDict "TeamKeys"' in found["typo"], found["typo"]


def test_pyright_strict_passes_the_example_and_names_a_misspelt_key(programs: Path) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    assert pyright, "pyright is pinned in requirements.txt: run make venv"
    (programs / "pyrightconfig.json").write_text(
        json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.11"})
    )
    found = program_diagnostics(
        [pyright, "--pythonpath", sys.executable, "ok.py", "typo.py"], programs
    )
    assert "error" not in found["ok"], found["ok"]
    assert '"clusterQueu" is an undefined item in type "TeamKeys"' in found["typo"], found["typo"]


def test_a_model_built_in_code_takes_the_field_names_type_checkers_see() -> None:
    """`Team(cluster_queue=...)` is what the constructor's signature says; it runs too."""
    group = two_teams()["teams"][0]["resourceGroups"][0]
    team = Team(
        name="vision",
        namespace="team-vision",
        cluster_queue="vision-cq",
        local_queue="vision-queue",
        resource_groups=[ResourceGroup.model_validate(group)],
    )
    assert (team.cluster_queue, team.local_queue) == ("vision-cq", "vision-queue")


def test_a_stack_files_keys_stay_camelcase_only() -> None:
    """A mapping is a stack file's keys: snake_case there is an unknown key, named, as the
    checks across keys read the camelCase ones only."""
    raw = two_teams()
    team = dict(raw["teams"][0])
    team["cluster_queue"] = team.pop("clusterQueue")
    with pytest.raises(ConfigError, match=r"teams\[0\]\.cluster_queue"):
        load_config({**raw, "teams": [team]})
    with pytest.raises(ValidationError):
        Team.model_validate({**raw["teams"][0], "cluster_queue": "x"})
