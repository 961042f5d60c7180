"""The readiness probe: dry-run creates until Kueue's webhook answers, bounded, explained."""

from __future__ import annotations

import json
import time

import pulumi
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpu_queues import GpuQueues, GpuQueuesArgs
from gpu_queues.components.readiness import (
    REACH_TIMEOUT,
    KueueNotReady,
    api_unreachable,
    probe_webhooks,
)
from gpu_queues.kueue import client as kubeclient
from tests.conftest import MockRun, mocks_for
from tests.unit.test_library import two_teams

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


# --- a preview against a cluster that does not answer (issue 43, item 3) -----------------------

UNREACHABLE = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: abc}
"""


def test_a_cluster_that_refuses_the_connection_is_said_unreachable_in_seconds():
    started = time.monotonic()
    why = api_unreachable(UNREACHABLE, None)
    assert why is not None and "Connection refused" in why, why
    assert time.monotonic() - started < REACH_TIMEOUT + 1


def test_a_kubeconfig_that_cannot_be_read_is_said_unreachable_with_its_problem():
    why = api_unreachable("apiVersion: v1\nkind: Config\n", None)
    assert why is not None and "context" in why, why


def test_a_cluster_that_answers_is_reachable(monkeypatch):
    asked = []

    class FakeVersionApi:
        def __init__(self, api_client):
            pass

        def get_code(self, **kwargs):
            asked.append(kwargs)

    monkeypatch.setattr(client, "VersionApi", FakeVersionApi)
    monkeypatch.setattr(kubeclient, "api_client", lambda kubeconfig, context: FakeApiClient())
    assert api_unreachable("apiVersion: v1", None) is None
    assert asked == [{"_request_timeout": REACH_TIMEOUT}]


def _preview(reach, preview: bool = True) -> tuple[MockRun, list[tuple[str, str]]]:
    """GpuQueues previewed with `reach`; the warnings it logged, with their resource's type."""
    run, warned = MockRun(), []

    def warn(message, resource=None, **_):
        warned.append((message, type(resource).__name__))

    def program() -> None:
        config = GpuQueuesArgs.from_config(two_teams())
        args = GpuQueuesArgs(config.config, None, lambda *a: "ok", "kubeconfig: x", reach=reach)
        GpuQueues("q", args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pulumi.log, "warn", warn)
        pulumi.runtime.set_mocks(mocks_for(run), project="p", stack="s", preview=preview)
        pulumi.runtime.set_all_config({}, [])
        pulumi.runtime.test(program)()
    return run, warned


def test_a_preview_against_an_unreachable_cluster_warns_naming_why_and_the_kubeconfig():
    asked = []

    def reach(kubeconfig, context):
        asked.append((kubeconfig, context))
        return "ConnectionRefusedError: [Errno 111] Connection refused"

    run, warned = _preview(reach)
    assert asked == [("kubeconfig: x", None)]  # the kubeconfig the readiness check dials
    assert [w for _, w in warned] == ["GpuQueues"]
    message = warned[0][0]
    assert "cannot be reached (ConnectionRefusedError" in message and "kubeconfig=" in message
    assert (
        sum(r.typ == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue" for r in run.resources) == 2
    )


def test_a_reachable_cluster_and_an_update_are_not_warned_about():
    _, warned = _preview(lambda kubeconfig, context: None)
    assert warned == []
    asked = []
    _, warned = _preview(lambda *a: asked.append(a) or "refused", preview=False)
    assert warned == [] and asked == []  # `pulumi up` has the readiness check itself
