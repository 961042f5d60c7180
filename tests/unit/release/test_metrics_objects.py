"""The objects kueue.metrics.serviceMonitor and .dashboard add, for a small stack, written out
by hand from what Kueue's release serves (config/default: the metrics Service, port https,
ClusterRole kueue-metrics-reader) and what the Prometheus Operator reads
(monitoring.coreos.com/v1 ServiceMonitor endpoints: authorization, tlsConfig)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import ManagerConfig, load_config
from gpu_queues.release import metrics
from gpu_queues.release.manifest import (
    MANAGER_CONFIG_KEY,
    parse_manifest,
    prepare_manifest,
    render_manager_config,
)
from tests.builders import Stack, gpu_flavor, gpu_team
from tests.conftest import MANIFEST

pytestmark = pytest.mark.unit

MANAGED = {"app.kubernetes.io/managed-by": "gpu-queues"}


def config(metrics_config: dict[str, Any]) -> Any:
    stack = Stack().flavor(gpu_flavor("gpu", 8)).cohort("pool")
    stack.team(gpu_team("ml", {"gpu": {"gpu": 4}}))
    return load_config(stack.kueue(metrics=metrics_config).raw())


def test_the_service_monitor_and_what_lets_it_scrape() -> None:
    sm = {"enabled": True, "namespace": "monitoring", "labels": {"release": "prom"}}
    objects = metrics.service_monitor_objects(
        config({"serviceMonitor": {**sm, "interval": "15s"}}).kueue
    )
    assert objects == [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": "gpu-queues-kueue-metrics-scraper",
                "namespace": "monitoring",
                "labels": MANAGED,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": "gpu-queues-kueue-metrics-scraper-token",
                "namespace": "monitoring",
                "labels": MANAGED,
                "annotations": {
                    "kubernetes.io/service-account.name": "gpu-queues-kueue-metrics-scraper"
                },
            },
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "gpu-queues-kueue-metrics-scraper", "labels": MANAGED},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "kueue-metrics-reader",
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": "gpu-queues-kueue-metrics-scraper",
                    "namespace": "monitoring",
                }
            ],
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {
                "name": "gpu-queues-kueue-metrics",
                "namespace": "monitoring",
                "labels": {"release": "prom", **MANAGED},
            },
            "spec": {
                "namespaceSelector": {"matchNames": ["kueue-system"]},
                "selector": {
                    "matchLabels": {
                        "app.kubernetes.io/component": "metrics-service",
                        "app.kubernetes.io/name": "kueue",
                    }
                },
                "endpoints": [
                    {
                        "port": "https",
                        "scheme": "https",
                        "path": "/metrics",
                        "interval": "15s",
                        "authorization": {
                            "type": "Bearer",
                            "credentials": {
                                "name": "gpu-queues-kueue-metrics-scraper-token",
                                "key": "token",
                            },
                        },
                        "tlsConfig": {"insecureSkipVerify": True},
                    }
                ],
            },
        },
    ]


def test_by_default_everything_goes_in_kueues_namespace_with_a_timeout_when_given() -> None:
    sm = {"enabled": True, "interval": "1m", "scrapeTimeout": "20s"}
    objects = metrics.service_monitor_objects(config({"serviceMonitor": sm}).kueue)
    assert {o["metadata"].get("namespace") for o in objects} == {"kueue-system", None}
    endpoint = objects[-1]["spec"]["endpoints"][0]
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("1m", "20s")
    assert objects[-1]["metadata"]["labels"] == MANAGED


def test_the_dashboard_configmap_is_labelled_and_foldered_for_the_sidecar() -> None:
    board = {"enabled": True, "namespace": "grafana", "folder": "GPU fleet"}
    cfg = config({"dashboard": board})
    cm = metrics.dashboard_configmap(cfg.kueue, {"uid": "u", "panels": []})
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "gpu-queues-kueue-dashboard",
            "namespace": "grafana",
            "labels": {"grafana_dashboard": "1", **MANAGED},
            "annotations": {"grafana_folder": "GPU fleet"},
        },
        "data": {"gpu-queues-kueue.json": '{\n  "panels": [],\n  "uid": "u"\n}\n'},
    }
    assert json.loads(cm["data"]["gpu-queues-kueue.json"]) == {"uid": "u", "panels": []}


def test_no_folder_no_annotation() -> None:
    cm = metrics.dashboard_configmap(config({"dashboard": {"enabled": True}}).kueue, {})
    assert "annotations" not in cm["metadata"]
    assert cm["metadata"]["namespace"] == "kueue-system"


# --- the release's side --------------------------------------------------------------------

METRICS_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {
        "name": "kueue-controller-manager-metrics-service",
        "namespace": "kueue-system",
        "labels": {
            "app.kubernetes.io/component": "metrics-service",
            "app.kubernetes.io/name": "kueue",
            "control-plane": "controller-manager",
        },
    },
    "spec": {
        "ports": [{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": 8443}],
        "selector": {"control-plane": "controller-manager"},
    },
}
READER = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "kueue-metrics-reader"},
    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
}


def test_a_release_shaped_like_v0_18_has_what_the_service_monitor_needs() -> None:
    assert metrics.release_problems([METRICS_SERVICE, READER]) == []


def test_a_manifest_without_the_metrics_endpoint_is_refused_by_key() -> None:
    renamed = copy.deepcopy(METRICS_SERVICE)
    renamed["spec"]["ports"][0]["name"] = "metrics"
    unlabelled = copy.deepcopy(METRICS_SERVICE)
    del unlabelled["metadata"]["labels"]["app.kubernetes.io/component"]
    for objects, words in (
        ([READER], "Service kueue-system/kueue-controller-manager-metrics-service is missing"),
        ([renamed, READER], "has no port named 'https'"),
        ([unlabelled, READER], "lacks the labels"),
        ([METRICS_SERVICE], "no ClusterRole kueue-metrics-reader"),
    ):
        problems = metrics.release_problems(objects)
        assert [str(p).split(":", 2)[1] for p in problems] == ["kueue.metrics.serviceMonitor"]
        assert words in str(problems[0])


def configuration(prepared: Any) -> dict[str, Any]:
    cm = next(o for o in prepared.objects if o["kind"] == "ConfigMap")
    loaded: dict[str, Any] = yaml.safe_load(cm["data"][MANAGER_CONFIG_KEY])
    return loaded


def test_the_dashboard_turns_on_kueues_cluster_queue_resource_metrics() -> None:
    manifest = parse_manifest(MANIFEST.read_bytes(), str(MANIFEST))
    stand_in = load_config({}).kueue.version
    on = config({"dashboard": {"enabled": True}}).kueue.model_copy(update={"version": stand_in})
    off = config({"serviceMonitor": {"enabled": True}}).kueue.model_copy(
        update={"version": stand_in}
    )
    with_board = configuration(prepare_manifest(manifest, on))
    assert with_board["metrics"]["enableClusterQueueResources"] is True
    without = configuration(prepare_manifest(manifest, off))
    assert "enableClusterQueueResources" not in without.get("metrics", {})


def test_the_releases_own_metrics_settings_stay() -> None:
    base = yaml.safe_dump(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "metrics": {"bindAddress": ":8443"},
        }
    )
    rendered = yaml.safe_load(render_manager_config(base, ManagerConfig(), resource_metrics=True))
    assert rendered["metrics"] == {"bindAddress": ":8443", "enableClusterQueueResources": True}
    assert yaml.safe_load(render_manager_config(base, ManagerConfig()))["metrics"] == {
        "bindAddress": ":8443"
    }
