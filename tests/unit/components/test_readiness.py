"""The readiness probe: dry-run creates until Kueue's webhook answers, bounded, explained."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpu_queues.components.readiness import KueueNotReady, probe_webhooks
from gpu_queues.kueue import client as kubeclient

pytestmark = pytest.mark.unit

WEBHOOK_DOWN = (
    'Internal error occurred: failed calling webhook "vresourceflavor.kb.io": '
    "connect: connection refused"
)


class FakeApiClient:
    def close(self):
        pass


def fake_cluster(monkeypatch, answers):
    calls = []

    class FakeCustomObjectsApi:
        def __init__(self, api_client):
            pass

        def create_cluster_custom_object(self, group, version, plural, body, **kwargs):
            calls.append((group, version, plural, body, kwargs))
            answer = answers.pop(0) if answers else None
            if isinstance(answer, Exception):
                raise answer
            return body

    monkeypatch.setattr(client, "CustomObjectsApi", FakeCustomObjectsApi)
    monkeypatch.setattr(kubeclient, "api_client", lambda kubeconfig, context: FakeApiClient())
    return calls


def webhook_down() -> ApiException:
    exc = ApiException(status=500, reason="Internal Server Error")
    exc.body = json.dumps({"kind": "Status", "message": WEBHOOK_DOWN})
    return exc


def test_probe_retries_until_the_webhook_serves(monkeypatch):
    calls = fake_cluster(monkeypatch, [webhook_down(), webhook_down(), None])
    report = probe_webhooks("apiVersion: v1\nkind: Config\n", None, timeout=5, interval=0.01)
    assert "serving" in report
    assert len(calls) == 3
    group, version, plural, body, kwargs = calls[0]
    assert (group, version, plural) == ("kueue.x-k8s.io", "v1beta2", "resourceflavors")
    assert body["kind"] == "ResourceFlavor"
    assert kwargs["dry_run"] == "All"


def test_probe_times_out_with_what_the_api_server_said(monkeypatch):
    fake_cluster(monkeypatch, [webhook_down() for _ in range(1000)])
    with pytest.raises(KueueNotReady) as info:
        probe_webhooks(None, "sandbox", timeout=0.05, interval=0.01)
    message = str(info.value)
    assert "did not serve its webhooks within" in message
    assert "HTTP 500 Internal Server Error" in message
    assert WEBHOOK_DOWN in message


def test_conflict_means_admission_already_passed(monkeypatch):
    conflict = ApiException(status=409, reason="Conflict")
    fake_cluster(monkeypatch, [conflict])
    assert "serving" in probe_webhooks(None, None, timeout=1, interval=0.01)
