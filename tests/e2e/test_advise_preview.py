"""The quota advisor's `pulumi preview` of its proposal (gpu_queues/advise/preview.py) where it
can run one: the session's `local` stack deployed on the sandbox, its state in the backend the
session's pulumi calls see. A proposal that changes one team's GPU quota is previewed for real
against the cluster: it passes with a pack config that lets local's queues be, and fails, with
the policy named, under the strict prod config (local's ClusterQueue takes every namespace,
which prod's config makes mandatory)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpu_queues.advise.preview import preview

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GPU_QUOTA = "nvidia.com/gpu: {nominalQuota: 8}"


def proposal(tmp_path: Path) -> Path:
    """local's committed stack file with its team's GPU quota lowered from 8 to 6."""
    text = (ROOT / "Pulumi.local.yaml").read_text()
    assert text.count(GPU_QUOTA) == 1, "the local stack's GPU quota moved; update this test"
    out = tmp_path / "Pulumi.local.yaml"
    out.write_text(text.replace(GPU_QUOTA, "nvidia.com/gpu: {nominalQuota: 6}"))
    return out


def test_the_advisors_preview_runs_against_the_deployed_stack(
    deployed: subprocess.CompletedProcess[str], tmp_path: Path
) -> None:
    proposed = proposal(tmp_path)
    before = proposed.read_text()
    ok, line = preview("local", proposed, "policies/config/dev.json", ROOT)
    assert (ok, line) == (True, "passed, policy pack included")
    assert proposed.read_text() == before  # the CLI ran on a copy

    ok, line = preview("local", proposed, "policies/config/prod.json", ROOT)
    assert ok is False
    assert line.startswith("failed: mandatory policy violated: "), line
    assert "clusterqueue-namespace-selector-not-all" in line


def test_a_proposal_for_a_stack_the_backend_does_not_have_is_not_run(
    deployed: subprocess.CompletedProcess[str], tmp_path: Path
) -> None:
    ok, line = preview("no-such-stack", proposal(tmp_path), "policies/config/dev.json", ROOT)
    assert ok is None
    assert line.startswith("not run: this checkout's Pulumi backend has no stack `no-such-stack`")
