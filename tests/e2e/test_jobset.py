"""A JobSet on the sandbox: the real JobSet controller (sandbox/jobset.py) makes its Jobs, the
Kueue the local stack installs admits it through its jobset integration (on in the release's
default Configuration), holds the next with its quota message and admits it once the first is
gone; kwok plays the pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true
from tests.e2e.operated import NS, Kind, Operated, wiped

pytestmark = pytest.mark.e2e

JOBSETS = Kind("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", "jobset.sigs.k8s.io/jobset-name")
# leader 1 pod x 1 GPU + workers 2 pods x 2 GPUs = 5 of the flavor's 8: a second needs 2 more.
HELD_MESSAGE = (
    "couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 2 more needed"
)


def replicated_job(name: str, pods: int, gpus: int) -> dict[str, Any]:
    container = {
        "name": name,
        "image": "nvidia/cuda:12.4.0-base-ubuntu22.04",
        "command": ["sleep", "180"],
        "resources": {
            "requests": {"cpu": "1", "memory": "4Gi"},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    return {
        "name": name,
        "replicas": 1,
        "template": {
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            }
        },
    }


def jobset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "gpu-queue"}},
        "spec": {
            "replicatedJobs": [replicated_job("leader", 1, 1), replicated_job("workers", 2, 2)]
        },
    }


@pytest.fixture
def jobsets(cluster: KubeSession) -> Iterator[Operated]:
    yield from wiped(cluster, JOBSETS)


def test_kueue_admits_a_jobset_and_holds_the_next_with_its_quota_message(
    jobsets: Operated,
) -> None:
    js, k = jobsets, jobsets.k
    js.create(jobset("train-a"))
    wl_a = k.wait(
        "train-a admitted", lambda: (w := js.workload("train-a")) and is_true(w, "Admitted") and w
    )
    assert [ps["name"] for ps in wl_a["spec"]["podSets"]] == ["leader", "workers"]
    assert [ps["count"] for ps in wl_a["spec"]["podSets"]] == [1, 2]
    flavors = [a["flavors"] for a in wl_a["status"]["admission"]["podSetAssignments"]]
    on_the_flavor = {"cpu": "gpu-flavor", "memory": "gpu-flavor", "nvidia.com/gpu": "gpu-flavor"}
    assert flavors == [on_the_flavor] * 2
    # The JobSet controller made its Jobs and their pods; kwok runs them on the GPU node.
    running = k.wait(
        "train-a's three pods Running",
        lambda: (p := js.running("train-a")) and len(p) == 3 and p,
    )
    assert {p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] for p in running} == {
        "leader",
        "workers",
    }
    assert js.get("train-a")["spec"]["suspend"] is False

    js.create(jobset("train-b"))
    held = k.wait("train-b evaluated", lambda: condition(js.workload("train-b"), "QuotaReserved"))
    assert (held["status"], held["reason"]) == ("False", "Pending")
    assert held["message"] == HELD_MESSAGE
    assert js.get("train-b")["spec"]["suspend"] is True
    assert not js.pods("train-b")

    js.delete("train-a")
    k.wait("train-b unsuspended", lambda: js.get("train-b")["spec"]["suspend"] is False, timeout=90)
    assert is_true(js.workload("train-b"), "Admitted")
    k.wait(
        "train-b's three pods Running",
        lambda: len(js.running("train-b")) == 3,
    )
