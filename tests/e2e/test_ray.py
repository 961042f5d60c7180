"""A RayCluster on the sandbox: the real KubeRay operator (sandbox/kuberay.py) makes its head and
worker pods once the Kueue the local stack installs admits it through its ray.io/raycluster
integration (on in the release's default Configuration: one Workload, a `head` pod set and one
per worker group), holds the next RayCluster suspended with its quota message and admits it once
the first is gone; kwok plays the pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true
from tests.e2e.operated import NS, Kind, Operated, wiped

pytestmark = pytest.mark.e2e

RAY_CLUSTERS = Kind("ray.io", "v1", "rayclusters", "RayCluster", "ray.io/cluster")
# The head takes no GPU; the worker group 2 pods x 3 GPUs = 6 of the flavor's 8: a second
# RayCluster needs 4 more.
HELD_MESSAGE = (
    "couldn't assign flavors to pod set gpus: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 4 more needed"
)


def container(name: str, gpus: int) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": limits},
    }


def ray_cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "gpu-queue"}},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {"num-gpus": "0"},
                "template": {"spec": {"containers": [container("ray-head", 0)]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "gpus",
                    "replicas": 2,
                    "minReplicas": 2,
                    "maxReplicas": 2,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container("ray-worker", 3)]}},
                }
            ],
        },
    }


@pytest.fixture
def clusters(cluster: KubeSession) -> Iterator[Operated]:
    yield from wiped(cluster, RAY_CLUSTERS)


def test_kueue_admits_a_raycluster_kuberay_makes_its_pods_and_the_next_is_held_for_quota(
    clusters: Operated,
) -> None:
    ray, k = clusters, clusters.k
    ray.create(ray_cluster("notebook-a"))
    wl_a = k.wait(
        "notebook-a admitted",
        lambda: (w := ray.workload("notebook-a")) and is_true(w, "Admitted") and w,
    )
    assert [ps["name"] for ps in wl_a["spec"]["podSets"]] == ["head", "gpus"]
    assert [ps["count"] for ps in wl_a["spec"]["podSets"]] == [1, 2]
    flavors = [a["flavors"] for a in wl_a["status"]["admission"]["podSetAssignments"]]
    assert flavors == [
        {"cpu": "gpu-flavor", "memory": "gpu-flavor"},
        {"cpu": "gpu-flavor", "memory": "gpu-flavor", "nvidia.com/gpu": "gpu-flavor"},
    ]
    # KubeRay made the head and the worker pods once Kueue unsuspended the cluster; kwok runs
    # them on the GPU node.
    running = k.wait(
        "notebook-a's three pods Running",
        lambda: (r := ray.running("notebook-a")) and len(r) == 3 and r,
    )
    kinds = sorted(p.metadata.labels["ray.io/node-type"] for p in running)
    assert kinds == ["head", "worker", "worker"]
    assert all(p.spec.node_name for p in running)
    assert ray.get("notebook-a")["spec"]["suspend"] is False

    ray.create(ray_cluster("notebook-b"))
    held = k.wait(
        "notebook-b evaluated", lambda: condition(ray.workload("notebook-b"), "QuotaReserved")
    )
    assert (held["status"], held["reason"]) == ("False", "Pending")
    assert held["message"] == HELD_MESSAGE
    assert ray.get("notebook-b")["spec"]["suspend"] is True
    assert not ray.pods("notebook-b")  # KubeRay makes no pod of a suspended cluster

    ray.delete("notebook-a")
    # Kueue admits the Workload first, then its RayCluster reconciler unsuspends the cluster.
    k.wait("notebook-b unsuspended", lambda: ray.get("notebook-b")["spec"]["suspend"] is False, 90)
    assert is_true(ray.workload("notebook-b"), "Admitted")
    k.wait("notebook-b's three pods Running", lambda: len(ray.running("notebook-b")) == 3, 90)
