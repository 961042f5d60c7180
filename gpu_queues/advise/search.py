"""The search: coordinate descent over the knobs (gpu_queues.advise.space), the fast what-if as
judge (a `Judge`: a candidate's validated config in, its Run out).

From the stack as it is, the moves at the largest step are tried one after another (each
move shifts one knob, or a transfer of nominal quota between teams), `jobs` at a time side by
side; under the default objective only the moves that can shorten some team's wait
(Space.moves with the teams that wait). A move whose run scores better
(gpu_queues.advise.goal.score) is kept at once, and the pass goes on with the moves it has not
tried yet, from the new best (cyclic coordinate descent). A pass that keeps nothing halves the
step; a pass at step 1 that keeps nothing ends the search, as
do the replay budget, the time budget, and a best at the objective's floor (the goal met, no
regression and every p90 wait 0 s: only tie-breaks are left to gain). Every candidate is
checked (config validation and policy pack) before it is replayed, and replayed at most
once: runs are cached by the candidate's settings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from gpu_queues.advise import goal as goals
from gpu_queues.advise.space import Candidate, Space
from gpu_queues.config.model import StackConfig
from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.report import Run

Judge = Callable[[StackConfig], Run]
Check = Callable[[dict[str, object]], "StackConfig | str"]
Progress = Callable[[str], None]


@dataclass
class Trial:
    candidate: Candidate
    run: Run
    score: goals.Score
    move: str


@dataclass
class Outcome:
    start: Trial
    best: Trial
    replays: int
    """Replays run (each candidate at most once)."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """(move, why) of the candidates the validation or the pack refused (never replayed)."""
    cached: int = 0
    """Candidates met again and answered from the cache."""
    seconds: float = 0.0
    replay_seconds: float = 0.0
    """Wall time inside the judge, all replays together."""
    stopped: str = ""
    """Why the search ended."""
    kept: list[str] = field(default_factory=list)
    """The moves kept, in order."""


def describe(run: Run, score: goals.Score, goal: goals.Goal) -> str:
    worst = max(run.teams, key=lambda t: goals.figure(run, t.team, "p90"), default=None)
    if worst is None:
        return "no teams"
    value = goals.figure(run, worst.team, "p90")
    shown = "not admitted" if value > run.meta.end else format_duration(value)
    text = f"worst p90 {shown} ({worst.team})"
    if goal.clauses:
        text += ", goal met" if score[0] == 0 else f", goal missed by {score[0]:.2f}"
    if score[1]:
        text += f", {score[1]:.0f} regression(s) (a team >10% worse or a workload left out)"
    return text


class Search:
    def __init__(
        self,
        space: Space,
        judge: Judge,
        check: Check,
        goal: goals.Goal,
        *,
        progress: Progress | None = None,
        max_replays: int = 400,
        budget_seconds: float = 270.0,
        jobs: int = 1,
    ) -> None:
        self.space, self.judge, self.check, self.goal = space, judge, check, goal
        self.progress = progress or (lambda _: None)
        self.max_replays, self.budget, self.jobs = max_replays, budget_seconds, max(1, jobs)
        self.cache: dict[Candidate, Trial | str] = {}
        self.replays = 0
        self.cached = 0
        self.replay_seconds = 0.0
        self.refused: list[tuple[str, str]] = []
        self.base: Run | None = None
        self.started = time.monotonic()

    def _changes(self, candidate: Candidate) -> int:
        return len(self.space.changes(candidate))

    def _screen(self, candidate: Candidate, move: str) -> Trial | StackConfig | None:
        """A known trial (from the cache), the checked config to replay, or None (refused)."""
        known = self.cache.get(candidate)
        if known is not None:
            self.cached += 1
            return known if isinstance(known, Trial) else None
        if not self.space.within_hardware(candidate):  # never generated; kept as a guard
            self.cache[candidate] = "above the hardware"
            return None
        checked = self.check(self.space.config_of(candidate))
        if isinstance(checked, str):
            self.cache[candidate] = checked
            self.refused.append((move, checked))
            return None
        return checked

    def _timed(self, config: StackConfig) -> tuple[Run, float]:
        began = time.monotonic()
        run = self.judge(config)
        return run, time.monotonic() - began

    def evaluate_all(self, batch: list[tuple[str, Candidate]]) -> list[Trial | None]:
        """Each candidate's trial, in order: the new ones replayed side by side (`jobs` at
        once), each once; None for a refused one."""
        screened = [self._screen(c, m) for m, c in batch]
        todo = [i for i, x in enumerate(screened) if isinstance(x, StackConfig)]
        # The same candidate twice in one batch is replayed once.
        first = {batch[i][1]: i for i in reversed(todo)}
        configs = [(i, screened[i]) for i in sorted(first.values())]
        if self.jobs > 1 and len(configs) > 1:
            with ThreadPoolExecutor(self.jobs) as pool:
                done = list(pool.map(lambda ic: self._timed(ic[1]), configs))
        else:
            done = [self._timed(config) for _, config in configs]  # type: ignore[arg-type]
        for (i, _), (run, seconds) in zip(configs, done, strict=True):
            move, candidate = batch[i]
            self.replay_seconds += seconds
            self.replays += 1
            base = self.base or run
            changes = self._changes(candidate)
            self.cache[candidate] = Trial(
                candidate, run, goals.score(run, base, self.goal, changes), move
            )
        out: list[Trial | None] = []
        for i, (_, candidate) in enumerate(batch):
            if isinstance(screened[i], Trial):
                out.append(screened[i])  # type: ignore[arg-type]
            else:
                known = self.cache.get(candidate)
                out.append(known if isinstance(known, Trial) else None)
        return out

    def evaluate(self, candidate: Candidate, move: str) -> Trial | None:
        return self.evaluate_all([(move, candidate)])[0]

    def _out_of_budget(self, best: Trial) -> str:
        if best.score[:4] == (0.0, 0.0, 0.0, 0.0):
            return (
                "the objective is at its floor (goal met, no regression, every team's p90 "
                "wait 0 s); only its tie-breaks were left"
            )
        if self.replays >= self.max_replays:
            return f"the replay budget ({self.max_replays}) is spent"
        if time.monotonic() - self.started >= self.budget:
            return f"the time budget ({self.budget:.0f}s) is spent"
        return ""

    def waiting(self, run: Run) -> list[str]:
        """The teams some of whose workloads wait, the longest p90 first."""
        teams = [t.team for t in run.teams]
        waits = {t: goals.figure(run, t, "max") for t in teams}
        return sorted(
            (t for t in teams if waits[t] > 0),
            key=lambda t: (-goals.figure(run, t, "p90"), -waits[t]),
        )

    def run(self) -> Outcome:
        start = self.evaluate(self.space.start, "the stack as it is")
        if start is None:
            why = self.cache[self.space.start]
            raise ValueError(f"the stack as it is does not pass the checks: {why}")
        self.base = start.run
        best = start
        kept: list[str] = []
        self.progress(f"start: {describe(start.run, start.score, self.goal)}")
        stopped = ""
        for step in self.space.steps():
            improved = True
            while improved and not stopped:
                # One pass: every move once, each from the best so far (cyclic coordinate
                # descent); a move kept, the rest of the pass goes on from the new best.
                improved, tried = False, set[str]()
                while not stopped:
                    waiting = None if self.goal.clauses else self.waiting(best.run)
                    moves = [
                        (m, c)
                        for m, c in self.space.moves(best.candidate, step, waiting)
                        if m not in tried
                    ]
                    if not moves:
                        break
                    stopped = self._out_of_budget(best)
                    if stopped:
                        break
                    batch = moves[: self.jobs]
                    tried.update(m for m, _ in batch)
                    before = self.replays
                    trials = self.evaluate_all(batch)
                    better = [t for t in trials if t is not None and t.score < best.score]
                    if better:
                        best, improved = better[0], True
                        kept.append(best.move)
                    if self.replays != before:
                        self._report(best, best.move if better else batch[-1][0], bool(better))
            if stopped:
                break
        return Outcome(
            start,
            best,
            self.replays,
            self.refused,
            self.cached,
            time.monotonic() - self.started,
            self.replay_seconds,
            stopped or "no move at any step improves on the best",
            kept,
        )

    def _report(self, best: Trial, move: str, kept: bool) -> None:
        elapsed = time.monotonic() - self.started
        mark = "kept" if kept else "tried"
        self.progress(
            f"{self.replays} replays, {elapsed:.0f}s | best: "
            f"{describe(best.run, best.score, self.goal)} | {mark}: {move}"
        )
