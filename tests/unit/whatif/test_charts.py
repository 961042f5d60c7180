"""The what-if report's charts and the tables beside them (gpu_queues/whatif/charts.py): the
step functions drawn from the workloads' runs, the bounded sampling, the waits and the
flavors' utilization, and the runs' new field kept out of report.json. That Mermaid renders
the charts is tests/unit/whatif/test_charts_render.py."""

from __future__ import annotations

import json
import random
import re

import pytest

from gpu_queues.whatif import charts
from gpu_queues.whatif.charts import (
    MAX_POINTS,
    NO_FLAVOR,
    OTHERS,
    Axis,
    flavor_table,
    gpus_in_use,
    mermaid_blocks,
    pending,
    sample,
    steps,
    wait_table,
)
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import (
    PUBLIC_WORKLOAD_KEYS,
    Run,
    RunMeta,
    WorkloadResult,
    align,
    report_json,
    team_results,
)
from sandbox.replay.tracked import Tracked, close_run

pytestmark = pytest.mark.unit

TEAMS = [("research", "research-cq"), ("vision", "vision-cq")]


def w(
    name: str,
    team: str,
    outcome: str,
    runs: list[tuple[float, float | None]],
    submit: float = 0.0,
    gpus: int = 1,
    **kw: object,
) -> WorkloadResult:
    first = runs[0][0] - submit if runs else None
    seconds = sum((e if e is not None else 3600) - s for s, e in runs)
    return WorkloadResult(
        name, f"team-{team}", "q", outcome, team=team, cluster_queue=f"{team}-cq",  # type: ignore[arg-type]
        gpus=gpus, submit_at=submit, intervals=list(runs), gpu_seconds=seconds,
        wait_seconds=kw.pop("wait", first), flavor=kw.pop("flavor", "h100" if runs else None),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def run(workloads: list[WorkloadResult], end: float = 3600, source: str = "new") -> Run:
    meta = RunMeta("staging", source, simulated_seconds=end, flavor_gpus={"h100": 8, "a10": 4})
    return Run(workloads, team_results(workloads, TEAMS), meta)


def test_a_step_function_moves_once_per_instant() -> None:
    # A run ending as another begins at 60 is no peak; a change that nets nothing is no step.
    assert steps([(0, 2), (60, -2), (60, 2), (120, -2), (30, 1), (30, -1)]) == [(0, 2), (120, 0)]


def test_each_point_is_the_most_within_its_bucket() -> None:
    axis = Axis(step=60, points=3)
    # A 10-second peak inside the first minute, a level from 90 s on.
    assert sample([(10, 5), (20, 1), (90, 3)], axis) == [5, 3, 3]
    assert sample([], axis) == [0, 0, 0]


@pytest.mark.parametrize("end", [0, 1, 59, 3600, 4200, 86400, 7 * 86400, 400 * 86400])
def test_the_axis_has_round_steps_and_at_most_a_hundred_points(end: float) -> None:
    axis = Axis.over(end)
    assert 2 <= axis.points <= MAX_POINTS
    span = end if end > 0 else 60
    assert axis.step * (axis.points - 1) <= span
    assert axis.step * axis.points > span - 1e-9  # the last bucket reaches the end
    assert axis.step in charts.ROUND_STEPS or axis.step % 86400 == 0


def test_gpus_in_use_follow_the_runs_and_a_run_going_at_the_end_goes_on() -> None:
    mine = [
        w("a", "research", "finished", [(0, 600)], gpus=4),
        w("b", "research", "admitted", [(300, 900), (1200, None)], gpus=2),
    ]
    assert gpus_in_use(mine) == [(0, 4), (300, 6), (600, 2), (900, 0), (1200, 2)]


def test_pending_counts_submitted_workloads_neither_running_nor_done() -> None:
    workloads = [
        w("done", "research", "finished", [(0, 600)]),
        w("late", "research", "admitted", [(900, None)], submit=300),
        w("evicted", "research", "preempted", [(0, 200)]),
        w("never", "vision", "pending", [], submit=100),
        w("stuck", "vision", "unschedulable", [], submit=50, wait=150),
        w("bad", "vision", "invalid", [], submit=0),
    ]
    # 0: done and evicted run at once; 50: stuck submitted; 100: never; 200: evicted waits
    # again as stuck is admitted (50 + its wait of 150): no step; 300: late submitted; 600:
    # done finishes (it never waited); 900: late runs.
    assert pending(workloads) == [(50, 1), (100, 2), (300, 3), (900, 2)]


def test_the_wait_table_has_p50_p90_and_the_longest_wait_per_team() -> None:
    workloads = [
        w("a", "research", "finished", [(0, 60)]),
        w("b", "research", "admitted", [(600, None)]),
        w("c", "research", "admitted", [(1800, None)]),
        w("d", "vision", "pending", []),
        w("e", "vision", "finished", [(120, 300)]),
    ]
    lines = wait_table(run(workloads), None)
    assert "| research | 3 | 10m | 30m | 30m |" in lines
    assert "| vision | 2 | 2m | not admitted | not admitted |" in lines


def test_utilization_is_gpu_hours_used_of_those_the_flavors_offer() -> None:
    workloads = [
        w("a", "research", "finished", [(0, 1800)], gpus=4),  # 2 GPU-hours
        w("b", "vision", "admitted", [(1800, None)], gpus=2),  # 1, until the end at 1h
        w("c", "vision", "preempted", [(0, 900)], gpus=4, flavor=None),  # 1, flavor unknown
        w("d", "vision", "admitted", [(0, None)], gpus=2, flavor="l4"),  # 2, undeclared
    ]
    lines = flavor_table(run(workloads), None)
    assert "| h100 | 8 | 3.0 | 8.0 | 38% |" in lines
    assert "| a10 | 4 | 0.0 | 4.0 | 0% |" in lines
    assert f"| {NO_FLAVOR} | - | 1.0 | - | - |" in lines
    assert "| l4 | - | 2.0 | - | - |" in lines


def test_with_a_base_both_runs_are_on_each_chart_and_in_each_table() -> None:
    base = run([w("a", "research", "admitted", [(0, None)], gpus=4)], source="base")
    new = run([w("a", "research", "admitted", [(600, None)], gpus=4, submit=0)], end=7200)
    base, new = align(base, new)
    md = render(new, base)
    gpu, queued = mermaid_blocks(md)
    assert 'line "research (base)" [' in gpu and 'line "research (new)" [' in gpu
    assert 'line "vision (base)" [' in gpu and 'line "vision (new)" [' in gpu
    assert 'line "pending (base)" [' in queued and 'line "pending (new)" [' in queued
    assert "light blue: research (base); blue: research (new)" in md
    # The base carried on to the new run's end: the same time axis, its run still going.
    base_line = re.search(r'line "research \(base\)" \[([^]]*)\]', gpu)
    assert base_line and set(base_line.group(1).split(", ")) == {"4"}
    assert "| research | 1 | 0s → **10m** | 0s → **10m** | 0s → **10m** |" in md
    assert "| h100 | 8 | 8.0 → **7.3** | 16.0 | 50% → **46%** |" in md


def _big(count: int, teams: int, seed: int = 1) -> Run:
    rng = random.Random(seed)
    names = [f"team-{i:02d}" for i in range(teams)]
    workloads = []
    for i in range(count):
        submit = rng.uniform(0, 86400)
        start = submit + rng.choice([0, 0, rng.uniform(0, 7200)])
        runs: list[tuple[float, float | None]] = [(start, start + rng.uniform(60, 14400))]
        if rng.random() < 0.1:
            runs[-1] = (start, None)
        outcome = "finished" if runs[-1][1] else "admitted"
        gpus = rng.choice([1, 2, 4, 8])
        workloads.append(w(f"w{i}", rng.choice(names), outcome, runs, submit=submit, gpus=gpus))
    meta = RunMeta("big", "big", simulated_seconds=2 * 86400, flavor_gpus={"h100": 512})
    return Run(workloads, team_results(workloads, [(n, f"{n}-cq") for n in names]), meta)


def test_a_mix_of_thousands_draws_a_bounded_chart_folding_small_teams() -> None:
    big = _big(5000, teams=12)
    gpu, queued = mermaid_blocks(render(big, None))
    lines = re.findall(r'line "([^"]*)" \[([^]]*)\]', gpu)
    assert len(lines) == charts.TEAM_LINES and lines[-1][0] == OTHERS
    assert all(len(values.split(", ")) <= MAX_POINTS for _, values in lines)
    # The lines' peaks are the step function's: nothing above what is in use at some time.
    (pending_line,) = re.findall(r'line "pending" \[([^]]*)\]', queued)
    assert max(map(int, pending_line.split(", "))) == max(v for _, v in pending(big.workloads))
    total = max(v for _, v in gpus_in_use(big.workloads))
    assert max(int(v) for _, values in lines for v in values.split(", ")) <= total
    assert len(gpu) < 10_000


def test_the_runs_go_through_the_run_file_and_stay_out_of_report_json() -> None:
    r = run([w("a", "research", "admitted", [(0, 60), (120, None)], gpus=2)])
    again = Run.from_json(json.loads(json.dumps(r.to_json())))
    assert again.workloads[0].intervals == [(0, 60), (120, None)]
    assert again.meta.flavor_gpus == {"h100": 8, "a10": 4}
    (public,) = report_json(again, None)["new"]["workloads"]
    assert tuple(public) == PUBLIC_WORKLOAD_KEYS
    # A run file from before the field reads as runs unknown (no intervals).
    data = r.to_json()
    del data["workloads"][0]["intervals"]
    assert Run.from_json(data).workloads[0].intervals == []


def test_the_sandbox_engine_drops_a_run_that_ends_where_it_began() -> None:
    from gpu_queues.whatif.mix import Entry

    t = Tracked(Entry(0, "mix.yaml#1", "Job", "a", "team-research", "q"))
    t.intervals.append((60.0, None))
    close_run(t, 60.0)
    t.intervals.append((90.0, None))
    close_run(t, 150.0)
    t.intervals.append((200.0, None))
    assert t.intervals == [(90.0, 150.0), (200.0, None)]
