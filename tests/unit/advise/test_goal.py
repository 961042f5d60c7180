"""GOAL's grammar and the figures it bounds (gpu_queues.advise.goal): expected values worked out
by hand from the waits written in each test."""

from __future__ import annotations

import pytest

from gpu_queues.advise.goal import DEFAULT, Clause, GoalError, clause_holds, figure, met, parse_goal
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results

pytestmark = pytest.mark.unit

TEAMS = ["research", "vision", "nlp"]


def test_a_clause_reads_team_metric_comparator_and_duration():
    goal = parse_goal("research p90 < 2h", TEAMS)
    assert goal.clauses == (Clause("research", "p90", 7200.0, True),)


def test_clauses_join_with_and_or_commas_and_every_means_each_team():
    goal = parse_goal("vision max wait <= 1h30m and every median < 10m", TEAMS)
    assert goal.clauses == (
        Clause("vision", "max", 5400.0, False),
        Clause("research", "p50", 600.0, True),
        Clause("vision", "p50", 600.0, True),
        Clause("nlp", "p50", 600.0, True),
    )
    assert parse_goal("nlp p50 < 1m, vision p90 <= 2h", TEAMS).clauses[1].team == "vision"


def test_no_goal_is_the_default_objective():
    assert parse_goal(None, TEAMS) is DEFAULT
    assert parse_goal("  ", TEAMS) is DEFAULT


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("speech p90 < 2h", "no team 'speech' in the stack (its teams: research, vision, nlp"),
        ("research p95 < 2h", "unknown metric 'p95'"),
        ("research p90 > 2h", "unknown comparator '>'"),
        ("research p90 < soon", "'soon' is not a duration"),
        ("research p90 <", "has no duration"),
        ("research", "cannot read 'research'"),
        ("research p90 < 2h and", "an empty clause"),
    ],
)
def test_a_bad_goal_is_refused_naming_what_is_wrong(text, named):
    with pytest.raises(GoalError, match=named.replace("(", r"\(").replace("'", "'")):
        parse_goal(text, TEAMS)


def _run(waits: dict[str, list[float | None]], end: float) -> Run:
    workloads = [
        WorkloadResult(
            f"{team}-{i}",
            f"team-{team}",
            "q",
            "finished" if w is not None else "pending",
            wait_seconds=w,
            team=team,
            submit_at=0.0,
        )
        for team, ws in waits.items()
        for i, w in enumerate(ws)
    ]
    teams = team_results(workloads, [(t, f"{t}-cq") for t in waits])
    return Run(workloads, teams, RunMeta("s", "s", simulated_seconds=end))


def test_figures_are_nearest_rank_and_a_workload_never_admitted_fails_its_bound():
    # Ten waits 1..10 minutes: p50 is the 5th (5m), p90 the 9th (9m), max the 10th.
    run = _run({"a": [60.0 * i for i in range(1, 11)], "b": [0.0, None]}, end=3600)
    assert [figure(run, "a", m) for m in ("p50", "p90", "max")] == [300.0, 540.0, 600.0]
    assert clause_holds(run, Clause("a", "p90", 540.0, False))
    assert not clause_holds(run, Clause("a", "p90", 540.0, True))
    # b's p90 falls on the workload never admitted: no bound holds, however long.
    assert not clause_holds(run, Clause("b", "p90", 10 * 86400.0, False))
    assert clause_holds(run, Clause("b", "p50", 1.0, True))


def test_the_default_is_met_unless_a_team_gets_more_than_ten_percent_worse():
    base = _run({"a": [1000.0], "b": [100.0]}, end=3600)
    assert met(_run({"a": [1100.0], "b": [0.0]}, end=3600), base, DEFAULT)  # exactly +10%
    assert not met(_run({"a": [1101.0], "b": [0.0]}, end=3600), base, DEFAULT)
    assert not met(_run({"a": [0.0], "b": [None]}, end=3600), base, DEFAULT)


def test_the_default_is_not_met_when_a_workload_that_fits_today_no_longer_does():
    """Ten waits of 0 s; on the change the tenth is never admitted: the p90 (the 9th) is
    still 0 s, but a workload that fitted today is left out, which the PR preview warns of."""
    base = _run({"a": [0.0] * 10, "b": [0.0]}, end=3600)
    new = _run({"a": [0.0] * 9 + [None], "b": [0.0]}, end=3600)
    assert figure(new, "a", "p90") == 0.0
    assert not met(new, base, DEFAULT)
    assert met(base, base, DEFAULT)
