"""sandbox/trainer.py without a cluster: when the sandbox runs Kubeflow Trainer's manager beside
Kueue (the stack's Kueue runs its trainjob and jobset integrations), the Configuration it is
given there, its webhooks dialled at it under the release's names, and the CRDs it applies
without their descriptions."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import Integrations, StackConfig
from sandbox import jobset, kuberay, lws, trainer
from sandbox import shape as fake_cluster
from sandbox.topology import Cluster
from tests.conftest import ROOT
from tests.unit.sandbox.test_operators import CLUSTER

pytestmark = pytest.mark.unit


def local_with(frameworks: list[str]) -> StackConfig:
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    manager = config.kueue.manager.model_copy(
        update={"integrations": Integrations(frameworks=frameworks)}
    )
    return config.model_copy(update={"kueue": config.kueue.model_copy(update={"manager": manager})})


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
    assert trainer.without_descriptions(schema) == {
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
        assert stripped == trainer.without_descriptions(original)
        assert "description" in source.read_text()
        assert copy.stat().st_size < source.stat().st_size / 5
    names = [json.loads(p.read_text())["metadata"]["name"] for p in written]
    assert names == [f"{plural}.trainer.kubeflow.org" for plural in trainer.CRDS]
