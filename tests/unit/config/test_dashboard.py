"""The Grafana dashboard made from the stack's teams and flavors: a small stack's panels and
queries written out by hand from Kueue's metric names (pkg/metrics/metrics.go of v0.18), the
layout on Grafana's 24-column grid, and teams and queues of any name."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import load_config
from tests.builders import Stack, Team, gpu_flavor, gpu_team

pytestmark = pytest.mark.unit

ON = {"dashboard": {"enabled": True}}


def small() -> dict[str, Any]:
    # ml: 4 GPUs of `gpu` in cohort pool; solo: 2 GPUs of `gpu`, no cohort.
    return (
        Stack()
        .flavor(gpu_flavor("gpu", 8))
        .cohort("pool")
        .team(
            gpu_team("ml", {"gpu": {"gpu": 4}}), gpu_team("solo", {"gpu": {"gpu": 2}}, cohort=None)
        )
        .kueue(metrics=ON)
        .raw()
    )


def panels_of(board: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    return [
        (p["title"], [(t["legendFormat"], t["expr"]) for t in p.get("targets", [])])
        for p in board["panels"]
    ]


def test_a_small_stacks_dashboard_by_hand() -> None:
    board = dashboard(load_config(small()))
    sel = 'cluster_queue="ml-cq", flavor="gpu", resource="nvidia.com/gpu"'
    usage = f"sum(kueue_cluster_queue_resource_usage{{{sel}}})"
    nominal = f"sum(kueue_cluster_queue_nominal_quota{{{sel}}})"
    lending = f"sum(kueue_cluster_queue_lending_limit{{{sel}}})"
    others = 'cohort="pool", cluster_queue!="ml-cq", flavor="gpu", resource="nvidia.com/gpu"'
    borrowed_by_others = (
        f"sum(clamp_min(sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{{others}}})"
        f" - sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{{others}}}), 0))"
    )
    lendable = f"((clamp_min({nominal} - {usage}, 0)) <= ({lending})) or ({lending})"
    buckets = 'kueue_admission_wait_time_seconds_bucket{cluster_queue="ml-cq"}'
    wait = "histogram_quantile(Q, sum by (le) (rate(" + buckets + "[$__rate_interval])))"
    ml = [
        ("ml: ClusterQueue ml-cq", []),
        ("GPUs in use / nominal quota", [("gpu in use", usage), ("gpu nominal quota", nominal)]),
        (
            "Pending workloads",
            [("{{status}}", 'sum by (status) (kueue_pending_workloads{cluster_queue="ml-cq"})')],
        ),
        (
            "Admission wait",
            [
                ("p50", wait.replace("Q", "0.5")),
                ("p90", wait.replace("Q", "0.9")),
                ("p99", wait.replace("Q", "0.99")),
            ],
        ),
        (
            "Borrowed and lent GPUs (cohort pool)",
            [
                ("gpu borrowed", f"clamp_min({usage} - {nominal}, 0)"),
                (
                    "gpu lent (at most)",
                    f"(({lendable}) <= ({borrowed_by_others})) or ({borrowed_by_others})",
                ),
            ],
        ),
        (
            "Evictions (last hour)",
            [
                (
                    "{{reason}}",
                    "sum by (reason) (increase("
                    'kueue_evicted_workloads_total{cluster_queue="ml-cq"}[1h]))',
                )
            ],
        ),
    ]
    shown = panels_of(board)
    assert shown[: len(ml)] == ml
    # solo has no cohort: it can neither borrow nor lend, so that panel is left out.
    assert [title for title, _ in shown[len(ml) :]] == [
        "solo: ClusterQueue solo-cq",
        "GPUs in use / nominal quota",
        "Pending workloads",
        "Admission wait",
        "Evictions (last hour)",
    ]
    assert board["uid"] == "gpu-queues-kueue" and board["title"] == "GPU queues (Kueue)"
    # One data source variable, of Prometheus type, which every panel and query names.
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource"]
    assert board["templating"]["list"][0]["query"] == "prometheus"
    for p in board["panels"]:
        for t in p.get("targets", []):
            assert t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def cells(panel: dict[str, Any]) -> set[tuple[int, int]]:
    g = panel["gridPos"]
    return {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}


def test_panels_tile_the_grid_without_overlap_and_ids_are_unique() -> None:
    board = dashboard(load_config(small()))
    taken: set[tuple[int, int]] = set()
    for p in board["panels"]:
        mine = cells(p)
        assert not mine & taken, p["title"]
        assert all(0 <= x < 24 for x, _ in mine)
        taken |= mine
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids)
    # Each row header sits above its team's panels: the rows come in team order.
    rows = [p for p in board["panels"] if p["type"] == "row"]
    assert [r["gridPos"]["y"] for r in rows] == sorted(r["gridPos"]["y"] for r in rows)
    assert len(rows) == 2


def test_a_team_with_two_gpu_kinds_and_flavors_gets_a_series_for_each() -> None:
    team = (
        Team("mixed")
        .quota("h100", cpu=8, memory="64Gi", gpu=8)
        .quota("mi300", **{"amd.com/gpu": 4})
    )
    raw = (
        Stack()
        .flavor(
            gpu_flavor("h100", 8),
            gpu_flavor("mi300", 0).capacity(cpu=64, memory="1Ti", **{"amd.com/gpu": 8}),
        )
        .team(team)
        .kueue(metrics=ON)
        .raw()
    )
    board = dashboard(load_config(raw))
    usage = panels_of(board)[1]
    assert [legend for legend, _ in usage[1]] == [
        "h100 nvidia.com/gpu in use",
        "h100 nvidia.com/gpu nominal quota",
        "mi300 amd.com/gpu in use",
        "mi300 amd.com/gpu nominal quota",
    ]


MATCHER = re.compile(r'cluster_queue(!?=)"((?:[^"\\]|\\.)*)"')


@pytest.mark.parametrize(
    ("name", "queue"),
    [("x", "x"), ("zeta-9", "queue.of.zeta-9"), ("a" * 63, "b" * 253)],
)
def test_teams_of_any_name_get_their_own_row_and_queries(name: str, queue: str) -> None:
    raw = (
        Stack()
        .flavor(gpu_flavor("gpu", 8))
        .cohort("pool")
        .team(
            gpu_team(name, {"gpu": {"gpu": 1}}).cluster_queue(queue).namespace("ns-x"),
            gpu_team("other", {"gpu": {"gpu": 1}}),
        )
        .kueue(metrics=ON)
        .raw()
    )
    board = dashboard(load_config(raw))
    rows = [i for i, p in enumerate(board["panels"]) if p["type"] == "row"]
    assert board["panels"][rows[0]]["title"] == f"{name}: ClusterQueue {queue}"
    for p in board["panels"][rows[0] + 1 : rows[1]]:
        for t in p["targets"]:
            found = MATCHER.findall(t["expr"])
            # Every query of the row is about this team's queue (the lent figure also reads
            # the rest of the cohort: every queue but this one).
            assert found and all(value == queue for _, value in found), t["expr"]
            assert {op for op, _ in found} <= {"=", "!="}


def tree() -> dict[str, Any]:
    # org (root, 4 GPUs of its own) <- res (a division, no quota) <- ml (4 GPUs, queues in
    # two namespaces); ops (2 GPUs) joins org directly; empty (a cohort with no GPUs below).
    ml = gpu_team("ml", {"gpu": {"gpu": 4}}, cohort="res").raw()
    del ml["namespace"], ml["localQueue"]
    ml["namespaces"] = ["ml-train", "ml-eval"]
    ml["localQueues"] = [
        {"name": "training", "namespace": "ml-train"},
        {"name": "evaluation", "namespace": "ml-eval"},
    ]
    own = {
        "coveredResources": ["nvidia.com/gpu"],
        "flavors": [{"name": "gpu", "resources": {"nvidia.com/gpu": {"nominalQuota": 4}}}],
    }
    return (
        Stack()
        .flavor(gpu_flavor("gpu", 16))
        .set(
            "cohorts",
            [
                {"name": "org", "resourceGroups": [own]},
                {"name": "res", "parent": "org"},
                {"name": "empty", "parent": "org"},
            ],
        )
        .team(ml, gpu_team("ops", {"gpu": {"gpu": 2}}, cohort="org"))
        .kueue(metrics=ON)
        .raw()
    )


def test_a_tree_gets_a_panel_per_cohort_and_a_team_a_panel_per_local_queue() -> None:
    shown = dict(panels_of(dashboard(load_config(tree()))))
    gpu = 'flavor="gpu", resource="nvidia.com/gpu"'

    def cohort(name: str) -> list[tuple[str, str]]:
        sel = f'cohort="{name}", {gpu}'
        return [
            # an idle subtree reads 0: Kueue clears the series rather than setting 0
            (
                "gpu reserved",
                f"sum(kueue_cohort_subtree_resource_reservations{{{sel}}}) or vector(0)",
            ),
            ("gpu subtree quota", f"sum(kueue_cohort_subtree_quota{{{sel}}})"),
        ]

    # org's subtree holds GPUs of its own and its teams'; res's only ml's; empty none at all.
    assert shown["Cohort org: GPUs reserved / subtree quota"] == cohort("org")
    assert shown["Cohort res: GPUs reserved / subtree quota"] == cohort("res")
    assert "Cohort empty: GPUs reserved / subtree quota" not in shown
    for ns, name in (("ml-train", "training"), ("ml-eval", "evaluation")):
        sel = f'namespace="{ns}", name="{name}"'
        assert shown[f"LocalQueue {ns}/{name}"] == [
            ("gpu in use", f"sum(kueue_local_queue_resource_usage{{{sel}, {gpu}}})"),
            (
                "pending {{status}}",
                f"sum by (status) (kueue_local_queue_pending_workloads{{{sel}}})",
            ),
        ]
    # ops has one LocalQueue: its ClusterQueue's panels are the queue's, so none of its own.
    assert not [t for t in shown if t.startswith("LocalQueue team-ops/")]


def test_the_tree_row_comes_last_and_tiles_the_grid() -> None:
    board = dashboard(load_config(tree()))
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows == ["ml: ClusterQueue ml-cq", "ops: ClusterQueue ops-cq", "Cohort tree"]
    taken: set[tuple[int, int]] = set()
    for p in board["panels"]:
        assert not cells(p) & taken, p["title"]
        taken |= cells(p)
