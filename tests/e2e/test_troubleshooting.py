"""The guide's troubleshooting list, each case shown on the real Kueue controller."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.walkthrough import KUEUE, KubeSession, condition, job
from tests.builders import ClusterQueue

pytestmark = pytest.mark.e2e


def test_a_job_without_the_queue_label_is_not_managed_and_runs_at_once(
    clean_jobs: KubeSession,
) -> None:
    k = clean_jobs
    unlabelled = job("no-queue-label", queue=None, gpus=1)
    unlabelled["spec"]["suspend"] = False
    k.submit(unlabelled)
    k.wait(
        "its pod Running",
        lambda: any(p.status.phase == "Running" for p in k.job_pods("no-queue-label")),
    )
    assert k.workload_for("no-queue-label") is None
    assert k.get_job("no-queue-label").spec.suspend is False


def test_a_label_naming_a_missing_local_queue_leaves_the_workload_inadmissible(
    clean_jobs: KubeSession,
) -> None:
    k = clean_jobs
    k.submit(job("wrong-queue", queue="no-such-queue"))
    cond = k.wait(
        "workload evaluated", lambda: condition(k.workload_for("wrong-queue"), "QuotaReserved")
    )
    assert cond["status"] == "False"
    assert cond["reason"] == "Inadmissible"
    assert cond["message"] == "LocalQueue no-such-queue doesn't exist"
    assert k.get_job("wrong-queue").spec.suspend is True


def test_a_job_requesting_an_uncovered_resource_stays_pending(clean_jobs: KubeSession) -> None:
    k = clean_jobs
    k.submit(job("wants-fpga", gpus=1, extra_limits={"example.com/fpga": 1}))
    cond = k.wait(
        "workload evaluated", lambda: condition(k.workload_for("wants-fpga"), "QuotaReserved")
    )
    assert cond["status"] == "False"
    assert "resource example.com/fpga unavailable in ClusterQueue" in cond["message"]
    assert k.get_job("wants-fpga").spec.suspend is True


@pytest.fixture
def broken_queue(cluster: KubeSession) -> Iterator[str]:
    # Written by hand (a test program), since the stack's config refuses it.
    name = "flavorless-cluster-queue"
    queue = ClusterQueue(name).quota("no-such-flavor", cpu=1, memory="1Gi")
    cluster.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", queue.obj())
    yield name
    cluster.custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", name)


def test_a_cluster_queue_naming_a_missing_flavor_is_inactive(
    cluster: KubeSession, broken_queue: str
) -> None:
    def active() -> dict[str, str] | None:
        cq = cluster.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", broken_queue)
        return condition(cq, "Active")

    cond = cluster.wait("the queue's Active condition", active)
    assert cond["status"] == "False"
    assert cond["reason"] == "FlavorNotFound"
    assert (
        cond["message"]
        == "Can't admit new workloads: references missing ResourceFlavor(s): no-such-flavor."
    )
