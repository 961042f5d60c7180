"""sandbox/lws.py without a cluster: how LeaderWorkerSet's controller's webhooks are reached
(the release's patches applied; when it runs and its Configuration are every operator's:
tests/unit/sandbox/test_operators.py); and how the sandbox's replay takes an LWS (one group
only, its pods by its name, its end its deletion)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.workloads import holds_quota, is_true
from sandbox import lws
from sandbox.replay.engine import on_the_sandbox
from sandbox.replay.owners import ended_by_deletion, pod_key, workload_owner
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


def lws_entry(replicas: int | None) -> Entry:
    spec: dict[str, object] = {"leaderWorkerTemplate": {"size": 2, "workerTemplate": {}}}
    if replicas is not None:
        spec["replicas"] = replicas
    manifest = {"kind": "LeaderWorkerSet", "metadata": {"name": "serve"}, "spec": spec}
    return Entry(0, "mix.yaml#1", "LeaderWorkerSet", "serve", "ns", "q", manifest=manifest)


def test_the_sandbox_replays_an_lws_of_any_groups_but_none() -> None:
    for replicas in (1, None, 2, 3):  # None: the CRD's default, 1
        assert on_the_sandbox(lws_entry(replicas)) == lws_entry(replicas)
    there = on_the_sandbox(lws_entry(0))
    assert (there.status, there.manifest) == ("unsupported", {})
    assert (there.problem or "").startswith("spec.replicas: 0 groups; Kueue makes a Workload")


def test_an_lws_s_pods_are_its_own_by_its_name_in_its_namespace() -> None:
    def pod(uid: str, namespace: str, name: str) -> dict[str, object]:
        labels = {"leaderworkerset.sigs.k8s.io/name": name}
        sts = {"kind": "StatefulSet", "uid": "sts-uid"}
        meta = {"uid": uid, "namespace": namespace, "labels": labels, "ownerReferences": [sts]}
        return {"metadata": meta}

    uids = {("ns", "serve"): "lws-uid"}
    assert pod_key(pod("p1", "ns", "serve"), uids) == "lws-uid"
    # Another namespace's LWS of the name, or one the replay did not make, is not it.
    assert pod_key(pod("p2", "other", "serve"), uids) == "p2"
    assert pod_key(pod("p3", "ns", "serve"), {}) == "p3"
    # Kueue lists the group's pods among its Workload's owners too: the LWS is the owner.
    lws_ref = {"kind": "LeaderWorkerSet", "uid": "lws-uid"}
    refs = [lws_ref, {"kind": "Pod", "uid": "p1"}, {"kind": "Pod", "uid": "p0"}]
    assert workload_owner({"metadata": {"ownerReferences": refs}}) == lws_ref
    assert workload_owner({"metadata": {"ownerReferences": refs[::-1]}}) == lws_ref
    # Once the LWS is deleted the garbage collector drops its reference and keeps the Workload
    # while the pods go: Kueue's labels still name the LWS.
    gone = {
        "labels": {"kueue.x-k8s.io/job-uid": "lws-uid"},
        "annotations": {
            "kueue.x-k8s.io/job-owner-gvk": "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"
        },
        "ownerReferences": refs[1:],
    }
    assert workload_owner({"metadata": gone}) == {"kind": "LeaderWorkerSet", "uid": "lws-uid"}


def test_a_workload_gone_with_the_lws_the_replay_deleted_is_finished() -> None:
    admitted = {
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ]
        }
    }
    ended = ended_by_deletion(admitted)
    assert is_true(ended, "Finished") and not holds_quota(ended)
    assert holds_quota(admitted)  # as the watch last saw it: unchanged
