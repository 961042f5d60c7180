"""The guide's walkthrough on the real Kueue controller, deployed by the real Pulumi CLI."""

from __future__ import annotations

import subprocess

import pytest

from sandbox.walkthrough import KubeSession, condition, is_true, job

pytestmark = pytest.mark.e2e

HELD_MESSAGE = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 4 more needed"
)


def test_a_fresh_pulumi_up_installs_kueue_and_creates_the_queues_in_one_go(
    local_up: subprocess.CompletedProcess[str],
) -> None:
    out = local_up.stdout + local_up.stderr
    assert local_up.returncode == 0, out
    assert "error" not in out.lower().replace("errors", ""), out
    for obj in ("gpu-flavor", "gpu-cluster-queue", "gpu-queue", "shared-pvc"):
        assert obj in out, f"{obj} not in the update:\n{out}"


def test_shared_pvc_is_bound_to_the_static_volume(cluster: KubeSession) -> None:
    pvc = cluster.core.read_namespaced_persistent_volume_claim("shared-pvc", "default")
    assert pvc.status.phase == "Bound"
    assert pvc.spec.volume_name == "shared-volume-local"
    assert pvc.spec.access_modes == ["ReadWriteMany"]
    assert pvc.spec.storage_class_name == "shared-wekafs"


def test_the_guide_walkthrough(clean_jobs: KubeSession) -> None:
    k = clean_jobs
    # gpu-job-a: 6 of 8 GPUs, admitted, unsuspended, its pod Running on the fake GPU node.
    k.submit(job("gpu-job-a"))
    wl_a = k.wait(
        "gpu-job-a admitted",
        lambda: (w := k.workload_for("gpu-job-a")) and is_true(w, "Admitted") and w,
    )
    assert wl_a["metadata"]["name"].startswith("job-gpu-job-a-")
    reserved = condition(wl_a, "QuotaReserved")
    assert reserved and reserved["message"] == "Quota reserved in ClusterQueue gpu-cluster-queue"
    pod = k.wait(
        "gpu-job-a's pod Running",
        lambda: next((p for p in k.job_pods("gpu-job-a") if p.status.phase == "Running"), None),
    )
    assert k.get_job("gpu-job-a").spec.suspend is False
    node = k.core.read_node(pod.spec.node_name)
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    assert pod.spec.volumes[0].persistent_volume_claim.claim_name == "shared-pvc"
    k.wait("gpu-job-a active", lambda: (k.get_job("gpu-job-a").status.active or 0) == 1)

    # gpu-job-b: the same shape; 12 > 8, so it is held, suspended, with Kueue's exact reason.
    k.submit(job("gpu-job-b"))
    held = k.wait(
        "gpu-job-b evaluated", lambda: condition(k.workload_for("gpu-job-b"), "QuotaReserved")
    )
    assert held["status"] == "False"
    assert held["reason"] == "Pending"
    assert held["message"] == HELD_MESSAGE
    job_b = k.get_job("gpu-job-b")
    assert job_b.spec.suspend is True
    assert not job_b.status.active

    # Deleting gpu-job-a re-admits gpu-job-b without resubmission.
    k.delete_job("gpu-job-a")
    k.wait(
        "gpu-job-b unsuspended", lambda: k.get_job("gpu-job-b").spec.suspend is False, timeout=90
    )
    assert is_true(k.workload_for("gpu-job-b"), "Admitted")
    k.wait(
        "gpu-job-b's pod Running",
        lambda: any(p.status.phase == "Running" for p in k.job_pods("gpu-job-b")),
    )
