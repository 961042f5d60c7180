"""sandbox/lws.py without a cluster: when the sandbox runs LeaderWorkerSet's controller, how its
webhooks are reached (the release's patches applied) and how it is configured."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from gpu_queues.config.model import Integrations
from sandbox import jobset, lws
from sandbox import shape as fake_cluster
from sandbox.topology import Cluster
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

CLUSTER = Cluster("c", "127.0.0.2", "10.245.0.0/16", Path("/x"), "s", Path("/x/s.yaml"))

MANIFESTS = """---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-lws}
  failurePolicy: Fail
  name: mleaderworkerset.kb.io
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  failurePolicy: Fail
  name: mpod.kb.io
  sideEffects: None
"""
PATCH = """- op: replace
  path: /webhooks/1
  value:
    admissionReviewVersions: [v1]
    clientConfig:
      service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
    failurePolicy: Fail
    name: mpod.kb.io
    objectSelector:
      matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]
    sideEffects: None
"""


def test_the_local_stack_runs_lws_as_the_release_default_enables_it() -> None:
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert lws.wanted(config)


def test_a_stack_without_the_integration_runs_no_lws_controller() -> None:
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    manager = config.kueue.manager.model_copy(
        update={"integrations": Integrations(frameworks=["batch/job", "jobset.x-k8s.io/jobset"])}
    )
    without = config.model_copy(
        update={"kueue": config.kueue.model_copy(update={"manager": manager})}
    )
    assert not lws.wanted(without)


def test_a_multikueue_manager_listing_no_integrations_runs_none_as_the_program_limits_it() -> None:
    manager = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-manager.yaml")
    assert not lws.wanted(manager)  # batch/job only (effective_kueue)


def test_webhooks_are_dialled_at_the_manager_s_address_with_the_release_s_patches(
    tmp_path: Path,
) -> None:
    source = tmp_path / "manifests.yaml"
    source.write_text(MANIFESTS)
    (tmp_path / "mutating-patch.yaml").write_text(PATCH)
    (hook_config,) = lws.webhook_configurations(CLUSTER, b"CA", source)
    assert hook_config["metadata"] == {"name": "lws-mutating-webhook-configuration"}
    on_lws, on_pods = hook_config["webhooks"]
    assert on_lws["clientConfig"] == {
        "url": "https://127.0.0.2:9445/mutate-lws",
        "caBundle": base64.b64encode(b"CA").decode(),
    }
    assert "objectSelector" not in on_lws
    # Only an LWS's pods go to its pod webhook, which fails closed.
    assert on_pods["clientConfig"]["url"] == "https://127.0.0.2:9445/mutate--v1-pod"
    assert on_pods["objectSelector"] == {
        "matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]
    }
    assert on_pods["failurePolicy"] == "Fail"


def test_a_patch_that_is_not_a_webhook_replacement_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "manifests.yaml"
    source.write_text(MANIFESTS)
    (tmp_path / "mutating-patch.yaml").write_text("- op: remove\n  path: /webhooks/1\n")
    with pytest.raises(ValueError, match="cannot apply remove /webhooks/1"):
        lws.webhook_configurations(CLUSTER, b"CA", source)


def test_the_manager_binds_the_cluster_address_only_and_rotates_no_certs() -> None:
    cfg = lws.configuration(CLUSTER, Path("/certs"))
    assert cfg["apiVersion"] == "config.lws.x-k8s.io/v1alpha1"
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["webhook"] == {"port": 9445, "host": "127.0.0.2", "certDir": "/certs"}
    assert cfg["health"] == {"healthProbeBindAddress": "127.0.0.2:8182"}
    assert cfg["metrics"] == {"bindAddress": "0"}  # off


def test_jobset_and_lws_listen_on_ports_of_their_own() -> None:
    taken = {9443, 8081, jobset.WEBHOOK_PORT, jobset.HEALTH_PORT}  # Kueue's, JobSet's
    assert not {lws.WEBHOOK_PORT, lws.HEALTH_PORT} & taken
