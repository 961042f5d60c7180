"""Policy on the real engine against the sandbox, and idempotency of the local stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG
from sandbox.walkthrough import KUEUE, KubeSession
from tests.fixtures.policy_programs import Program

pytestmark = pytest.mark.e2e

# The sandbox's cloud names its static shared volume after the local stack's; dev's own
# volume does not exist here, and a claim's volumeName cannot change once bound.
SANDBOX_VOLUME = {"gpu-queues:sharedStorage[0].volumeName": "shared-volume-local"}


@pytest.mark.parametrize(
    ("name", "pack_config"),
    # dev pins the rendered release manifest (path and sha256) like every stack.
    [("local", None), ("dev", "policies/config/dev.json")],
)
def test_preview_with_the_policy_pack_passes(
    deployed: object, name: str, pack_config: str | None
) -> None:
    extra = ["--policy-pack-config", pack_config] if pack_config else []
    done = stack.pulumi(
        "preview",
        "--policy-pack",
        "policies",
        *extra,
        stack=name,
        check=False,
        capture=True,
        overrides=SANDBOX_VOLUME if name == "dev" else None,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[mandatory]" not in done.stdout, done.stdout


def test_a_gpu_only_cluster_queue_is_refused_and_nothing_reaches_the_cluster(
    cluster: KubeSession,
    tmp_path: Path,
) -> None:
    program = Program(
        "gpu-only-clusterqueue",
        tmp_path,
        POLICY_PROGRAM_KUBECONFIG=str(KUBECONFIG),
    )
    done = program.with_policy_pack("up")
    assert done.returncode != 0, done.stdout
    assert "clusterqueue-covers-cpu-memory" in done.stdout, done.stdout
    assert 'ClusterQueue "gpu-only-cluster-queue"' in done.stdout, done.stdout
    names = [
        cq["metadata"]["name"]
        for cq in cluster.custom.list_cluster_custom_object(*KUEUE, "clusterqueues")["items"]
    ]
    assert "gpu-only-cluster-queue" not in names


def test_preview_after_up_reports_no_changes(deployed: object) -> None:
    done = stack.pulumi("preview", "--expect-no-changes", "--diff", check=False, capture=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_refresh_after_up_reports_no_changes(deployed: object) -> None:
    done = stack.pulumi(
        "refresh", "--yes", "--expect-no-changes", "--diff", check=False, capture=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
