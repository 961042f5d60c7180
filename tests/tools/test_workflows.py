"""The GitHub workflows cannot run here, so actionlint (built by `make toolchain`) checks them
and the tests check that they call the project's own scripts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ACTIONLINT = ROOT / ".toolchain" / "bin" / "actionlint"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def test_actionlint_finds_nothing() -> None:
    assert ACTIONLINT.is_file(), f"{ACTIONLINT} is missing: run `make toolchain` to build it"
    assert WORKFLOWS, "no workflows in .github/workflows"
    result = subprocess.run(
        [str(ACTIONLINT), "-no-color", *map(str, WORKFLOWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"actionlint findings:\n{result.stdout}{result.stderr}"


def _steps() -> list[tuple[str, dict[str, object]]]:
    found = []
    for path in WORKFLOWS:
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            found += [(path.name, step) for step in job.get("steps", [])]
    return found


def test_third_party_actions_are_pinned_to_exact_versions() -> None:
    for name, step in _steps():
        uses = step.get("uses")
        if isinstance(uses, str) and not uses.startswith("./"):
            ref = uses.partition("@")[2]
            exact = len(ref) == 40 or ref.count(".") == 2
            assert exact, f"{name}: {uses} is not pinned to a commit SHA or an exact version"


def test_workflows_use_the_project_scripts() -> None:
    text = "\n".join(p.read_text() for p in WORKFLOWS)
    for needle in (
        "gpuq.changed_stacks",
        "gpuq.quota_diff",
        "gpuq.pr_comment",
        "gpuq.promote",
        "make toolchain",
        "make venv",
        "policyPacks: policies",
        "comment-on-pr:",
        "secrets.PULUMI_CONFIG_PASSPHRASE",
    ):
        assert needle in text, f"no workflow uses {needle!r}"


def test_staging_and_prod_deploy_through_environments_after_dev() -> None:
    jobs = yaml.safe_load((ROOT / ".github/workflows/deploy.yml").read_text())["jobs"]
    assert jobs["dev"]["with"]["command"] == "up"
    assert jobs["staging"]["needs"] == "dev" and jobs["staging"]["with"]["environment"] == "staging"
    assert jobs["prod"]["needs"] == "staging" and jobs["prod"]["with"]["environment"] == "prod"
