"""An MPIJob on the sandbox: the real mpi-operator (sandbox/mpi_operator.py) makes its launcher
Job and worker pods once the Kueue the local stack installs admits it through its
kubeflow.org/mpijob integration (on in the release's default Configuration: one Workload, a
`launcher` and a `worker` pod set), holds the next MPIJob suspended with its quota message and
admits it once the first is gone; kwok plays the pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true
from tests.e2e.operated import NS, Kind, Operated, wiped

pytestmark = pytest.mark.e2e

# The mpi-operator's labels on the launcher's and the workers' pods.
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
ROLE_LABEL = "training.kubeflow.org/job-role"
MPIJOBS = Kind("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", JOB_NAME_LABEL)
# The launcher takes no GPU; the workers 2 pods x 3 GPUs = 6 of the flavor's 8: a second MPIJob
# needs 4 more.
HELD_MESSAGE = (
    "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 4 more needed"
)


def replica(replicas: int, gpus: int) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    container = {
        "name": "mpi",
        "image": "mpioperator/openmpi:v0.8.0",
        "command": ["mpirun", "-np", "2", "/train"],
        "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": limits},
    }
    return {"replicas": replicas, "template": {"spec": {"containers": [container]}}}


def mpi_job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "gpu-queue"}},
        "spec": {
            "slotsPerWorker": 3,
            "mpiReplicaSpecs": {"Launcher": replica(1, 0), "Worker": replica(2, 3)},
        },
    }


@pytest.fixture
def jobs(cluster: KubeSession) -> Iterator[Operated]:
    yield from wiped(cluster, MPIJOBS)


def test_kueue_admits_an_mpijob_the_operator_makes_its_pods_and_the_next_is_held_for_quota(
    jobs: Operated,
) -> None:
    mpi, k = jobs, jobs.k
    mpi.create(mpi_job("allreduce-a"))
    wl_a = k.wait(
        "allreduce-a admitted",
        lambda: (w := mpi.workload("allreduce-a")) and is_true(w, "Admitted") and w,
    )
    assert [ps["name"] for ps in wl_a["spec"]["podSets"]] == ["launcher", "worker"]
    assert [ps["count"] for ps in wl_a["spec"]["podSets"]] == [1, 2]
    flavors = [a["flavors"] for a in wl_a["status"]["admission"]["podSetAssignments"]]
    assert flavors == [
        {"cpu": "gpu-flavor", "memory": "gpu-flavor"},
        {"cpu": "gpu-flavor", "memory": "gpu-flavor", "nvidia.com/gpu": "gpu-flavor"},
    ]
    # The mpi-operator made the launcher (through its Job) and the workers once Kueue
    # unsuspended the MPIJob; kwok runs them on the GPU node.
    running = k.wait(
        "allreduce-a's three pods Running",
        lambda: (r := mpi.running("allreduce-a")) and len(r) == 3 and r,
    )
    roles = sorted(p.metadata.labels[ROLE_LABEL] for p in running)
    assert roles == ["launcher", "worker", "worker"]
    launcher = next(p for p in running if p.metadata.labels[ROLE_LABEL] == "launcher")
    assert [o.kind for o in launcher.metadata.owner_references] == ["Job"]
    assert all(p.spec.node_name for p in running)
    assert not mpi.suspended("allreduce-a")

    mpi.create(mpi_job("allreduce-b"))
    held = k.wait(
        "allreduce-b evaluated", lambda: condition(mpi.workload("allreduce-b"), "QuotaReserved")
    )
    assert (held["status"], held["reason"]) == ("False", "Pending")
    assert held["message"] == HELD_MESSAGE
    assert mpi.suspended("allreduce-b")
    assert not mpi.pods("allreduce-b")  # the mpi-operator makes no pod of a suspended MPIJob

    mpi.delete("allreduce-a")
    # Kueue admits the Workload first, then its MPIJob reconciler unsuspends the job.
    k.wait("allreduce-b unsuspended", lambda: not mpi.suspended("allreduce-b"), 90)
    assert is_true(mpi.workload("allreduce-b"), "Admitted")
    k.wait("allreduce-b's three pods Running", lambda: len(mpi.running("allreduce-b")) == 3, 90)
