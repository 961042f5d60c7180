"""The what-if report: team figures from workload results, report.json's fixed shape, the
Markdown tables and what changed between a base and a new run."""

from __future__ import annotations

import json
import math

import pytest

from gpu_queues.whatif.markdown import changes, render
from gpu_queues.whatif.report import (
    PUBLIC_TEAM_KEYS,
    PUBLIC_WORKLOAD_KEYS,
    Run,
    RunMeta,
    WorkloadResult,
    align,
    percentile,
    replay_json,
    report_json,
    team_results,
)

pytestmark = pytest.mark.unit

TEAMS = [("research", "research-cq"), ("vision", "vision-cq"), ("idle", "idle-cq")]


def w(name: str, team: str, outcome: str, wait: float | None = 0.0, **kw: object) -> WorkloadResult:
    return WorkloadResult(
        name, f"team-{team}", "gpu-queue", outcome, wait_seconds=wait, team=team,  # type: ignore[arg-type]
        cluster_queue=f"{team}-cq", **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def run(workloads: list[WorkloadResult], source: str = "staging", end: float = 3600) -> Run:
    meta = RunMeta("staging", source, simulated_seconds=end, wall_seconds=10, events=4)
    return Run(workloads, team_results(workloads, TEAMS), meta)


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [([], 50, None), ([5.0], 90, 5.0), ([1, 2, 3, 4], 50, 2), ([1, 2, 3, 4], 90, 4),
     ([0, 0, math.inf], 50, 0), ([0, 0, math.inf], 90, None), ([3, 1, 2], 50, 2)],
)  # fmt: skip
def test_percentiles_are_nearest_rank_and_never_admitted_waits_forever(
    values: list[float], p: float, expected: float | None
) -> None:
    assert percentile(values, p) == expected


def test_team_figures_partition_the_replayed_workloads() -> None:
    workloads = [
        w("a", "research", "finished", 0, gpus=4, gpu_seconds=3600),
        w("b", "research", "admitted", 600, gpus=2, gpu_seconds=1800),
        w("c", "research", "unschedulable", 60, gpus=12),
        w("d", "research", "preempted", 0, gpus=2, gpu_seconds=900),
        w("e", "research", "pending", None, gpus=1),
        w("f", "research", "invalid", None),
        w("g", "vision", "unsupported", None),
    ]
    research, vision, idle = team_results(workloads, TEAMS)
    assert (research.admitted, research.pending, research.workloads) == (3, 2, 5)
    assert research.gpu_hours == pytest.approx(4 + 1 + 0.5)
    # waits 0, 600, 60, 0, inf: p50 is the 3rd smallest, p90 the 5th (never admitted).
    assert (research.wait_p50, research.wait_p90) == (60, None)
    assert (vision.admitted, vision.pending, vision.workloads, vision.wait_p50) == (0, 0, 0, None)
    assert idle.team == "idle" and idle.cluster_queue == "idle-cq"


def test_report_json_has_exactly_the_documented_shape() -> None:
    new = run([w("a", "research", "admitted", 61.4, flavor="h100", gpus=1, gpu_seconds=3600)])
    data = json.loads(json.dumps(report_json(new, None)))
    assert set(data) == {"new", "base"} and data["base"] is None
    assert set(data["new"]) == {"workloads", "teams"}
    (wl,) = data["new"]["workloads"]
    assert tuple(wl) == PUBLIC_WORKLOAD_KEYS
    assert wl == {
        "name": "a", "namespace": "team-research", "queue": "gpu-queue", "outcome": "admitted",
        "flavor": "h100", "message": None, "waitSeconds": 61,
    }  # fmt: skip
    assert [tuple(t) for t in data["new"]["teams"]] == [PUBLIC_TEAM_KEYS] * 3
    assert data["new"]["teams"][0]["gpuHours"] == 1.0
    replay = json.loads(json.dumps(replay_json(new, None)))
    assert replay["new"]["source"] == "staging" and replay["base"] is None
    both = report_json(new, run([], "staging@abc"))
    assert both["base"] == {"workloads": [], "teams": both["base"]["teams"]}


def test_a_run_survives_its_trip_through_the_run_file() -> None:
    original = run([w("a", "research", "preempted", 0, message="Preempted (InCohortReclamation)")])
    original.meta.notes.append("a note")
    original.workloads[0].timeline = [(60.0, "admitted", "h100"), (90.0, "evicted", "Preempted")]
    original.workloads[0].admission_order = (3, 7)  # the sandbox's, for the cross-check
    again = Run.from_json(json.loads(json.dumps(original.to_json())))
    assert again == original


