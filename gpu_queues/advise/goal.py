"""What the advisor aims for, and how a run scores against it.

The default objective: the worst team's p90 wait as small as possible, without any team's p90
more than 10% worse than today and without a workload that fits today no longer fitting
(gpu_queues.whatif.regressions, the rule the PR preview warns by). A GOAL
replaces it; its grammar, one or more clauses joined by `and` or `,`:

    clause   := TEAM METRIC ["wait"] ("<" | "<=") DURATION
    TEAM     := a team of the stack, or `every` (each team)
    METRIC   := p50 | p90 | max   (`median` is p50)
    DURATION := 90s, 15m, 2h, 1h30m, 1d (gpu_queues.whatif.durations)

e.g. `research p90 < 2h`, `research p90 < 2h and vision max wait <= 6h`. A goal is met when
every clause holds; until then a run scores by how far past its bounds it is, then as the
default objective (fewer regressions, then the worst p90).

A workload never admitted waits longer than the replay: it counts as the replay's end minus
its submission plus the whole replay again, so any admission is better than none and the
search can still tell two runs that leave workloads out apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gpu_queues.whatif.durations import DurationError, format_duration, parse_duration
from gpu_queues.whatif.regressions import lost, p90_regressed, regressed_kinds, unfinished
from gpu_queues.whatif.report import ADMITTED, PENDING, Run

METRICS: Final = {"p50": 50.0, "median": 50.0, "p90": 90.0, "max": 100.0}
COMPARATORS: Final = ("<=", "<", "≤")
EVERY: Final = "every"


class GoalError(ValueError):
    """A GOAL that cannot be read; the message names the part that is wrong."""


@dataclass(frozen=True)
class Clause:
    team: str
    metric: str  # p50, p90 or max
    bound: float  # seconds
    strict: bool  # < rather than <=

    def text(self) -> str:
        return f"{self.team} {self.metric} wait {'<' if self.strict else '<='} " + format_duration(
            self.bound
        )


@dataclass(frozen=True)
class Goal:
    clauses: tuple[Clause, ...]
    """Empty: the default objective."""

    def text(self) -> str:
        if not self.clauses:
            return (
                "the worst team's p90 wait as small as possible, no team's p90 more than 10% "
                "worse than today and no workload that fits today left out"
            )
        return " and ".join(c.text() for c in self.clauses)


DEFAULT: Final = Goal(())
_CLAUSE = re.compile(r"^\s*(\S+)\s+(\S+)\s+(?:wait\s+)?(<=|<|≤|\S+)\s*(\S.*?)?\s*$")


def parse_goal(text: str | None, teams: Sequence[str]) -> Goal:
    """The goal GOAL states, for a stack of `teams`; GoalError naming what is wrong."""
    if text is None or not text.strip():
        return DEFAULT
    clauses = []
    for part in re.split(r"\s*(?:,|\band\b)\s*", text.strip()):
        if not part:
            raise GoalError(f"GOAL {text!r}: an empty clause (write e.g. `research p90 < 2h`)")
        found = _CLAUSE.match(part)
        if not found:
            raise GoalError(
                f"GOAL {text!r}: cannot read {part!r}; write TEAM METRIC < DURATION, "
                "e.g. `research p90 < 2h`"
            )
        team, metric, comparator, duration = found.groups()
        if team != EVERY and team not in teams:
            raise GoalError(
                f"GOAL: no team {team!r} in the stack (its teams: {', '.join(teams)}; "
                f"`{EVERY}` for each)"
            )
        if metric.lower() not in METRICS:
            raise GoalError(f"GOAL: unknown metric {metric!r} (known: p50, p90, max, median)")
        if comparator not in COMPARATORS:
            raise GoalError(
                f"GOAL: unknown comparator {comparator!r} in {part!r}: a wait is bounded "
                "from above, with < or <="
            )
        if duration is None:
            raise GoalError(f"GOAL: {part!r} has no duration (e.g. 2h)")
        try:
            bound = parse_duration(duration)
        except DurationError as exc:
            raise GoalError(f"GOAL: {exc}") from None
        name = "p50" if metric.lower() == "median" else metric.lower()
        for each in teams if team == EVERY else [team]:
            clauses.append(Clause(each, name, bound, comparator == "<"))
    return Goal(tuple(clauses))


# --- figures ------------------------------------------------------------------------------


def _waits(run: Run, team: str) -> list[tuple[float, bool]]:
    """The team's waits, each with whether it is past the replay (never admitted: module
    doc)."""
    end = run.meta.end
    return [
        ((end - w.submit_at) + end, True) if w.wait_seconds is None else (w.wait_seconds, False)
        for w in run.workloads
        if w.team == team and w.outcome in ADMITTED | PENDING
    ]


def _at_rank(run: Run, team: str, metric: str) -> tuple[float, bool]:
    values = sorted(_waits(run, team))
    if not values:
        return 0.0, False
    rank = max(1, math.ceil(METRICS[metric] / 100 * len(values)))
    return values[rank - 1]


def figure(run: Run, team: str, metric: str) -> float:
    """p50, p90 (nearest rank, as report.py) or max of the team's waits; 0 with none."""
    return _at_rank(run, team, metric)[0]


def regressed(base: Run, run: Run) -> list[str]:
    """What the PR preview would warn of (gpu_queues.whatif.regressions): the teams whose p90
    wait is more than 10% worse than on `base`, the kinds whose waited GPU-hours are, then the
    workloads that no longer fit or no longer finish."""
    before = {t.team: t for t in base.teams}
    teams = [t.team for t in run.teams if t.team in before and p90_regressed(before[t.team], t)]
    kinds = [f"kind {k.kind}" for _, k in regressed_kinds(base, run)]
    left = [*lost(base, run), *unfinished(base, run)]
    return teams + kinds + [f"{w.namespace}/{w.name}" for w in left]


def clause_holds(run: Run, clause: Clause) -> bool:
    value, never = _at_rank(run, clause.team, clause.metric)
    if never:
        return False
    return value < clause.bound if clause.strict else value <= clause.bound


def shortfall(run: Run, goal: Goal) -> float:
    """How far past its bounds a run is: the sum over the clauses it misses of how much
    longer the wait is than the bound, relative to the bound (1.0: twice as long)."""
    total = 0.0
    for c in goal.clauses:
        if clause_holds(run, c):
            continue
        value = figure(run, c.team, c.metric)
        total += max(value - c.bound, 1.0) / max(c.bound, 1.0)
    return total


Score = tuple[float, ...]


def score(run: Run, base: Run, goal: Goal, changes: int) -> Score:
    """Lower is better: (how far the goal is missed, regressions (teams more than 10% worse,
    workloads that no longer fit), worst p90, sum of the p90s, sum of every wait, settings
    changed). The default goal has no first term to miss;
    the last terms break ties: shorter waits all told, then the smaller change."""
    teams = [t.team for t in run.teams]
    p90s = [figure(run, t, "p90") for t in teams]
    return (
        shortfall(run, goal),
        float(len(regressed(base, run))),
        max(p90s, default=0.0),
        sum(p90s),
        sum(sum(w for w, _ in _waits(run, t)) for t in teams),
        float(changes),
    )


def met(run: Run, base: Run, goal: Goal) -> bool:
    """Whether the run meets the goal: every clause holds; for the default, no regression
    (no team more than 10% worse, no workload that no longer fits)."""
    if goal.clauses:
        return all(clause_holds(run, c) for c in goal.clauses)
    return not regressed(base, run)
