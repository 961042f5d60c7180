from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_queues.tools import changed_stacks
from tests.unit.conftest import Write, git

pytestmark = pytest.mark.unit

STACKS = ["dev", "staging", "prod", "local"]


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["Pulumi.staging.yaml"], ["staging"]),
        (["Pulumi.prod.yaml", "Pulumi.dev.yaml"], ["dev", "prod"]),
        (["gpu_queues/components/queues.py"], ["dev", "staging", "prod"]),
        (["policies/rules.py"], ["dev", "staging", "prod"]),
        (["Pulumi.yaml"], ["dev", "staging", "prod"]),
        (["requirements.lock"], ["dev", "staging", "prod"]),
        (["toolchain/pins.env"], ["dev", "staging", "prod"]),
        (["README.md", "docs/promotion.md", "tests/unit/test_x.py", "sandbox/pulumi_stack.py"], []),
        (["Pulumi.local.yaml"], []),  # the sandbox stack: the e2e tests cover it
        (["Pulumi.gone.yaml"], []),  # deleted in the change: nothing to preview
        ([], []),
    ],
)
def test_which_stacks_a_change_touches(paths: list[str], expected: list[str]) -> None:
    assert changed_stacks.changed_stacks(paths, STACKS) == expected


def test_a_worker_stack_change_touches_the_managers_that_name_it() -> None:
    stacks = ["dev", "prod", "prod-gpu-east", "prod-gpu-west", "local-mk-manager"]
    managers = {"prod-gpu-east": {"prod", "local-mk-manager"}, "prod-gpu-west": {"prod"}}
    assert changed_stacks.changed_stacks(["Pulumi.prod-gpu-east.yaml"], stacks, managers) == [
        "prod",
        "prod-gpu-east",
    ]
    assert changed_stacks.changed_stacks(["Pulumi.prod.yaml"], stacks, managers) == ["prod"]


def test_managers_are_found_from_their_stack_files(repo: Path, write: Write) -> None:
    write(
        "prod",
        "config:\n  gpu-queues:multiKueue:\n    manager:\n      workers:\n"
        "        - {name: east, stack: prod-gpu-east}\n"
        "        - {name: far, stack: acme/another-project/prod-gpu-far}\n"
        "        - {name: west, kubeconfig: {secure: v1:AAAA}}\n      teams: [{name: ml}]\n",
    )
    write("prod-gpu-east", "config:\n  gpu-queues:multiKueue: {worker: {}}\n")
    found = changed_stacks.managers_of(["prod", "prod-gpu-east"], repo)
    assert found == {"prod-gpu-east": {"prod"}}


def test_from_git_revisions(repo: Path, write: Write, capsys: pytest.CaptureFixture[str]) -> None:
    for stack in ("dev", "staging", "prod"):
        write(stack, "config: {}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write("prod", "config: {gpu-queues:cohort: {name: pool}}\n")
    git(repo, "commit", "-qam", "prod quota")
    args = ["--base", base, "--head", "HEAD", "--json", "--root", str(repo)]
    assert changed_stacks.main(args) == 0
    assert json.loads(capsys.readouterr().out) == ["prod"]


def test_unknown_base_revision_is_a_clear_error(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    assert changed_stacks.main(["--base", "origin/nope", "--root", str(repo)]) == 2
    assert "cannot read revision 'origin/nope'" in capsys.readouterr().err


def test_matrix_pairs_each_stack_with_its_policy_config() -> None:
    assert changed_stacks.matrix(["dev", "staging", "prod"]) == [
        {"stack": "dev", "policyConfig": "policies/config/dev.json"},
        {"stack": "staging", "policyConfig": "policies/config/prod.json"},
        {"stack": "prod", "policyConfig": "policies/config/prod.json"},
    ]
