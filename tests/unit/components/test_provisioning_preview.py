"""The validation phase asks the cluster for the ProvisioningRequest API once a stack has
provisioning checks (gpu_queues.components.provisioning.cluster_problems): a tiny API server
here answers discovery of autoscaling.x-k8s.io/v1 as the real one does (an APIResourceList,
or 404 when the group is not served)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from gpu_queues.components.provisioning import cluster_problems
from gpu_queues.config.model import load_config
from tests.builders import Stack, Team

pytestmark = pytest.mark.unit

DISCOVERY = "/apis/autoscaling.x-k8s.io/v1"
SERVED = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "autoscaling.x-k8s.io/v1",
    "resources": [
        {
            "name": "provisioningrequests",
            "singularName": "provisioningrequest",
            "namespaced": True,
            "kind": "ProvisioningRequest",
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        },
        {
            "name": "provisioningrequests/status",
            "singularName": "",
            "namespaced": True,
            "kind": "ProvisioningRequest",
            "verbs": ["get", "patch", "update"],
        },
    ],
}
RAW = (
    Stack()
    .kueue(install=False)
    .flavor("gpu")
    .team(Team("ml").namespace("team-ml").local_queue("ml-queue").quota("gpu", cpu=1, memory="1Gi"))
    .set(
        "provisioning",
        {
            "checks": [{"name": "autoscale", "provisioningClassName": "check-capacity.x-k8s.io"}],
            "teams": [{"name": "ml", "checks": [{"name": "autoscale"}]}],
        },
    )
    .raw()
)


def serve(answers: dict[str, tuple[int, Any]]) -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            status, body = answers.get(self.path, (404, {"kind": "Status", "code": 404}))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = f"""\
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{server.server_port}"}}}}]
users: [{{name: u, user: {{token: not-a-real-token}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
"""
    try:
        yield kubeconfig, asked
    finally:
        server.shutdown()


@pytest.fixture
def served() -> Iterator[tuple[str, list[str]]]:
    yield from serve({DISCOVERY: (200, SERVED)})


@pytest.fixture
def missing() -> Iterator[tuple[str, list[str]]]:
    yield from serve({})


def test_a_cluster_serving_provisioning_requests_passes(served: Any) -> None:
    kubeconfig, asked = served
    assert cluster_problems(load_config(RAW).provisioning, kubeconfig, None) == []
    assert asked == [DISCOVERY]


def test_a_cluster_without_the_api_is_refused_by_key(missing: Any) -> None:
    kubeconfig, asked = missing
    [problem] = cluster_problems(load_config(RAW).provisioning, kubeconfig, None)
    assert problem.loc == ("provisioning", "checks")
    assert problem.message.startswith(
        "the cluster does not serve ProvisioningRequests (autoscaling.x-k8s.io/v1 has no "
        "provisioningrequests), so Kueue runs no provisioning controller"
    )
    assert asked == [DISCOVERY]


def test_a_group_served_without_provisioning_requests_is_refused() -> None:
    for kubeconfig, _ in serve({DISCOVERY: (200, {**SERVED, "resources": []})}):
        [problem] = cluster_problems(load_config(RAW).provisioning, kubeconfig, None)
        assert "does not serve ProvisioningRequests" in problem.message


def test_without_provisioning_nothing_is_asked(missing: Any) -> None:
    kubeconfig, asked = missing
    raw = {k: v for k, v in RAW.items() if k != "provisioning"}
    assert cluster_problems(load_config(raw).provisioning, kubeconfig, None) == []
    assert asked == []


def test_a_cluster_that_cannot_be_asked_is_named_without_the_token() -> None:
    unreachable = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""
    [problem] = cluster_problems(load_config(RAW).provisioning, unreachable, None)
    assert problem.loc == ("provisioning",)
    assert problem.message.startswith(
        "cannot ask the cluster whether it serves ProvisioningRequests"
    )
    assert "not-a-real-token" not in problem.message


def test_the_validation_phase_asks_before_anything_is_registered(missing: Any) -> None:
    from gpu_queues.components.validation import validate
    from gpu_queues.config.model import ConfigError

    kubeconfig, asked = missing
    with pytest.raises(ConfigError) as caught:
        validate(RAW, kubeconfig=kubeconfig)
    assert "gpu-queues:provisioning.checks: the cluster does not serve ProvisioningRequests" in (
        str(caught.value)
    )
    assert asked == [DISCOVERY]
