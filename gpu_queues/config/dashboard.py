"""The stack's Grafana dashboard (gpu-queues:kueue.metrics.dashboard), made from its teams and
flavors: a row per team, whatever the team is called, with

- GPUs in use against nominal quota, per flavor the team has quota of;
- pending workloads (active and inadmissible);
- admission wait percentiles (p50, p90, p99);
- borrowed and lent GPUs, per flavor (teams in a cohort);
- evictions in the last hour, per reason;
- for a team of several LocalQueues, one panel per LocalQueue: its GPUs in use per flavor and
  its pending workloads (with one LocalQueue, the ClusterQueue's panels are the queue's);

then, for a stack with a cohort tree (`gpu-queues:cohorts`), a row of the tree: one panel per
cohort, the GPUs its subtree's workloads reserve against its subtree's nominal quota (its own,
its child cohorts' and its teams'), per flavor.

"GPUs" are the extended resources (nvidia.com/gpu, amd.com/gpu, ...) of the team's resource
groups. Every query comes from gpu_queues/kueue/promql.py; this module only lays them out. The
data source is a dashboard variable (`datasource`, of type prometheus), so one JSON works with
whichever Prometheus the Grafana has.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.config.model import StackConfig, Team
from gpu_queues.config.teams import ResourceGroup
from gpu_queues.kueue import promql
from gpu_queues.kueue.fields import is_extended_resource

# Grafana's dashboard JSON model version this layout is written for (Grafana 10 and later
# read it as it is).
SCHEMA_VERSION: Final = 39
DATASOURCE: Final = {"type": "prometheus", "uid": "${datasource}"}
WIDTH: Final = 24  # the grid's columns
PANEL: Final = (12, 8)  # width, height: two panels side by side


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str


def gpu_quotas(team: Team) -> list[tuple[str, str]]:
    """(flavor, resource) of every GPU quota of the team, in the order its groups give them."""
    return _gpu_pairs(team.resource_groups)


def _gpu_pairs(groups: list[ResourceGroup]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for group in groups:
        for flavor in group.flavors:
            for resource in flavor.resources:
                if is_extended_resource(resource) and (flavor.name, resource) not in pairs:
                    pairs.append((flavor.name, resource))
    return pairs


def _label(flavor: str, resource: str, several: bool) -> str:
    return f"{flavor} {resource}" if several else flavor


def team_panels(team: Team) -> list[tuple[str, str, list[Query]]]:
    """The team's panels: (title, unit, queries), in the order they are shown."""
    cq = team.cluster_queue
    quotas = gpu_quotas(team)
    several = len({r for _, r in quotas}) > 1
    panels: list[tuple[str, str, list[Query]]] = []
    if quotas:
        usage = []
        for flavor, resource in quotas:
            name = _label(flavor, resource, several)
            usage.append(Query(promql.in_use(cq, flavor, resource), f"{name} in use"))
            usage.append(Query(promql.nominal_quota(cq, flavor, resource), f"{name} nominal quota"))
        panels.append(("GPUs in use / nominal quota", "none", usage))
    panels.append(("Pending workloads", "none", [Query(promql.pending(cq), "{{status}}")]))
    waits = [Query(promql.admission_wait(cq, q), f"p{round(q * 100)}") for q in promql.QUANTILES]
    panels.append(("Admission wait", "s", waits))
    if quotas and team.cohort is not None:
        shared = []
        for flavor, resource in quotas:
            name = _label(flavor, resource, several)
            shared.append(Query(promql.borrowed(cq, flavor, resource), f"{name} borrowed"))
            shared.append(
                Query(promql.lent(cq, team.cohort, flavor, resource), f"{name} lent (at most)")
            )
        panels.append((f"Borrowed and lent GPUs (cohort {team.cohort})", "none", shared))
    panels.append(("Evictions (last hour)", "none", [Query(promql.evictions(cq), "{{reason}}")]))
    if len(team.queues) > 1:
        panels += [_local_queue_panel(name, ns, quotas, several) for name, ns in team.queues]
    return panels


