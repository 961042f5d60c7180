"""GPU-hours by workload kind (gpu_queues/whatif/kinds.py, issue 40 item 7): what each kind ran
and waited, worked out by hand; the warning a kind whose waited GPU-hours get more than
WORSE_BY worse gets in report.md and at the PR comment's top (gpu_queues/whatif/regressions.py);
and the table and chart of them (gpu_queues/whatif/charts.py), shown when more than one kind
is replayed."""

from __future__ import annotations

import pytest

from gpu_queues.advise.goal import DEFAULT, met, regressed
from gpu_queues.tools.pr_comment import compose
from gpu_queues.whatif.charts import kind_chart, kind_table, mermaid_blocks
from gpu_queues.whatif.kinds import KindFigures, by_kind, gpu_hours, kinds, shown
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.regressions import BEGIN, END, WORSE_BY, kind_regressions, regressions
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, align, team_results

pytestmark = pytest.mark.unit

TEAMS = [("research", "research-cq"), ("vision", "vision-cq")]


def w(
    name: str,
    kind: str,
    outcome: str,
    *,
    gpus: int,
    submit: float = 0.0,
    wait: float | None = 0.0,
    ran: float = 0.0,
    team: str = "research",
) -> WorkloadResult:
    return WorkloadResult(
        name,
        f"team-{team}",
        "q",
        outcome,
        kind=kind,
        team=team,  # type: ignore[arg-type]
        cluster_queue=f"{team}-cq",
        gpus=gpus,
        submit_at=submit,
        wait_seconds=wait,
        gpu_seconds=ran,
    )


def run(source: str, workloads: list[WorkloadResult], end: float = 7200.0) -> Run:
    meta = RunMeta("s", source, simulated_seconds=end, engine="fast", kueue_version="v0.18.3")
    return Run(workloads, team_results(workloads, TEAMS), meta)


# --- the figures, by hand ----------------------------------------------------------------

HAND = run(
    "s",
    [
        # 16 GPUs from 0s: waited 15m (16 x 0.25h = 4), ran 1h (16 GPU-hours)
        w("js-a", "JobSet", "finished", gpus=16, wait=900, ran=3600),
        # 8 GPUs submitted at 30m and never admitted: waits until the end, 2h: 8 x 1.5h = 12
        w("js-b", "JobSet", "pending", gpus=8, submit=1800, wait=None),
        # 1 GPU submitted at 10m, waited 30m (0.5), ran 1h30m (1.5)
        w("j-1", "Job", "finished", gpus=1, submit=600, wait=1800, ran=5400, team="vision"),
        # no GPU: 0 whatever it waits
        w("p-1", "Pod", "finished", gpus=0, wait=300, ran=600),
        # not replayed: counts nowhere
        w("bad", "Job", "invalid", gpus=4, wait=None),
        w("unknown", "MPIJob", "unsupported", gpus=32, wait=None),
    ],
)


def test_gpu_hours_run_and_waited_per_kind_worked_out_by_hand():
    assert by_kind(HAND) == {
        "JobSet": KindFigures(
            "JobSet", workloads=2, gpus=24, run_hours=16.0, waited_hours=16.0, never=1
        ),
        "Job": KindFigures("Job", workloads=1, gpus=1, run_hours=1.5, waited_hours=0.5),
        "Pod": KindFigures("Pod", workloads=1),
    }
    # the run GPU-hours are the team table's, split by kind
    total = sum(k.run_hours for k in by_kind(HAND).values())
    assert total == sum(t.gpu_hours for t in HAND.teams) == 17.5


def test_the_kinds_come_from_the_mix_not_a_list():
    """A kind no code names (one an engine learns to replay) is counted like the others."""
    later = run(
        "s",
        [
            w("m", "MPIJob", "finished", gpus=64, wait=3600, ran=1800),
            w("j", "Job", "finished", gpus=1),
        ],
    )
    assert by_kind(later)["MPIJob"] == KindFigures("MPIJob", 1, 64, 32.0, 64.0)
    assert kinds([HAND, later]) == ["JobSet", "Job", "Pod", "MPIJob"]


def test_a_run_carried_on_counts_a_workload_never_admitted_until_the_common_end():
    """With a base, the run that ends first is carried on to the other's end (report.align):
    a workload never admitted waits until that end on both sides."""
    base = run(
        "s@main",
        [w("js", "JobSet", "pending", gpus=8, wait=None), w("j", "Job", "finished", gpus=1)],
        end=3600,
    )
    new = run(
        "s",
        [w("js", "JobSet", "pending", gpus=8, wait=None), w("j", "Job", "finished", gpus=1)],
        end=7200,
    )
    assert by_kind(base)["JobSet"].waited_hours == 8.0
    base, new = align(base, new)
    assert by_kind(base)["JobSet"].waited_hours == by_kind(new)["JobSet"].waited_hours == 16.0
    assert kind_regressions(base, new) == []


