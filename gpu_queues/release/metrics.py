"""Kueue's metrics endpoint as the release serves it, and the objects that let a Prometheus
Operator scrape it (gpu-queues:kueue.metrics.serviceMonitor), plus the dashboard's ConfigMap.

The release (config/default of the Kueue module) serves /metrics from the controller on port
8443 behind the Service kueue-controller-manager-metrics-service (port `https`), with
controller-runtime's secure serving: TLS with a certificate the controller makes itself (with
Kueue's internal certificate management, the default), and an authentication and
authorization filter that sends each caller's bearer token to the API server (TokenReview,
then SubjectAccessReview for `get` on the non-resource URL /metrics). The release's ClusterRole
kueue-metrics-reader grants exactly that. So the stack adds:
- a ServiceAccount, its long-lived token Secret (filled by the cluster's token controller), and
  a ClusterRoleBinding of kueue-metrics-reader to it;
- a ServiceMonitor that selects the metrics Service in Kueue's namespace and presents that
  token as a bearer token over HTTPS. The certificate is self-signed, so, as the release's
  own ServiceMonitor (config/components/prometheus) does, it skips verification; the token
  only grants reading /metrics.

With a manifest, its metrics Service and reader role are checked to be the ones named here,
so a release that moves them is refused by name before anything is registered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from gpu_queues import keys
from gpu_queues.config.errors import Problem
from gpu_queues.config.model import KueueConfig
from gpu_queues.release.allowlist import find
from gpu_queues.release.catalogue import KUEUE_NAMESPACE, RBAC_GROUP
from gpu_queues.values import as_dict, as_list

METRICS_SERVICE: Final = "kueue-controller-manager-metrics-service"
METRICS_PORT: Final = "https"
METRICS_PATH: Final = "/metrics"
METRICS_READER_ROLE: Final = "kueue-metrics-reader"
# The metrics Service's own labels in the release: what the ServiceMonitor selects it by.
METRICS_SERVICE_LABELS: Final = {
    "app.kubernetes.io/component": "metrics-service",
    "app.kubernetes.io/name": "kueue",
}

MONITORING_GROUP: Final = "monitoring.coreos.com"
SERVICE_MONITOR_API_VERSION: Final = f"{MONITORING_GROUP}/v1"
SERVICE_MONITOR_PLURAL: Final = "servicemonitors"
SERVICE_MONITOR_CRD: Final = f"{SERVICE_MONITOR_PLURAL}.{MONITORING_GROUP}"

SERVICE_MONITOR: Final = "gpu-queues-kueue-metrics"
SCRAPER: Final = "gpu-queues-kueue-metrics-scraper"
SCRAPER_TOKEN: Final = f"{SCRAPER}-token"
TOKEN_KEY: Final = "token"
DASHBOARD_CONFIGMAP: Final = "gpu-queues-kueue-dashboard"
DASHBOARD_KEY: Final = "gpu-queues-kueue.json"

_KEY = (keys.KEY_KUEUE, "metrics", "serviceMonitor")
_MANAGED = {keys.LABEL_MANAGED_BY: keys.PROJECT}


def service_monitor_namespace(config: KueueConfig) -> str:
    return config.metrics.service_monitor.namespace or KUEUE_NAMESPACE


def dashboard_namespace(config: KueueConfig) -> str:
    return config.metrics.dashboard.namespace or KUEUE_NAMESPACE


def release_problems(objects: Sequence[dict[str, Any]]) -> list[Problem]:
    """The release's metrics Service (with its port and labels) and reader role, as the
    ServiceMonitor expects them; a problem at kueue.metrics.serviceMonitor for each missing."""
    problems = []
    service = find(objects, "", "Service", KUEUE_NAMESPACE, METRICS_SERVICE)
    where = f"the Kueue manifest's Service {KUEUE_NAMESPACE}/{METRICS_SERVICE}"
    if service is None:
        problems.append(f"{where} is missing: there is no metrics endpoint to scrape")
    else:
        ports = [as_dict(p).get("name") for p in as_list(as_dict(service.get("spec")).get("ports"))]
        if METRICS_PORT not in ports:
            problems.append(f"{where} has no port named {METRICS_PORT!r} (it has {ports})")
        labels = as_dict(as_dict(service.get("metadata")).get("labels"))
        if any(labels.get(k) != v for k, v in METRICS_SERVICE_LABELS.items()):
            problems.append(
                f"{where} lacks the labels {METRICS_SERVICE_LABELS} the ServiceMonitor selects"
            )
    if find(objects, RBAC_GROUP, "ClusterRole", None, METRICS_READER_ROLE) is None:
        problems.append(
            f"the Kueue manifest has no ClusterRole {METRICS_READER_ROLE}, which grants the "
            "scraper `get` on /metrics"
        )
    return [Problem(_KEY, p) for p in problems]


def service_monitor_objects(config: KueueConfig) -> list[dict[str, Any]]:
    """The scraper's ServiceAccount, token Secret and ClusterRoleBinding, and the
    ServiceMonitor, in the order they depend on each other."""
    sm = config.metrics.service_monitor
    namespace = service_monitor_namespace(config)
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SCRAPER, "namespace": namespace, "labels": dict(_MANAGED)},
    }
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": SCRAPER_TOKEN,
            "namespace": namespace,
            "labels": dict(_MANAGED),
            "annotations": {"kubernetes.io/service-account.name": SCRAPER},
        },
    }
    binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": SCRAPER, "labels": dict(_MANAGED)},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": METRICS_READER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": namespace}],
    }
    endpoint: dict[str, Any] = {
        "port": METRICS_PORT,
        "scheme": "https",
        "path": METRICS_PATH,
        "interval": sm.interval,
        "authorization": {
            "type": "Bearer",
            "credentials": {"name": SCRAPER_TOKEN, "key": TOKEN_KEY},
        },
        "tlsConfig": {"insecureSkipVerify": True},
    }
    if sm.scrape_timeout is not None:
        endpoint["scrapeTimeout"] = sm.scrape_timeout
    monitor = {
        "apiVersion": SERVICE_MONITOR_API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {
            "name": SERVICE_MONITOR,
            "namespace": namespace,
            "labels": {**(sm.labels or {}), **_MANAGED},
        },
        "spec": {
            "namespaceSelector": {"matchNames": [KUEUE_NAMESPACE]},
            "selector": {"matchLabels": dict(METRICS_SERVICE_LABELS)},
            "endpoints": [endpoint],
        },
    }
    return [account, token, binding, monitor]


def dashboard_configmap(config: KueueConfig, dashboard: dict[str, Any]) -> dict[str, Any]:
    """The dashboard's JSON in a ConfigMap labelled (and annotated with its folder) for
    Grafana's dashboard sidecar."""
    settings = config.metrics.dashboard
    metadata: dict[str, Any] = {
        "name": DASHBOARD_CONFIGMAP,
        "namespace": dashboard_namespace(config),
        "labels": {**settings.labels, **_MANAGED},
    }
    if settings.folder is not None:
        metadata["annotations"] = {settings.folder_annotation: settings.folder}
    text = json.dumps(dashboard, indent=2, sort_keys=True) + "\n"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {DASHBOARD_KEY: text},
    }
