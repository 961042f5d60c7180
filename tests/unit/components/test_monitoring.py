"""kueue.metrics under Pulumi mocks: its objects registered only when turned on, as rendered,
after Kueue is ready; the stack output saying where they are."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_queues import keys
from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import load_config
from gpu_queues.release import metrics
from tests.conftest import MockRun, _test_manifest, run_stack, stack_raw

pytestmark = pytest.mark.unit

KINDS = ("ServiceMonitor", "ServiceAccount", "ClusterRoleBinding", "Secret", "ConfigMap")


def prod_with(metrics_config: dict[str, Any]) -> tuple[Any, MockRun]:
    raw = stack_raw("prod")
    raw[keys.KEY_KUEUE] = {**raw.get(keys.KEY_KUEUE, {}), "metrics": metrics_config}
    config = load_config(raw)
    return config, run_stack(config, _test_manifest())


def ours(run: MockRun, kind: str) -> list[str]:
    return [
        r.inputs["metadata"]["name"]
        for r in run.of_kind(kind)
        if r.inputs.get("metadata", {}).get("name", "").startswith("gpu-queues-kueue")
    ]


def test_nothing_is_registered_and_no_output_when_off(prod_run: MockRun) -> None:
    assert all(ours(prod_run, kind) == [] for kind in KINDS)
    assert keys.OUT_METRICS not in prod_run.outputs


def test_both_on_registers_the_rendered_objects() -> None:
    on = {
        "serviceMonitor": {"enabled": True, "namespace": "monitoring"},
        "dashboard": {"enabled": True},
    }
    config, run = prod_with(on)
    monitor = run.one("ServiceMonitor", metrics.SERVICE_MONITOR)
    assert monitor.typ == "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
    expected = metrics.service_monitor_objects(config.kueue)
    assert monitor.inputs["spec"] == expected[-1]["spec"]
    assert monitor.inputs["metadata"] == expected[-1]["metadata"]
    token = run.one("Secret", metrics.SCRAPER_TOKEN)
    assert token.typ == "kubernetes:core/v1:Secret"
    assert token.inputs["type"] == "kubernetes.io/service-account-token"
    assert (
        run.one("ServiceAccount", metrics.SCRAPER).inputs["metadata"]["namespace"] == "monitoring"
    )
    binding = run.one("ClusterRoleBinding", metrics.SCRAPER)
    assert binding.inputs["roleRef"]["name"] == "kueue-metrics-reader"
    cm = run.one("ConfigMap", metrics.DASHBOARD_CONFIGMAP)
    assert json.loads(cm.inputs["data"][metrics.DASHBOARD_KEY]) == dashboard(config)
    assert cm.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert run.outputs[keys.OUT_METRICS] == {
        "serviceMonitor": "monitoring/gpu-queues-kueue-metrics",
        "dashboard": "kueue-system/gpu-queues-kueue-dashboard",
        "dashboardUid": "gpu-queues-kueue",
    }
    # The rest of the stack is what it was without metrics, object for object.
    _, plain = prod_with({})
    names = {(r.typ, r.name) for r in run.resources}
    assert {(r.typ, r.name) for r in plain.resources} <= names


def test_one_without_the_other() -> None:
    _, run = prod_with({"dashboard": {"enabled": True}})
    assert ours(run, "ConfigMap") == [metrics.DASHBOARD_CONFIGMAP]
    assert ours(run, "ServiceMonitor") == [] and ours(run, "Secret") == []
    assert run.outputs[keys.OUT_METRICS] == {
        "dashboard": "kueue-system/gpu-queues-kueue-dashboard",
        "dashboardUid": "gpu-queues-kueue",
    }
    _, run = prod_with({"serviceMonitor": {"enabled": True}})
    assert ours(run, "ConfigMap") == []
    assert ours(run, "ServiceMonitor") == [metrics.SERVICE_MONITOR]


# --- the validation phase: the release's endpoint, then the cluster -------------------------

# A cluster nothing listens for (port 1 of loopback): every dial is refused at once.
UNREACHABLE = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def pinned_prod(metrics_config: dict[str, Any]) -> dict[str, Any]:
    import hashlib

    from tests.conftest import MANIFEST, ROOT

    raw = stack_raw("prod")
    raw[keys.KEY_KUEUE] = {
        "manifest": {
            "path": str(MANIFEST.relative_to(ROOT)),
            "sha256": hashlib.sha256(MANIFEST.read_bytes()).hexdigest(),
        },
        "metrics": metrics_config,
    }
    return raw


def validate_prod(metrics_config: dict[str, Any]) -> Any:
    from gpu_queues.components.validation import validate
    from tests.conftest import stand_in

    return validate(pinned_prod(metrics_config), releases=stand_in(), kubeconfig=UNREACHABLE)


def test_with_metrics_off_the_validation_never_dials() -> None:
    config, _ = validate_prod({})
    assert not config.kueue.metrics.enabled


def test_nothing_to_ask_nothing_dialled() -> None:
    # The dashboard in Kueue's namespace, which the manifest creates, with Kueue installed by
    # the stack (which sets the resource metrics itself): the cluster has nothing to answer.
    config, _ = validate_prod({"dashboard": {"enabled": True}})
    assert config.kueue.metrics.dashboard.enabled


def test_a_cluster_that_cannot_be_asked_fails_the_validation_by_key() -> None:
    from gpu_queues.config.model import ConfigError

    with pytest.raises(ConfigError) as caught:
        validate_prod({"dashboard": {"enabled": True, "namespace": "grafana"}})
    message = str(caught.value)
    assert "gpu-queues:kueue.metrics: cannot ask the cluster whether it has what" in message
    assert "not-a-real-token" not in message and "Traceback" not in message


def test_a_release_without_the_metrics_endpoint_is_refused_before_any_dial() -> None:
    # The unit tests' stand-in manifest has no metrics Service and no kueue-metrics-reader.
    from gpu_queues.config.model import ConfigError

    with pytest.raises(ConfigError) as caught:
        validate_prod({"serviceMonitor": {"enabled": True}})
    message = str(caught.value)
    assert "gpu-queues:kueue.metrics.serviceMonitor: the Kueue manifest's Service" in message
    assert "cannot ask the cluster" not in message