def _local_queue_panel(
    name: str, namespace: str, quotas: list[tuple[str, str]], several: bool
) -> tuple[str, str, list[Query]]:
    """One of a team's LocalQueues: its GPUs in use per flavor, its pending workloads."""
    queries = [
        Query(
            promql.local_queue_in_use(namespace, name, flavor, resource),
            f"{_label(flavor, resource, several)} in use",
        )
        for flavor, resource in quotas
    ]
    queries.append(Query(promql.local_queue_pending(namespace, name), "pending {{status}}"))
    return (f"LocalQueue {namespace}/{name}", "none", queries)


def cohort_panels(config: StackConfig) -> list[tuple[str, str, list[Query]]]:
    """A panel per cohort of the tree whose subtree holds GPU quota: what the subtree reserves
    against the subtree's nominal quota, per flavor (Kueue's cohort_subtree gauges)."""
    pairs: dict[str, list[tuple[str, str]]] = {}
    parent: dict[str, str | None] = {}
    for node in config.cohorts or []:
        parent[node.name] = node.parent
        pairs[node.name] = _gpu_pairs(node.resource_groups or [])
    own = [(node.name, pairs[node.name]) for node in config.cohorts or []]
    own += [(team.cohort, gpu_quotas(team)) for team in config.teams if team.cohort in parent]
    for start, found in own:
        seen: set[str] = set()
        at: str | None = start
        while at is not None and at in parent and at not in seen:  # up to the root
            seen.add(at)
            pairs[at] += [p for p in found if p not in pairs[at]]
            at = parent[at]
    panels = []
    for name, quotas in pairs.items():
        several = len({r for _, r in quotas}) > 1
        queries = []
        for flavor, resource in quotas:
            label = _label(flavor, resource, several)
            queries.append(
                Query(promql.cohort_reserved(name, flavor, resource), f"{label} reserved")
            )
            queries.append(
                Query(promql.cohort_quota(name, flavor, resource), f"{label} subtree quota")
            )
        if queries:
            panels.append((f"Cohort {name}: GPUs reserved / subtree quota", "none", queries))
    return panels


def _ids() -> Iterator[int]:
    n = 0
    while True:
        n += 1
        yield n


def _timeseries(
    panel_id: int, title: str, unit: str, queries: list[Query], x: int, y: int
) -> dict[str, Any]:
    refs = [chr(ord("A") + i) for i in range(len(queries))]
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": PANEL[0], "h": PANEL[1]},
        "fieldConfig": {"defaults": {"unit": unit, "min": 0}, "overrides": []},
        "options": {
            "legend": {
                "calcs": [],
                "displayMode": "list",
                "placement": "bottom",
                "showLegend": True,
            },
            "tooltip": {"mode": "multi", "sort": "none"},
        },
        "targets": [
            {"refId": ref, "datasource": DATASOURCE, "expr": q.expr, "legendFormat": q.legend}
            for ref, q in zip(refs, queries, strict=True)
        ],
    }


def dashboard(config: StackConfig) -> dict[str, Any]:
    """The dashboard's JSON model for the stack's teams."""
    settings = config.kueue.metrics.dashboard
    ids = _ids()
    panels: list[dict[str, Any]] = []
    y = 0
    rows = [(f"{t.name}: ClusterQueue {t.cluster_queue}", team_panels(t)) for t in config.teams]
    tree = cohort_panels(config)
    if tree:
        rows.append(("Cohort tree", tree))
    for title, shown in rows:
        panels.append(
            {
                "id": next(ids),
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"x": 0, "y": y, "w": WIDTH, "h": 1},
                "panels": [],
            }
        )
        y += 1
        for i, (name, unit, queries) in enumerate(shown):
            x, row = (i % 2) * PANEL[0], y + (i // 2) * PANEL[1]
            panels.append(_timeseries(next(ids), name, unit, queries, x, row))
        y += -(-len(shown) // 2) * PANEL[1]
    return {
        "uid": settings.uid,
        "title": settings.title,
        "tags": ["gpu-queues", "kueue"],
        "timezone": "browser",
        "editable": False,
        "graphTooltip": 1,
        "refresh": "1m",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "annotations": {"list": []},
        "links": [],
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                    "hide": 0,
                    "refresh": 1,
                    "options": [],
                }
            ]
        },
        "panels": panels,
    }
