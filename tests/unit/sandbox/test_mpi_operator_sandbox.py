"""sandbox/mpi_operator.py without a cluster: when the sandbox runs the mpi-operator beside Kueue
(the stack's Kueue runs kubeflow.org/mpijob, on the primary cluster only: its health port is
every address's) and how it is started there (the cluster's kubeconfig, its Lease in
kube-system, no metrics); its CRD installed without descriptions."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpu_queues.config.model import StackConfig
from gpu_queues.whatif.mix import DELETED_WHEN_DONE
from sandbox import jobset, kuberay, lws, mpi_operator
from sandbox import shape as fake_cluster
from sandbox.procs import restarting
from sandbox.replay.owners import COLLECTIONS, Owners, workload_owner
from sandbox.topology import multikueue
from tests.conftest import ROOT
from tests.unit.sandbox.test_operators import CLUSTER as OTHER
from tests.unit.sandbox.test_operators import local_with

pytestmark = pytest.mark.unit

MPIJOB = mpi_operator.FRAMEWORK
CLUSTER = dataclasses.replace(OTHER, primary=True)


def local() -> StackConfig:
    return fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")


def test_the_local_stack_runs_the_mpi_operator_as_the_release_default_enables_mpijob() -> None:
    config = local()
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert mpi_operator.wanted(config, CLUSTER)


def test_a_stack_without_the_mpijob_integration_runs_no_mpi_operator() -> None:
    others = ["batch/job", jobset.FRAMEWORK, lws.FRAMEWORK, *kuberay.FRAMEWORKS]
    assert not mpi_operator.wanted(local_with(others), CLUSTER)
    assert mpi_operator.wanted(local_with(["batch/job", MPIJOB]), CLUSTER)


def test_only_the_primary_cluster_of_a_sandbox_runs_it_its_health_port_being_every_address_s() -> (
    None
):
    manager, worker_a, worker_b = multikueue()
    worker = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-worker-a.yaml")
    # The workers' Kueue runs the integration, but a second operator could not take :8080.
    assert not mpi_operator.wanted(worker, worker_a)
    assert not mpi_operator.wanted(worker, worker_b)
    # The manager is primary, and runs batch/job only (effective_kueue).
    assert not mpi_operator.wanted(fake_cluster.load_stack(manager.shape), manager)


def test_the_operator_takes_the_cluster_s_kubeconfig_and_its_lease_in_kube_system() -> None:
    binary, *flags = mpi_operator.argv(CLUSTER)
    assert binary.endswith("/mpi-operator")
    # No --monitoring-port: its metrics server is off at its default 0.
    assert flags == [f"--kubeConfig={CLUSTER.kubeconfig}", "--lock-namespace=kube-system"]


def test_its_hard_coded_health_port_is_no_other_component_s() -> None:
    taken = {9443, 8081, 8082, jobset.WEBHOOK_PORT, jobset.HEALTH_PORT}  # Kueue's, JobSet's
    taken |= {lws.WEBHOOK_PORT, lws.HEALTH_PORT, kuberay.HEALTH_PORT}
    assert mpi_operator.HEALTH_PORT not in taken


def test_its_crd_is_installed_with_the_same_schema_less_the_descriptions(tmp_path: Path) -> None:
    cluster = dataclasses.replace(CLUSTER, state=tmp_path)
    stripped = json.loads(mpi_operator.stripped_crd(cluster).read_text())
    text = json.dumps(stripped)
    assert '"description"' not in text
    assert stripped["metadata"]["name"] == mpi_operator.CRD
    version = stripped["spec"]["versions"][0]
    assert version["name"] == "v2beta1"
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["mpiReplicaSpecs"]
    assert "suspend" in spec["properties"]["runPolicy"]["properties"]
    # The copy is the cluster's, not the repository's.
    assert mpi_operator.stripped_crd(cluster).is_relative_to(tmp_path)


def mpi_pod(pod_uid: str, namespace: str, job: str, owner: dict[str, object]) -> dict[str, object]:
    labels = {"training.kubeflow.org/operator-name": "mpi-operator"}
    labels["training.kubeflow.org/job-name"] = job
    meta = {"uid": pod_uid, "namespace": namespace, "labels": labels, "ownerReferences": [owner]}
    return {"metadata": meta}


def test_an_mpijob_s_launcher_and_workers_are_its_own_by_the_name_the_operator_labels_them() -> (
    None
):
    owners = Owners()
    made = {"metadata": {"uid": "mj-uid", "name": "allreduce", "namespace": "ns"}}
    assert owners.made("MPIJob", "ns", "allreduce", [made]) == "mj-uid"
    mpijob = {"kind": "MPIJob", "uid": "mj-uid", "controller": True}
    launcher_job = {"kind": "Job", "uid": "launcher-job-uid", "controller": True}
    launcher = mpi_pod("p0", "ns", "allreduce", launcher_job)
    workers = [mpi_pod(f"p{i}", "ns", "allreduce", mpijob) for i in (1, 2)]
    assert [owners.pod(p) for p in (launcher, *workers)] == ["mj-uid"] * 3
    # Another namespace's MPIJob of that name is not the replay's: its launcher is its Job's.
    assert owners.pod(mpi_pod("q0", "other", "allreduce", launcher_job)) == "launcher-job-uid"
    # Kueue's Workload is the MPIJob's (its owner reference).
    assert workload_owner({"metadata": {"ownerReferences": [mpijob]}}) == mpijob
    assert COLLECTIONS["MPIJob"] == ("/apis/kubeflow.org/v2beta1", "mpijobs")
    # It ends by itself when its launcher ends (the replay completes its pods at its duration),
    # so the replay does not delete it.
    assert "MPIJob" not in DELETED_WHEN_DONE


def test_the_operator_is_started_again_each_time_it_exits_as_a_kubelet_would() -> None:
    """v0.8.0 exits when it cannot renew its Lease for 5 s (an API server restart): the sandbox
    runs it in a loop, as a kubelet restarts its pod. The loop is real: a command that exits
    runs again."""
    looped = restarting(["sh", "-c", 'echo ran >> "$0"; exit 3', "COUNT"], delay=0.05)
    assert looped[-4:] == ["sh", "-c", 'echo ran >> "$0"; exit 3', "COUNT"]
    script = "timeout 1 " + shlex.join(looped) + "; cat COUNT"
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(["bash", "-c", script], cwd=d, capture_output=True, text=True)
    assert out.stdout.count("ran") >= 2, out
    assert "exited (3); again in 0.05 s" in out.stderr
