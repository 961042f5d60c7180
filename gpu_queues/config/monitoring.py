"""`kueue.metrics`: the ServiceMonitor for Kueue's metrics endpoint and the Grafana dashboard,
as config models (both off by default) and their checks across keys.

What the program builds from them is in gpu_queues/release/metrics.py (the ServiceMonitor and
what lets it scrape) and gpu_queues/config/dashboard.py (the dashboard); what the cluster must
have for them (the ServiceMonitor CRD, the namespaces) is asked of it at preview
(gpu_queues/components/monitoring.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from gpu_queues import keys
from gpu_queues.config.base import Model
from gpu_queues.config.errors import Problem
from gpu_queues.kueue.fieldtypes import LabelName, LabelValue, QualifiedName
from gpu_queues.values import as_dict, as_list

# The Prometheus Operator's Duration (monitoring.coreos.com/v1): units from years to
# milliseconds, largest first, each at most once; "0" alone.
PROMETHEUS_DURATION: Final = re.compile(
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
_UNIT_SECONDS: Final = {
    "y": 365 * 86400.0,
    "w": 7 * 86400.0,
    "d": 86400.0,
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 0.001,
}
# Grafana: a dashboard uid is at most 40 letters, digits, '-' and '_'.
DASHBOARD_UID: Final = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
# The label Grafana's dashboard sidecar (k8s-sidecar) looks for by default in its charts.
SIDECAR_LABELS: Final = {"grafana_dashboard": "1"}
SIDECAR_FOLDER_ANNOTATION: Final = "grafana_folder"


def duration_seconds(text: str) -> float:
    """A Prometheus duration (already matched by PROMETHEUS_DURATION) in seconds."""
    return sum(
        int(n) * _UNIT_SECONDS[unit] for n, unit in re.findall(r"([0-9]+)(ms|y|w|d|h|m|s)", text)
    )


def _check_prometheus_duration(value: str) -> str:
    if not PROMETHEUS_DURATION.fullmatch(value) or duration_seconds(value) <= 0:
        raise PydanticCustomError(
            "prometheus_duration",
            "{value} is not a Prometheus duration above zero (units y, w, d, h, m, s, ms, "
            "largest first, e.g. 30s or 1m30s)",
            {"value": repr(value)},
        )
    return value


def _check_uid(value: str) -> str:
    if not DASHBOARD_UID.fullmatch(value):
        raise PydanticCustomError(
            "dashboard_uid",
            "{value} is not a Grafana dashboard uid (1 to 40 letters, digits, '-' or '_')",
            {"value": repr(value)},
        )
    return value


PrometheusDuration = Annotated[
    str,
    AfterValidator(_check_prometheus_duration),
    WithJsonSchema({"type": "string", "pattern": PROMETHEUS_DURATION.pattern}),
]
DashboardUid = Annotated[
    str,
    AfterValidator(_check_uid),
    WithJsonSchema({"type": "string", "pattern": DASHBOARD_UID.pattern}),
]
OneLine = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]


class ServiceMonitorConfig(Model):
    """A Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1) for Kueue's metrics
    Service. Kueue serves /metrics over HTTPS and lets in only callers allowed `get` on it
    (controller-runtime's authentication and authorization filter, the release's
    kueue-metrics-reader ClusterRole): the stack adds a ServiceAccount bound to that role and a
    token Secret for it, which the ServiceMonitor presents as a bearer token. The preview fails
    when the cluster has no ServiceMonitor CRD."""

    enabled: bool = Field(default=False, description="true: install the ServiceMonitor")
    namespace: LabelName | None = Field(
        default=None,
        description="where the ServiceMonitor and its scraper's ServiceAccount and token live "
        "(a namespace your Prometheus watches; it must exist); default: Kueue's namespace",
    )
    labels: dict[QualifiedName, LabelValue] | None = Field(
        default=None,
        max_length=16,
        description="labels your Prometheus' serviceMonitorSelector picks, e.g. "
        "release: kube-prometheus-stack",
    )
    interval: PrometheusDuration = Field(default="30s", description="how often to scrape")
    scrape_timeout: PrometheusDuration | None = Field(
        default=None, description="at most interval; default: Prometheus' own"
    )

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> ServiceMonitorConfig:
        if self.scrape_timeout is not None and duration_seconds(
            self.scrape_timeout
        ) > duration_seconds(self.interval):
            raise PydanticCustomError(
                "scrape_timeout",
                "scrapeTimeout {timeout} is longer than interval {interval}: Prometheus refuses "
                "a scrape timeout above the scrape interval",
                {"timeout": self.scrape_timeout, "interval": self.interval},
            )
        return self


class DashboardConfig(Model):
    """A Grafana dashboard of the stack's queues, as JSON in a ConfigMap for Grafana's dashboard
    sidecar: per team, GPUs in use against nominal quota, pending workloads, admission wait
    percentiles, borrowed and lent GPUs, evictions. Its panels read the ClusterQueue resource
    metrics, so the program sets Kueue's `metrics.enableClusterQueueResources`; with
    kueue.install false, the preview checks that the installed Kueue sets it."""

    enabled: bool = Field(default=False, description="true: install the dashboard ConfigMap")
    namespace: LabelName | None = Field(
        default=None,
        description="where the ConfigMap goes (one the sidecar watches; it must exist); "
        "default: Kueue's namespace",
    )
    labels: dict[QualifiedName, LabelValue] = Field(
        default_factory=lambda: dict(SIDECAR_LABELS),
        min_length=1,
        max_length=16,
        description="the labels the sidecar looks for (its `label` and `labelValue`); given, "
        "they replace the default",
    )
    folder: OneLine | None = Field(
        default=None, description="the Grafana folder, written in folderAnnotation"
    )
    folder_annotation: QualifiedName = Field(
        default=SIDECAR_FOLDER_ANNOTATION,
        description="the annotation the sidecar reads the folder from (its folderAnnotation)",
    )
    title: OneLine = Field(default="GPU queues (Kueue)", description="the dashboard's title")
    uid: DashboardUid = Field(
        default="gpu-queues-kueue",
        description="the dashboard's uid in Grafana (links and the sidecar's updates keep to it)",
    )


class MetricsConfig(Model):
    service_monitor: ServiceMonitorConfig = Field(default_factory=ServiceMonitorConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)

    @property
    def enabled(self) -> bool:
        return self.service_monitor.enabled or self.dashboard.enabled


def metrics_problems(raw: Mapping[str, Any]) -> list[Problem]:
    """Across keys: a dashboard needs teams to show."""
    metrics = as_dict(as_dict(raw.get(keys.KEY_KUEUE)).get("metrics"))
    dashboard = as_dict(metrics.get("dashboard"))
    if dashboard.get("enabled") is True and not as_list(raw.get(keys.KEY_TEAMS)):
        return [
            Problem(
                (keys.KEY_KUEUE, "metrics", "dashboard", "enabled"),
                "the stack declares no teams, so the dashboard would have no panels: declare "
                "teams or leave the dashboard off",
            )
        ]
    return []
