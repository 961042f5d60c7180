"""sandbox/trainer.py without a cluster: when the sandbox runs Kubeflow Trainer's manager beside
Kueue (the stack's Kueue runs its trainjob and jobset integrations), the Configuration it is
given there, its webhooks dialled at it under the release's names, and the CRDs it applies
without their descriptions; and how the sandbox's replay takes a TrainJob (its runtime created
first, its pods by its JobSet's name, its Workload by its owner reference)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.mix import DELETED_WHEN_DONE, Entry, Status
from gpu_queues.whatif.workloads import KubeError, Rest
from sandbox import jobset, kuberay, lws, trainer
from sandbox import shape as fake_cluster
from sandbox.operators import without_descriptions
from sandbox.replay.engine import on_the_sandbox
from sandbox.replay.owners import (
    COLLECTIONS,
    JOBSET_NAME_LABEL,
    JOBSET_UID_LABEL,
    Owners,
    install_runtimes,
)
from sandbox.topology import Cluster
from tests.conftest import ROOT
from tests.unit.sandbox.test_operators import CLUSTER, local_with

pytestmark = pytest.mark.unit


def test_the_local_stack_runs_the_trainer_as_the_release_default_enables_trainjob_and_jobset() -> (
    None
):
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert trainer.wanted(config)


def test_the_trainjob_integration_with_jobset_runs_the_trainer_and_without_it_none() -> None:
    assert trainer.wanted(local_with(["batch/job", jobset.FRAMEWORK, trainer.FRAMEWORK]))
    # No JobSet controller (nor CRD) on the sandbox: a TrainJob's JobSet would never run.
    assert not trainer.wanted(local_with(["batch/job", trainer.FRAMEWORK]))
    assert not trainer.wanted(local_with(["batch/job", jobset.FRAMEWORK, lws.FRAMEWORK]))


def test_a_multikueue_manager_listing_no_integrations_runs_no_trainer_but_a_worker_does() -> None:
    manager = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-manager.yaml")
    worker = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-worker-a.yaml")
    assert not trainer.wanted(manager)  # batch/job only (effective_kueue)
    assert trainer.wanted(worker)


def test_the_manager_binds_the_cluster_address_only_and_manages_no_certs() -> None:
    assert trainer.configuration(CLUSTER) == {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
        "webhook": {"port": 9446, "host": "127.0.0.2"},
        "health": {"healthProbeBindAddress": "127.0.0.2:8184"},
        "metrics": {"bindAddress": "0"},  # controller-runtime's "off"
    }


def test_the_trainers_ports_are_its_own() -> None:
    taken = {9443, 8081, 8082, jobset.WEBHOOK_PORT, jobset.HEALTH_PORT}  # Kueue's, JobSet's
    taken |= {lws.WEBHOOK_PORT, lws.HEALTH_PORT, kuberay.HEALTH_PORT}
    assert not {trainer.WEBHOOK_PORT, trainer.HEALTH_PORT} & taken


def test_its_webhooks_are_dialled_at_the_manager_under_the_release_names(tmp_path: Path) -> None:
    hooks = [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": "x-webhook-configuration"},
            "webhooks": [
                {"name": "h", "clientConfig": {"service": {"name": "s", "path": "/p"}}},
            ],
        }
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    ]
    source = tmp_path / "manifests.yaml"
    source.write_text(yaml.safe_dump_all(hooks))
    written = trainer.webhook_configurations(CLUSTER, b"CA", source)
    assert [w["metadata"]["name"] for w in written] == [
        "defaulter.trainer.kubeflow.org",
        "validator.trainer.kubeflow.org",
    ]
    bundle = base64.b64encode(b"CA").decode()
    for w in written:
        assert w["webhooks"][0]["clientConfig"] == {
            "url": "https://127.0.0.2:9446/p",
            "caBundle": bundle,
        }


def test_descriptions_go_but_a_field_named_description_stays() -> None:
    schema: dict[str, Any] = {
        "description": "prose",
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "a field's prose"},
            "items": {"type": "array", "items": {"type": "string", "description": "more"}},
        },
    }
    assert without_descriptions(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_the_crds_it_applies_are_the_modules_but_their_descriptions(tmp_path: Path) -> None:
    c = Cluster("c", "127.0.0.2", "10.245.0.0/16", tmp_path, "s", tmp_path / "s.yaml")
    written = trainer.crds(c)
    assert [p.parent for p in written] == [tmp_path / "trainer" / "crds"] * 3
    for source, copy in zip(trainer.crd_files(), written, strict=True):
        original = yaml.load(source.read_text(), Loader=yaml.CSafeLoader)
        stripped = json.loads(copy.read_text())
        assert stripped == without_descriptions(original)
        assert "description" in source.read_text()
        assert copy.stat().st_size < source.stat().st_size / 5
    names = [json.loads(p.read_text())["metadata"]["name"] for p in written]
    assert names == [f"{plural}.trainer.kubeflow.org" for plural in trainer.CRDS]


def test_a_trainjobs_pods_and_workload_are_its_own_through_its_jobsets_name() -> None:
    # Its pods are its JobSet's (named after it by the Trainer), its Workload its own.
    owners = Owners()
    made = {"metadata": {"uid": "tj-uid", "name": "tune", "namespace": "ns"}}
    assert owners.made("TrainJob", "ns", "tune", [made]) == "tj-uid"
    labels = {JOBSET_UID_LABEL: "js-uid", JOBSET_NAME_LABEL: "tune"}
    pod = {"metadata": {"uid": "p1", "namespace": "ns", "labels": labels}}
    assert owners.pod(pod) == "tj-uid"
    # A JobSet of the mix's of the same name elsewhere is its own.
    elsewhere = {"metadata": {"uid": "p2", "namespace": "other", "labels": labels}}
    assert owners.pod(elsewhere) == "js-uid"
    wl = {"metadata": {"ownerReferences": [{"kind": "TrainJob", "uid": "tj-uid"}]}}
    assert owners.workload(wl) == "tj-uid"
    # The replay creates it where the Trainer's CRD serves it, and lets it end by itself: its
    # JobSet's Jobs complete, and the Trainer copies that to it, which Kueue reads as finished.
    assert COLLECTIONS["TrainJob"] == ("/apis/trainer.kubeflow.org/v1alpha1", "trainjobs")
    assert "TrainJob" not in DELETED_WHEN_DONE


class Recorded(Rest):
    """A Rest that records what it is asked to create, and refuses one name."""

    def __init__(self, refuse: str = "") -> None:
        self.created: list[tuple[str, str]] = []
        self.refuse = refuse

    def create(self, path: str, body: Mapping[str, Any]) -> Any:
        if body["metadata"]["name"] == self.refuse:
            raise KubeError(422, "spec.mlPolicy: Invalid value")
        self.created.append((path, body["metadata"]["name"]))
        return body


def trainjob_entry(index: int, runtime: dict[str, Any], status: Status = "ok") -> Entry:
    return Entry(
        index=index,
        source=f"mix.yaml#{index + 1}",
        kind="TrainJob",
        name=f"t{index}",
        namespace="ns",
        queue="q",
        status=status,
        runtime=runtime,
    )


def test_the_runtimes_of_the_replayed_trainjobs_are_created_once_each_before_any() -> None:
    cluster_wide = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "torch"}}
    own = {"kind": "TrainingRuntime", "metadata": {"name": "mine", "namespace": "ns"}}
    unused = {"kind": "TrainingRuntime", "metadata": {"name": "unused", "namespace": "ns"}}
    entries = [
        trainjob_entry(0, cluster_wide),
        trainjob_entry(1, own),
        trainjob_entry(2, cluster_wide),
        trainjob_entry(3, unused, status="unsupported"),  # not replayed: its runtime is not made
    ]
    rest = Recorded()
    assert install_runtimes(rest, entries) == []
    assert rest.created == [
        ("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", "torch"),
        ("/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainingruntimes", "mine"),
    ]
    refused = install_runtimes(Recorded(refuse="mine"), entries)
    assert len(refused) == 1
    assert refused[0].startswith("the API server refused the mix's TrainingRuntime mine: ")
    assert "spec.mlPolicy: Invalid value" in refused[0]


def staged_runtime(status: str) -> dict[str, Any]:
    """A runtime shaped as the Trainer's torchtune ones: its trainer step after an initializer."""
    init = {"name": "dataset-initializer", "template": {}}
    node = {"name": "node", "dependsOn": [{"name": "dataset-initializer", "status": status}]}
    return {
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "staged"},
        "spec": {"template": {"spec": {"replicatedJobs": [init, node]}}},
    }


def test_a_trainjob_whose_runtime_waits_for_a_step_to_complete_is_unsupported_on_the_sandbox() -> (
    None
):
    # Seen on the sandbox (6 December 2026): admitted, its initializer's pod running, its node
    # Job never made, "admitted; its pods are not running" where the fast engine ran it 10m.
    staged = on_the_sandbox(trainjob_entry(0, staged_runtime("Complete")))
    assert staged.status == "unsupported"
    assert staged.problem == (
        "its runtime's replicated job node waits for dataset-initializer to complete "
        "(dependsOn), which its kwok pods never do before the replay ends the whole TrainJob; "
        "ENGINE=fast replays it (every step together)"
    )
    # Waiting for a step's pods to be ready is no obstacle: kwok makes them ready at once.
    assert on_the_sandbox(trainjob_entry(0, staged_runtime("Ready"))).status == "ok"
    plain = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "torch"}, "spec": {}}
    assert on_the_sandbox(trainjob_entry(0, plain)).status == "ok"
