"""sandbox/jobset.py without a cluster: how JobSet's controller's webhooks are reached (when it
runs and its Configuration are every operator's: tests/unit/sandbox/test_operators.py), and how
the replay tells a JobSet's pods (through its child Jobs) from a Job's."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from sandbox import jobset
from sandbox.replay.owners import pod_key, workload_owner
from tests.unit.sandbox.test_operators import CLUSTER

pytestmark = pytest.mark.unit

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