def test_gpu_hours_are_shown_so_a_small_figure_is_not_zero():
    assert [gpu_hours(v) for v in (0.0, 0.0083, 0.25, 1.0, 30.46, 154.0)] == [
        "0.0",
        "0.0083",
        "0.25",
        "1.0",
        "30.5",
        "154.0",
    ]


# --- the warnings ------------------------------------------------------------------------

# One team's multi-node JobSets (16 GPUs each) and single-GPU Jobs, submitted together at 0s.
BASE = run(
    "s@main",
    [
        w("train-1", "JobSet", "finished", gpus=16, wait=600, ran=3600),
        w("train-2", "JobSet", "finished", gpus=16, wait=1200, ran=3600),
        *[w(f"small-{i}", "Job", "finished", gpus=1, wait=1800, ran=600) for i in range(10)],
    ],
)


def test_jobsets_waiting_longer_while_jobs_wait_less_warns_of_jobsets_only():
    """JobSets 16 x (10m + 20m) = 8 GPU-hours waited on the base, 16 x (30m + 1h) = 24 on the
    change (+200%); the Jobs 10 x 30m = 5 → 0. The team's p90 (the 11th of 12 waits) is 30m
    on both sides: only the kind's line says the change hurts multi-node training."""
    new = run(
        "s",
        [
            w("train-1", "JobSet", "finished", gpus=16, wait=1800, ran=3600),
            w("train-2", "JobSet", "finished", gpus=16, wait=3600, ran=3600),
            *[w(f"small-{i}", "Job", "finished", gpus=1, wait=0, ran=600) for i in range(10)],
        ],
    )
    line = "⚠️ kind JobSet: waited GPU-hours 8.0 → 24.0, +200% (more than 10% worse than `s@main`)"
    assert regressions(BASE, new) == [line]
    md = render(new, BASE)
    assert md.startswith(f"{BEGIN}\n{line}  \n{END}\n")
    # the PR comment lifts it to its top, above the quota diff
    comment = compose("<!-- quota-diff-s -->", "| quota diff |", {"what-if": md})
    assert comment.index(line) < comment.index("| quota diff |")
    table = kind_table(new, BASE)
    assert "| JobSet | 2 | 32 | 32.0 | 8.0 → **24.0** | 0 |" in table
    assert "| Job | 10 | 10 | 1.7 | 5.0 → **0.0** | 0 |" in table


def test_a_kind_waiting_just_worse_by_the_rule_is_not_a_regression_and_more_is():
    """The one threshold (WORSE_BY) of the teams' p90: 10% more is within it."""
    assert WORSE_BY == 0.10

    def jobsets(wait: float) -> Run:
        return run(
            "s",
            [
                w("train-1", "JobSet", "finished", gpus=16, wait=wait, ran=3600),
                w("train-2", "JobSet", "finished", gpus=16, wait=1200, ran=3600, team="vision"),
                *BASE.workloads[2:],
            ],
        )

    # base: 16 x (600 + 1200) s waited; 10% more is 16 x 1980 s, the first JobSet waiting 780 s
    assert kind_regressions(BASE, jobsets(780)) == []
    (line,) = kind_regressions(BASE, jobsets(781))
    assert line.startswith("⚠️ kind JobSet: waited GPU-hours 8.0 → 8.8, +10%")


def test_a_kind_on_one_side_only_cannot_regress_and_reads_as_missing_on_the_other():
    """A kind replayed on one side only (the other's release does not replay it, or the mix
    has none) has nothing to compare: a row of `-` on that side, no warning."""
    base = run(
        "s@main",
        [
            w("train", "JobSet", "unsupported", gpus=16, wait=None),
            w("small", "Job", "finished", gpus=1, wait=0, ran=600),
            w("pod", "Pod", "finished", gpus=1, wait=0, ran=600),
        ],
    )
    new = run(
        "s",
        [
            w("train", "JobSet", "pending", gpus=16, wait=None),
            w("small", "Job", "finished", gpus=1, wait=0, ran=600),
            w("pod", "Pod", "unsupported", gpus=1, wait=None),
        ],
    )
    assert kind_regressions(base, new) == []
    table = kind_table(new, base)
    assert "| Job | 1 | 1 | 0.17 | 0.0 | 0 |" in table
    assert "| JobSet | - → **1** | - → **16** | - → **0.0** | - → **32.0** | - → **1** |" in table
    assert "| Pod | 1 → **-** | 1 → **-** | 0.17 → **-** | 0.0 → **-** | 0 → **-** |" in table


