"""A PyTorchJob on the sandbox: Kubeflow's real training-operator v1
(sandbox/training_operator.py) makes its Master and Worker pods once the Kueue the local stack
installs admits it through its kubeflow.org/pytorchjob integration (on in the release's default
Configuration: one Workload, a `master` and a `worker` pod set), holds the next PyTorchJob
suspended with its quota message and admits it once the first is gone; kwok plays the pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true
from tests.e2e.operated import NS, Kind, Operated, wiped

pytestmark = pytest.mark.e2e

PYTORCHJOBS = Kind(
    "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", "training.kubeflow.org/job-name"
)
# The master 2 GPUs, 2 workers x 2: 6 of the flavor's 8. The next job's master fits in the 2
# left, its workers find none: 4 more needed.
HELD_MESSAGE = (
    "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 4 more needed"
)


def replica(replicas: int) -> dict[str, Any]:
    # The operator's webhook wants a container named pytorch in every replica.
    container = {
        "name": "pytorch",
        "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "resources": {
            "requests": {"cpu": "1", "memory": "4Gi"},
            "limits": {"nvidia.com/gpu": "2"},
        },
    }
    return {
        "replicas": replicas,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [container]}},
    }


def pytorch_job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "gpu-queue"}},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)}},
    }


@pytest.fixture
def jobs(cluster: KubeSession) -> Iterator[Operated]:
    yield from wiped(cluster, PYTORCHJOBS)


def test_kueue_admits_a_pytorchjob_the_operator_makes_its_pods_and_the_next_is_held_for_quota(
    jobs: Operated,
) -> None:
    pt, k = jobs, jobs.k
    pt.create(pytorch_job("train-a"))
    wl_a = k.wait(
        "train-a admitted",
        lambda: (w := pt.workload("train-a")) and is_true(w, "Admitted") and w,
    )
    assert [(ps["name"], ps["count"]) for ps in wl_a["spec"]["podSets"]] == [
        ("master", 1),
        ("worker", 2),
    ]
    flavors = [a["flavors"] for a in wl_a["status"]["admission"]["podSetAssignments"]]
    gpu = {"cpu": "gpu-flavor", "memory": "gpu-flavor", "nvidia.com/gpu": "gpu-flavor"}
    assert flavors == [gpu, gpu]
    # The operator made the master and the worker pods once Kueue unsuspended the job; kwok
    # runs them on the GPU node.
    running = k.wait(
        "train-a's three pods Running",
        lambda: (r := pt.running("train-a")) and len(r) == 3 and r,
    )
    kinds = sorted(p.metadata.labels["training.kubeflow.org/replica-type"] for p in running)
    assert kinds == ["master", "worker", "worker"]
    assert all(p.spec.node_name for p in running)
    assert not pt.suspended("train-a")
    k.wait("train-a Running", lambda: is_true(pt.get("train-a"), "Running"))

    pt.create(pytorch_job("train-b"))
    held = k.wait("train-b evaluated", lambda: condition(pt.workload("train-b"), "QuotaReserved"))
    assert (held["status"], held["reason"]) == ("False", "Pending")
    assert held["message"] == HELD_MESSAGE
    assert pt.suspended("train-b")
    assert not pt.pods("train-b")  # the operator makes no pod of a suspended job

    pt.delete("train-a")
    # Kueue admits the Workload first, then its PyTorchJob reconciler unsuspends the job.
    k.wait("train-b unsuspended", lambda: not pt.suspended("train-b"), 90)
    assert is_true(pt.workload("train-b"), "Admitted")
    k.wait("train-b's three pods Running", lambda: len(pt.running("train-b")) == 3, 90)
