"""sandbox/training_operator.py without a cluster: when the sandbox runs Kubeflow's
training-operator v1 beside Kueue (the stack's Kueue runs one of its integrations), which CRDs,
schemes and webhooks it gets (those integrations' only, never MPIJob v1's), how it is started
(the cluster's address for probes, ports of its own, no metrics, no leader election, its fixed
certificate folder private to it) and the certificates its rotator keeps; and how the sandbox's
replay takes a Kubeflow v1 job (its pods and Workload by its owner references)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpu_queues.whatif.mix import DELETED_WHEN_DONE
from sandbox import jobset, kuberay, lws, training_operator
from sandbox import shape as fake_cluster
from sandbox.operators import without_descriptions
from sandbox.pod_isolation import POD_ROOT_SCRIPT, pod_root_script
from sandbox.replay.engine import SANDBOX_KINDS
from sandbox.replay.owners import COLLECTIONS, pod_key, workload_owner
from tests.conftest import ROOT
from tests.unit.sandbox.test_operators import CLUSTER, local_with

pytestmark = pytest.mark.unit

MODULE = Path.home() / "go/pkg/mod/github.com/kubeflow/training-operator@v1.9.3/manifests/base"
needs_module = pytest.mark.skipif(not MODULE.is_dir(), reason="the module is not in the cache")


def test_the_local_stack_runs_every_kubeflow_v1_scheme_as_the_release_default_enables_them() -> (
    None
):
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert training_operator.wanted(config)
    schemes = [a for a in training_operator.argv(CLUSTER, config) if "scheme" in a]
    assert schemes == [
        "--enable-scheme=pytorchjob",
        "--enable-scheme=tfjob",
        "--enable-scheme=xgboostjob",
        "--enable-scheme=paddlejob",
        "--enable-scheme=jaxjob",
    ]


def test_a_stack_with_only_mpijobs_or_no_kubeflow_integration_runs_no_training_operator() -> None:
    # kubeflow.org/mpijob is Kueue's for the mpi-operator's v2beta1 MPIJob, not this operator's.
    assert not training_operator.wanted(local_with(["batch/job", "kubeflow.org/mpijob"]))
    assert not training_operator.wanted(local_with(["batch/job", jobset.FRAMEWORK]))


def test_a_stack_with_pytorchjobs_only_gets_their_scheme_alone() -> None:
    config = local_with(["batch/job", "kubeflow.org/pytorchjob"])
    assert training_operator.wanted(config)
    assert [a for a in training_operator.argv(CLUSTER, config) if "scheme" in a] == [
        "--enable-scheme=pytorchjob"
    ]


def test_the_operator_binds_its_probes_to_the_cluster_address_with_no_metrics_nor_election() -> (
    None
):
    binary, *flags = training_operator.argv(CLUSTER, local_with(["kubeflow.org/tfjob"]))
    assert binary.endswith("/training-operator")
    assert flags == [
        f"--kubeconfig={CLUSTER.kubeconfig}",
        "--health-probe-bind-address=127.0.0.2:8186",
        "--metrics-bind-address=0",  # controller-runtime's "off"
        "--leader-elect=false",
        "--webhook-server-port=9447",
        "--enable-scheme=tfjob",
    ]  # and no --gang-scheduler-name: no Volcano nor scheduler-plugins


def test_its_ports_are_its_own() -> None:
    taken = {9443, 8081, 8082, jobset.WEBHOOK_PORT, jobset.HEALTH_PORT}  # Kueue's, JobSet's
    taken |= {lws.WEBHOOK_PORT, lws.HEALTH_PORT, kuberay.HEALTH_PORT}
    assert not {training_operator.WEBHOOK_PORT, training_operator.HEALTH_PORT} & taken


def test_its_fixed_certificate_folder_is_the_cluster_s_own_in_a_private_root(
    tmp_path: Path,
) -> None:
    """The operator gets the private root Kueue's pod gets, with the cluster's folder at the
    fixed path; the rule that builds it makes nothing on the machine
    (tests/unit/sandbox/test_kueue_pod.py). A `mkdir -p` of the fixed path in a private mount
    namespace made it on the machine, which a sandbox test on a fresh machine caught."""
    work, certs = tmp_path / "op", tmp_path / "certs"
    command = training_operator.in_private_tmp(certs, work, ["/bin/op", "--flag"])
    script = work / POD_ROOT_SCRIPT
    assert command == ["unshare", "--mount", "--propagation", "private", "sh", str(script)]
    root = work / "root"
    assert root.is_dir()  # the tmpfs's mount point
    assert script.read_text() == pod_root_script(
        root, [(certs, training_operator.CERT_DIR)], ROOT, ["/bin/op", "--flag"]
    )
    assert f"mount --bind {certs} {root}/tmp/k8s-webhook-server/serving-certs" in (
        script.read_text().splitlines()
    )


@needs_module
def test_only_the_crds_of_the_stack_s_integrations_are_installed_without_descriptions() -> None:
    config = local_with(["batch/job", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob"])
    (crd,) = training_operator.crds(config, MODULE / "crds")
    assert crd["metadata"]["name"] == "pytorchjobs.kubeflow.org"
    assert "description:" not in str(crd) and "'description'" not in str(crd)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "pytorchReplicaSpecs" in spec["properties"]  # the schema itself stays


def test_a_property_named_description_is_kept_and_only_description_texts_go() -> None:
    schema = {
        "description": "a text",
        "properties": {"description": {"type": "string", "description": "its text"}},
    }
    assert without_descriptions(schema) == {"properties": {"description": {"type": "string"}}}


@needs_module
def test_its_webhooks_are_those_of_the_schemes_run_dialled_at_the_cluster_with_its_ca() -> None:
    config = local_with(["kubeflow.org/pytorchjob", "kubeflow.org/jaxjob"])
    doc = training_operator.webhook_configuration(
        CLUSTER, b"CA", config, MODULE / "webhook" / "manifests.yaml"
    )
    assert doc["kind"] == "ValidatingWebhookConfiguration"
    assert doc["metadata"] == {"name": "validator.training-operator.kubeflow.org"}  # the rotator's
    assert [h["clientConfig"] for h in doc["webhooks"]] == [
        {"url": "https://127.0.0.2:9447/validate-kubeflow-org-v1-jaxjob", "caBundle": "Q0E="},
        {"url": "https://127.0.0.2:9447/validate-kubeflow-org-v1-pytorchjob", "caBundle": "Q0E="},
    ]
    assert {h["failurePolicy"] for h in doc["webhooks"]} == {"Fail"}  # as the release has them


def _verify(certs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["openssl", "verify", "-CAfile", str(certs / "ca.crt"), *args, str(certs / "tls.crt")]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def test_the_rotator_s_secret_holds_a_pkcs1_ca_for_its_name_and_a_cert_for_service_and_address(
    tmp_path: Path,
) -> None:
    certs = training_operator.certificates(CLUSTER, tmp_path)
    assert (certs / "ca.key").read_text().startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert _verify(certs, "-verify_hostname", "training-operator.kubeflow.svc").returncode == 0
    assert _verify(certs, "-verify_ip", "127.0.0.2").returncode == 0
    assert _verify(certs, "-verify_ip", "127.0.0.3").returncode != 0  # can fail
    ca = ["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", str(certs / "ca.crt")]
    assert "DNS:training-operator-ca" in subprocess.run(ca, capture_output=True, text=True).stdout
    secret = training_operator.secret(certs)
    assert secret["metadata"] == {"name": "training-operator-webhook-cert", "namespace": "kubeflow"}
    assert sorted(secret["data"]) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"])
def test_a_kubeflow_v1_job_s_pods_and_workload_are_its_own_through_the_owner_references(
    kind: str,
) -> None:
    job = {"kind": kind, "uid": "job-uid", "controller": True}
    master = {"metadata": {"uid": "p1", "ownerReferences": [job]}}
    worker = {"metadata": {"uid": "p2", "ownerReferences": [job]}}
    assert [pod_key(p) for p in (master, worker)] == ["job-uid", "job-uid"]
    assert workload_owner({"metadata": {"ownerReferences": [job]}}) == job
    # The replay creates it where the operator's CRD serves it, and replays it on the sandbox;
    # its end is its pods' (the operator then marks it Succeeded), not a deletion.
    assert COLLECTIONS[kind][0] == "/apis/kubeflow.org/v1"
    assert COLLECTIONS[kind][1] == training_operator.KINDS[f"kubeflow.org/{kind.lower()}"]
    assert kind in SANDBOX_KINDS
    assert kind not in DELETED_WHEN_DONE