def test_changes_name_each_team_figure_and_workload_that_moved() -> None:
    base = run(
        [
            w("a", "research", "pending", None),
            w("b", "research", "pending", None),
            w("c", "vision", "admitted", 600, flavor="a100", gpus=2, gpu_seconds=3600),
        ],
        "staging@base",
    )
    new = run(
        [
            w("a", "research", "admitted", 0, flavor="h100"),
            w("b", "research", "admitted", 1200, flavor="h100"),
            w("c", "vision", "admitted", 7800, flavor="a100", gpus=2, gpu_seconds=3600),
        ]
    )
    assert changes(base, new) == [
        "research: 2 pending → 0 pending; 0 admitted → 2 admitted; p50 wait not admitted → 0s; "
        "p90 wait not admitted → 20m",
        "vision: p50 wait 10m → 2h10m; p90 wait 10m → 2h10m",
        "team-research/a: pending → admitted (h100)",
        "team-research/b: pending → admitted (h100)",
    ]
    assert changes(new, new) == []


def test_a_kueue_move_is_the_first_change_and_the_header_names_both_releases() -> None:
    workloads = [w("a", "research", "finished", 0)]
    base, new = run(workloads, "staging@base"), run(workloads)
    base.meta.kueue_version, new.meta.kueue_version = "v0.18.3", "v0.19.2"
    assert changes(base, new) == ["Kueue v0.18.3 → v0.19.2"]
    md = render(new, base)
    assert "on the real Kueue v0.19.2 (`staging@base` on its own release, v0.18.3) and" in md
    assert "- Kueue v0.18.3 → v0.19.2" in md
    base.meta.kueue_version = "v0.19.2"
    assert changes(base, new) == []
    assert "on the real Kueue v0.19.2 and kube-scheduler" in render(new, base)
    # Which controller ran each side goes to replay.json with the rest of how it was made.
    new.meta.kueue_image = "registry.k8s.io/kueue/kueue:v0.19.2"
    new.meta.kueue_binary = ".toolchain/bin/kueue-v0.19.2"
    made = replay_json(new, base)["new"]
    assert (made["kueue_version"], made["kueue_image"], made["kueue_binary"]) == (
        "v0.19.2", "registry.k8s.io/kueue/kueue:v0.19.2", ".toolchain/bin/kueue-v0.19.2"
    )  # fmt: skip


def test_the_markdown_shows_both_sides_with_arrows_and_every_workload() -> None:
    base = run([w("a", "research", "pending", None, message="insufficient | quota")], "s@base")
    new = run([w("a", "research", "admitted", 0, flavor="h100", message="x" * 400)])
    md = render(new, base)
    assert md.startswith("### What-if: `staging` against `s@base`")
    assert "**What changed**" in md and "- research: 1 pending → 0 pending" in md
    assert "| research | research-cq | 0 → **1** | 1 → **0** |" in md
    assert "| team-research/a | gpu-queue | pending → **admitted** | - → **h100** |" in md
    assert "x" * 159 + "…" in md and "x" * 161 not in md
    alone = render(base, None)
    assert "What changed" not in alone and "insufficient \\| quota" in alone
    # Each run's speed-up (simulated per wall second) is stated, as measured.
    assert "- `s@base`: 1h of simulated time replayed in 10s (360x), 4 events" in md


def test_align_counts_both_runs_until_the_later_end() -> None:
    base = run([w("a", "research", "admitted", 0, gpus=2, gpu_seconds=3600)], "b", end=3600)
    new = run(
        [
            w("a", "research", "admitted", 0, gpus=2, gpu_seconds=7200),
            w("b", "research", "unschedulable", 0, gpus=8),
        ],
        end=7200,
    )
    base2, new2 = align(base, new)
    assert new2 is new
    assert base2.workloads[0].gpu_seconds == 7200 and base2.teams[0].gpu_hours == 4
    assert base2.meta.simulated_seconds == 3600 and base2.meta.horizon_seconds == 7200
    assert "counted until 2h" in base2.meta.notes[-1]


def test_a_big_report_fits_a_pr_comment_and_keeps_what_changed() -> None:
    def many(outcome_of: object) -> list[WorkloadResult]:
        return [
            w(f"job-{i:03d}", "research", outcome_of(i), 0, message="m" * 300)  # type: ignore[operator]
            for i in range(400)
        ]

    base = run(many(lambda i: "finished"), "s@base")
    new = run(many(lambda i: "pending" if i % 50 == 7 else "finished"))
    md = render(new, base)
    assert len(md) <= 50_000
    for i in range(7, 400, 50):  # every workload that changed is in the table
        assert f"| team-research/job-{i:03d} | gpu-queue | finished → **pending** |" in md
    assert "more workloads (unchanged first left out) in report.json." in md
    assert "- ... and " not in md  # 8 workload changes + 1 team line: all listed
    small = render(run(many(lambda i: "finished")[:3]), None)
    assert "more workloads" not in small