def test_a_kind_of_no_gpus_never_regresses_however_long_it_waits():
    """Its waited GPU-hours are 0 on both sides: not worse by any share."""
    base = run(
        "s@main",
        [w("p", "Pod", "finished", gpus=0, wait=0), w("j", "Job", "finished", gpus=1, wait=0)],
    )
    new = run(
        "s",
        [w("p", "Pod", "pending", gpus=0, wait=None), w("j", "Job", "finished", gpus=1, wait=0)],
    )
    assert kind_regressions(base, new) == []
    assert "| Pod | 1 | 0 | 0.0 | 0.0 | 0 → **1** |" in kind_table(new, base)


def test_from_no_wait_to_some_is_a_regression_without_a_share():
    base = run(
        "s@main",
        [w("js", "JobSet", "finished", gpus=8, wait=0), w("j", "Job", "finished", gpus=1, wait=0)],
    )
    new = run(
        "s",
        [w("js", "JobSet", "finished", gpus=8, wait=3), w("j", "Job", "finished", gpus=1, wait=0)],
    )
    assert kind_regressions(base, new) == [
        "⚠️ kind JobSet: waited GPU-hours 0.0 → 0.0067 (more than 10% worse than `s@main`)"
    ]


# --- when it is shown --------------------------------------------------------------------


def test_one_kind_shows_no_figures_by_kind_and_warns_by_them_of_nothing():
    """With one kind the figures are the team table's totals: no table, no chart, no line."""
    base = run("s@main", [w("j", "Job", "finished", gpus=8, wait=0, ran=60)])
    new = run(
        "s",
        [
            w("j", "Job", "finished", gpus=8, wait=3600, ran=60),
            w("x", "JobSet", "invalid", gpus=8, wait=None),
        ],
    )
    assert not shown(new, base) and not shown(new, None)
    assert kind_regressions(base, new) == [] and kind_table(new, base) == []
    assert kind_chart(new, base) == []
    md = render(new, base)
    assert "by kind" not in md and "per kind" not in md


def test_the_report_has_a_table_and_a_chart_by_kind_whose_area_is_the_waited_gpu_hours():
    md = render(HAND, None)
    assert "**GPU-hours by kind**" in md
    assert "| JobSet | 2 | 24 | 16.0 | 16.0 | 1 |" in md
    assert "| Job | 1 | 1 | 1.5 | 0.5 | 0 |" in md
    assert "| Pod | 1 | 0 | 0.0 | 0.0 | 0 |" in md
    chart = [b for b in mermaid_blocks(md) if "GPUs waiting per kind" in b]
    assert len(chart) == 1
    values = {
        title: [int(v) for v in points.split(", ")]
        for title, points in (
            line.strip().removeprefix("line ").split(" [", 1)
            for line in chart[0].splitlines()
            if line.strip().startswith("line ")
        )
        for points in [points.rstrip("]")]
    }
    step = 120  # 2h on 61 points of 2m
    # JobSet: 16 from 0 to 15m, 8 more from 30m on (never admitted); each point the bucket's most
    assert values['"JobSet"'][:8] == [16] * 8 and values['"JobSet"'][8:15] == [0] * 7
    assert values['"JobSet"'][15:] == [8] * (len(values['"JobSet"']) - 15)
    # the area under the line, bucket by bucket, is the waited GPU-hours (16 + 12)
    area = sum(v * step for v in values['"JobSet"'][:-1]) / 3600
    assert area == pytest.approx(4.0 + 12.0, abs=16 * step / 3600)
    assert values['"Pod"'] == [0] * len(values['"Pod"'])
    assert "Lines: blue: JobSet; orange: Job; green: Pod." in md
    assert kind_chart(HAND, BASE)[1].startswith("%%{init")


def test_the_advisor_counts_a_kinds_regression_as_the_preview_warns_of_it():
    """The advisor's objective avoids what the PR preview warns of, by the same rule: the
    JobSets' waited GPU-hours +200% is one regression though no team's p90 moved."""
    new = run(
        "s",
        [
            w("train-1", "JobSet", "finished", gpus=16, wait=1800, ran=3600),
            w("train-2", "JobSet", "finished", gpus=16, wait=3600, ran=3600),
            *[w(f"small-{i}", "Job", "finished", gpus=1, wait=0, ran=600) for i in range(10)],
        ],
    )
    assert regressed(BASE, new) == ["kind JobSet"]
    assert not met(new, BASE, DEFAULT)
    assert regressed(BASE, BASE) == [] and met(BASE, BASE, DEFAULT)
    assert regressed(new, BASE) == ["kind Job"]  # the other way round: the Jobs 0 → 5
