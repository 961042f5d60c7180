"""kueue.metrics in the stack config: off by default, every value checked, each refusal naming
its key (docs/config-reference.md, ServiceMonitorConfig and DashboardConfig)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.config.model import ConfigError, load_config
from tests.builders import Stack, gpu_flavor, gpu_team
from tests.conftest import stack_raw

pytestmark = pytest.mark.unit


def small(metrics: dict[str, Any] | None = None, teams: bool = True) -> dict[str, Any]:
    stack = Stack().flavor(gpu_flavor("gpu", 8)).cohort("pool")
    if teams:
        stack.team(gpu_team("ml", {"gpu": {"gpu": 4}}))
    if metrics is not None:
        stack.kueue(metrics=metrics)
    return stack.raw()


def refusal(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    return str(caught.value)


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "local"])
def test_the_committed_stacks_leave_metrics_off(stack: str) -> None:
    metrics = load_config(stack_raw(stack)).kueue.metrics
    assert not metrics.service_monitor.enabled and not metrics.dashboard.enabled
    assert not metrics.enabled


def test_defaults_when_turned_on() -> None:
    config = load_config(
        small({"serviceMonitor": {"enabled": True}, "dashboard": {"enabled": True}})
    )
    sm, board = config.kueue.metrics.service_monitor, config.kueue.metrics.dashboard
    assert (sm.namespace, sm.labels, sm.interval, sm.scrape_timeout) == (None, None, "30s", None)
    # The Grafana chart's dashboard sidecar looks for this label by default.
    assert board.labels == {"grafana_dashboard": "1"}
    assert (board.folder, board.folder_annotation) == (None, "grafana_folder")
    assert (board.uid, board.title) == ("gpu-queues-kueue", "GPU queues (Kueue)")


def test_given_labels_replace_the_sidecar_default() -> None:
    config = load_config(small({"dashboard": {"enabled": True, "labels": {"dashboards": "gpu"}}}))
    assert config.kueue.metrics.dashboard.labels == {"dashboards": "gpu"}


@pytest.mark.parametrize("interval", ["15s", "1m", "1m30s", "2h", "500ms", "1d"])
def test_prometheus_durations_are_accepted(interval: str) -> None:
    config = load_config(small({"serviceMonitor": {"enabled": True, "interval": interval}}))
    assert config.kueue.metrics.service_monitor.interval == interval


@pytest.mark.parametrize(
    ("metrics", "key", "words"),
    [
        # Prometheus Operator durations: no fractions, no spaces, largest unit first, above 0.
        (
            {"serviceMonitor": {"interval": "1.5m"}},
            "serviceMonitor.interval",
            "Prometheus duration",
        ),
        (
            {"serviceMonitor": {"interval": "30 s"}},
            "serviceMonitor.interval",
            "Prometheus duration",
        ),
        ({"serviceMonitor": {"interval": "30s1m"}}, "serviceMonitor.interval", "largest first"),
        ({"serviceMonitor": {"interval": "0"}}, "serviceMonitor.interval", "above zero"),
        (
            {"serviceMonitor": {"interval": "10s", "scrapeTimeout": "15s"}},
            "serviceMonitor",
            "scrapeTimeout 15s is longer than interval 10s",
        ),
        ({"serviceMonitor": {"namespace": "Monitoring"}}, "serviceMonitor.namespace", ""),
        (
            {"serviceMonitor": {"labels": {"release": "a b"}}},
            "serviceMonitor.labels.release",
            "label value",
        ),
        ({"serviceMonitor": {"enabled": "yes please"}}, "serviceMonitor.enabled", "boolean"),
        ({"serviceMonitor": {"port": "https"}}, "serviceMonitor.port", ""),
        ({"dashbord": {"enabled": True}}, "dashbord", ""),
        ({"dashboard": {"labels": {}}}, "dashboard.labels", "at least 1"),
        ({"dashboard": {"uid": "x" * 41}}, "dashboard.uid", "Grafana dashboard uid"),
        ({"dashboard": {"uid": "my board"}}, "dashboard.uid", "Grafana dashboard uid"),
        # a final line break: `$` matches before one, so the checks match the whole value
        ({"serviceMonitor": {"interval": "30s\n"}}, "serviceMonitor.interval", "Prometheus"),
        ({"dashboard": {"uid": "gpu\n"}}, "dashboard.uid", "Grafana dashboard uid"),
        ({"dashboard": {"folder": "GPU\nqueues"}}, "dashboard.folder", ""),
        (
            {"dashboard": {"folderAnnotation": "not an annotation!"}},
            "dashboard.folderAnnotation",
            "",
        ),
    ],
)
def test_bad_values_are_refused_by_key(metrics: dict[str, Any], key: str, words: str) -> None:
    message = refusal(small(metrics))
    assert f"gpu-queues:kueue.metrics.{key}:" in message
    assert words in message


def test_a_dashboard_needs_teams() -> None:
    message = refusal(small({"dashboard": {"enabled": True}}, teams=False))
    assert "gpu-queues:kueue.metrics.dashboard.enabled: the stack declares no teams" in message


def test_a_service_monitor_without_teams_is_fine() -> None:
    assert load_config(
        small({"serviceMonitor": {"enabled": True}}, teams=False)
    ).kueue.metrics.enabled


def test_the_documented_example_stack_is_valid() -> None:
    from gpu_queues.config.schema import EXAMPLES
    from gpu_queues.config.stackfile import parse_config

    (_, _, path), *_ = EXAMPLES
    config = load_config(parse_config(path.read_text(), path.name))
    sm, board = config.kueue.metrics.service_monitor, config.kueue.metrics.dashboard
    assert (sm.enabled, sm.namespace, sm.labels, sm.scrape_timeout) == (
        True,
        "monitoring",
        {"release": "prom"},
        "10s",
    )
    assert (board.enabled, board.folder) == (True, "GPU fleet")
    # The reference shows it whole.
    from gpu_queues.config.schema import REFERENCE_PATH

    assert path.read_text().rstrip("\n") in REFERENCE_PATH.read_text()
