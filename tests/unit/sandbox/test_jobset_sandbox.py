"""sandbox/jobset.py without a cluster: when the sandbox runs JobSet's controller, how its
webhooks are reached (its Configuration is the one every operator has:
tests/unit/sandbox/test_operators.py), and how the replay tells a JobSet's pods (through its
child Jobs) from a Job's."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from gpu_queues.config.model import Integrations
from sandbox import jobset
from sandbox import shape as fake_cluster
from sandbox.replay.owners import pod_key, workload_owner
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
    service:
      name: webhook-service
      namespace: system
      path: /mutate-jobset-x-k8s-io-v1alpha2-jobset
  failurePolicy: Fail
  name: mjobset.kb.io
  sideEffects: None
"""


def test_the_local_stack_runs_jobset_as_the_release_default_enables_it() -> None:
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert jobset.wanted(config)


def test_a_stack_without_the_integration_runs_no_jobset_controller() -> None:
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    manager = config.kueue.manager.model_copy(
        update={"integrations": Integrations(frameworks=["batch/job"])}
    )
    jobs_only = config.model_copy(
        update={"kueue": config.kueue.model_copy(update={"manager": manager})}
    )
    assert not jobset.wanted(jobs_only)


def test_a_multikueue_manager_listing_no_integrations_runs_none_as_the_program_limits_it() -> None:
    manager = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-manager.yaml")
    worker = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-worker-a.yaml")
    assert manager.kueue.manager.integrations is None
    assert not jobset.wanted(manager)  # batch/job only (effective_kueue)
    assert jobset.wanted(worker)  # a worker keeps the release default


def test_webhooks_are_dialled_at_the_manager_s_address_with_the_cluster_ca(
    tmp_path: Path,
) -> None:
    source = tmp_path / "manifests.yaml"
    source.write_text(MANIFESTS)
    (hook_config,) = jobset.webhook_configurations(CLUSTER, b"CA", source)
    assert hook_config["metadata"] == {"name": "jobset-mutating-webhook-configuration"}
    (hook,) = hook_config["webhooks"]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.2:9444/mutate-jobset-x-k8s-io-v1alpha2-jobset",
        "caBundle": base64.b64encode(b"CA").decode(),
    }
    assert hook["failurePolicy"] == "Fail"


def test_a_jobset_s_pods_are_its_own_through_its_child_jobs() -> None:
    job = {"kind": "Job", "uid": "job-uid"}
    of_jobset = {
        "metadata": {
            "uid": "p1",
            "labels": {"jobset.sigs.k8s.io/jobset-uid": "js-uid"},
            "ownerReferences": [job],
        }
    }
    of_job = {"metadata": {"uid": "p2", "ownerReferences": [job]}}
    plain = {"metadata": {"uid": "p3"}}
    assert [pod_key(p) for p in (of_jobset, of_job, plain)] == ["js-uid", "job-uid", "p3"]
    wl = {"metadata": {"ownerReferences": [{"kind": "JobSet", "uid": "js-uid"}]}}
    assert workload_owner(wl) == {"kind": "JobSet", "uid": "js-uid"}
    assert workload_owner({"metadata": {}}) is None
