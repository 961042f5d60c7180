"""sandbox/kuberay.py without a cluster: when the sandbox runs KubeRay's operator beside Kueue
(the stack's Kueue runs either Ray integration) and how it is started there (the cluster's
address only, no metrics, no leader election, a port of its own); and how the sandbox's replay
takes a RayCluster (its pods and Workload by its owner references, its end its deletion)."""

from __future__ import annotations

import pytest

from gpu_queues.whatif.mix import DELETED_WHEN_DONE
from sandbox import jobset, kuberay, lws
from sandbox import shape as fake_cluster
from sandbox.replay.owners import COLLECTIONS, pod_key, workload_owner
from tests.conftest import ROOT
from tests.unit.sandbox.test_operators import CLUSTER, local_with

pytestmark = pytest.mark.unit


def test_the_local_stack_runs_kuberay_as_the_release_default_enables_both_ray_integrations() -> (
    None
):
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert kuberay.wanted(config)


@pytest.mark.parametrize("framework", ["ray.io/raycluster", "ray.io/rayjob"])
def test_either_ray_integration_alone_runs_kuberay(framework: str) -> None:
    assert kuberay.wanted(local_with(["batch/job", framework]))


def test_a_stack_without_a_ray_integration_runs_no_kuberay() -> None:
    # RayService is no Kueue integration of its own: listing the others is no reason to run it.
    assert not kuberay.wanted(local_with(["batch/job", jobset.FRAMEWORK, lws.FRAMEWORK]))


def test_a_multikueue_manager_listing_no_integrations_runs_no_kuberay_but_a_worker_does() -> None:
    manager = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-manager.yaml")
    worker = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-worker-a.yaml")
    assert not kuberay.wanted(manager)  # batch/job only (effective_kueue)
    assert kuberay.wanted(worker)


def test_the_operator_binds_the_cluster_address_only_with_no_metrics_nor_leader_election() -> None:
    binary, *flags = kuberay.argv(CLUSTER)
    assert binary.endswith("/kuberay")
    assert flags == [
        f"--kubeconfig={CLUSTER.kubeconfig}",
        "--health-probe-bind-address=127.0.0.2:8183",
        "--metrics-addr=0",  # controller-runtime's "off"
        "--enable-leader-election=false",
    ]


def test_kuberay_s_probe_port_is_its_own() -> None:
    taken = {9443, 8081, 8082, jobset.WEBHOOK_PORT, jobset.HEALTH_PORT}  # Kueue's, JobSet's
    taken |= {lws.WEBHOOK_PORT, lws.HEALTH_PORT}
    assert kuberay.HEALTH_PORT not in taken


def test_a_rayclusters_pods_and_workload_are_its_own_through_kuberays_owner_references() -> None:
    cluster = {"kind": "RayCluster", "uid": "rc-uid", "controller": True}
    head = {"metadata": {"uid": "p1", "labels": {"ray.io/node-type": "head"}}}
    head["metadata"]["ownerReferences"] = [cluster]
    worker = {"metadata": {"uid": "p2", "ownerReferences": [cluster]}}
    assert [pod_key(p) for p in (head, worker)] == ["rc-uid", "rc-uid"]
    wl = {"metadata": {"ownerReferences": [cluster]}}
    assert workload_owner(wl) == cluster
    # The replay creates it where KubeRay's CRD serves it, and deletes it when its time is up.
    assert COLLECTIONS["RayCluster"] == ("/apis/ray.io/v1", "rayclusters")
    assert "RayCluster" in DELETED_WHEN_DONE
