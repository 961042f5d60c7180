"""A JobSet on the sandbox: the real JobSet controller (sandbox/jobset.py) makes its Jobs, the
Kueue the local stack installs admits it through its jobset integration (on in the release's
default Configuration), holds the next with its quota message and admits it once the first is
gone; kwok plays the pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true

pytestmark = pytest.mark.e2e

JOBSET = ("jobset.x-k8s.io", "v1alpha2")
NS = "default"
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


class JobSets:
    def __init__(self, k: KubeSession) -> None:
        self.k = k

    def create(self, name: str) -> None:
        self.k.custom.create_namespaced_custom_object(*JOBSET, NS, "jobsets", jobset(name))

    def get(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.k.custom.get_namespaced_custom_object(
            *JOBSET, NS, "jobsets", name
        )
        return got

    def delete(self, name: str) -> None:
        self.k.custom.delete_namespaced_custom_object(
            *JOBSET, NS, "jobsets", name, propagation_policy="Background"
        )

    def names(self) -> list[str]:
        items = self.k.custom.list_namespaced_custom_object(*JOBSET, NS, "jobsets")["items"]
        return [str(j["metadata"]["name"]) for j in items]

    def workload(self, name: str) -> dict[str, Any] | None:
        for wl in self.k.workloads(NS):
            if any(
                o["kind"] == "JobSet" and o["name"] == name
                for o in wl["metadata"].get("ownerReferences", [])
            ):
                return wl
        return None

    def workloads(self) -> list[dict[str, Any]]:
        return [
            wl
            for wl in self.k.workloads(NS)
            if any(o["kind"] == "JobSet" for o in wl["metadata"].get("ownerReferences", []))
        ]

    def all_pods(self) -> list[Any]:
        items: list[Any] = self.k.core.list_namespaced_pod(
            NS, label_selector="jobset.sigs.k8s.io/jobset-name"
        ).items
        return items

    def pods(self, name: str) -> list[Any]:
        items: list[Any] = self.k.core.list_namespaced_pod(
            NS, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}"
        ).items
        return items


@pytest.fixture
def jobsets(cluster: KubeSession) -> Iterator[JobSets]:
    js = JobSets(cluster)

    def wipe() -> None:
        for name in js.names():
            js.delete(name)
        # Only what JobSets left: other modules' Jobs and pods in default are theirs to clean.
        cluster.wait(
            "no jobsets, nor their workloads or pods, in default",
            lambda: not (js.names() or js.workloads() or js.all_pods()),
        )

    wipe()
    yield js
    wipe()


def test_kueue_admits_a_jobset_and_holds_the_next_with_its_quota_message(
    jobsets: JobSets,
) -> None:
    js, k = jobsets, jobsets.k
    js.create("train-a")
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
        lambda: (
            (p := [p for p in js.pods("train-a") if p.status.phase == "Running"])
            and len(p) == 3
            and p
        ),
    )
    assert {p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] for p in running} == {
        "leader",
        "workers",
    }
    assert js.get("train-a")["spec"]["suspend"] is False

    js.create("train-b")
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
        lambda: len([p for p in js.pods("train-b") if p.status.phase == "Running"]) == 3,
    )
