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
