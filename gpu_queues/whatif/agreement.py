"""Whether two runs of one mix tell the same story, and where they first part: how the fast
engine is held to the sandbox's real Kueue and kube-scheduler (the randomized cross-check,
sandbox/crosscheck), and how any two runs can be set side by side.

Two runs agree on a workload when its outcome, flavor and wait are the same (the report's
verdict). They tell the same story when every workload's steps are the same at every instant:
admitted (with its flavor), ran (with its pods' nodes), evicted (with the reason) and stopped
(a run's end), from WorkloadResult.timeline and .intervals. The first instant at which the two
sets of steps differ is where the runs part; what differs there is usually the cause, and
everything after it follows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.report import Run, WorkloadResult

Step = tuple[str, str, str]
"""(workload, what, detail): "ns/name", admitted|ran|evicted|stopped, flavor|nodes|reason."""


@dataclass(frozen=True)
class Verdict:
    """A workload's outcome, flavor and wait, as the report gives them."""

    outcome: str
    flavor: str | None
    wait: float | None

    def __str__(self) -> str:
        wait = "never admitted" if self.wait is None else f"wait {format_duration(self.wait)}"
        return f"{self.outcome} on {self.flavor or '-'}, {wait}"


@dataclass(frozen=True)
class Difference:
    """A workload on which two runs disagree."""

    workload: str
    a: Verdict
    b: Verdict


@dataclass(frozen=True)
class Parting:
    """The first instant at which two runs' stories differ."""

    at: float
    only_a: tuple[Step, ...]
    only_b: tuple[Step, ...]
    both: tuple[Step, ...]


def key(w: WorkloadResult) -> str:
    return f"{w.namespace}/{w.name}"


def verdict(w: WorkloadResult) -> Verdict:
    wait = None if w.wait_seconds is None else round(w.wait_seconds, 3)
    return Verdict(w.outcome, w.flavor, wait)


def differences(a: Run, b: Run) -> list[Difference]:
    """The workloads whose outcome, flavor or wait differ (in a's order), including any that
    one run has and the other has not."""
    theirs = {key(w): w for w in b.workloads}
    out = []
    for w in a.workloads:
        other = theirs.pop(key(w), None)
        if other is None:
            out.append(Difference(key(w), verdict(w), Verdict("missing", None, None)))
        elif verdict(w) != verdict(other):
            out.append(Difference(key(w), verdict(w), verdict(other)))
    out += [Difference(k, Verdict("missing", None, None), verdict(w)) for k, w in theirs.items()]
    return out


def story(workloads: Iterable[WorkloadResult]) -> dict[float, set[Step]]:
    """Every workload's steps, by the instant they happened at."""
    out: dict[float, set[Step]] = defaultdict(set)
    for w in workloads:
        for at, what, detail in w.timeline:
            out[float(at)].add((key(w), what, detail))
        for _, end in w.intervals:
            if end is not None:
                out[float(end)].add((key(w), "stopped", ""))
    return out


def first_parting(a: Run, b: Run) -> Parting | None:
    """Where the two stories first differ; None when they are the same throughout."""
    sa, sb = story(a.workloads), story(b.workloads)
    for at in sorted(set(sa) | set(sb)):
        here_a, here_b = sa.get(at, set()), sb.get(at, set())
        if here_a != here_b:
            return Parting(
                at,
                tuple(sorted(here_a - here_b)),
                tuple(sorted(here_b - here_a)),
                tuple(sorted(here_a & here_b)),
            )
    return None


RECLAIM_TIE = "a tie Kueue breaks by the second of admission"


def tie_reason(parting: Parting) -> str | None:
    """Why the runs part where no engine has one answer, or None where one of them is wrong.

    RECLAIM_TIE: Kueue chose among workloads it had admitted at that very instant: each run
    evicted one the other kept, and every workload either evicted had been admitted there on
    both. Kueue takes the most recently admitted of equals first, then the lowest UID; within
    one instant that is the second each admission fell in, which on a cluster (and the sandbox)
    is the wall clock's.

    (The order in which jobs admitted together reach the scheduler is a race on a cluster too,
    Kueue writing each admission on a goroutine of its own; the cross-check hands the fast
    engine the order the sandbox saw, so a parting there is a difference.)
    """
    differing = [*parting.only_a, *parting.only_b]
    evicted = {w for w, what, _ in differing if what == "evicted"}
    admitted_here = {w for w, what, _ in parting.both if what == "admitted"}
    # What else differs there follows from the evictions: the runs of the ones kept.
    if (
        evicted
        and evicted <= admitted_here
        and all(what in ("evicted", "ran", "stopped") for _, what, _ in differing)
    ):
        return RECLAIM_TIE
    return None


def timing_tie(parting: Parting) -> bool:
    """Whether the runs part at a tie no engine has one answer to (tie_reason)."""
    return tie_reason(parting) is not None


def _step(step: Step) -> str:
    workload, what, detail = step
    return f"{workload} {what}" + (f" ({detail})" if detail else "")


def _timeline(w: WorkloadResult | None) -> str:
    if w is None:
        return "(not in this run)"
    steps = [(at, what, detail) for at, what, detail in w.timeline]
    steps += [(end, "stopped", "") for _, end in w.intervals if end is not None]
    return "; ".join(
        f"{format_duration(at)} {what}" + (f" {detail}" if detail else "")
        for at, what, detail in sorted(steps, key=lambda s: s[0])
    )


def explain(a: Run, b: Run, labels: tuple[str, str] = ("a", "b")) -> str:
    """In words: how many workloads agree, the first parting, then each differing workload
    with both its verdicts and both its timelines. Empty when the runs agree throughout."""
    diffs, parting = differences(a, b), first_parting(a, b)
    if not diffs and parting is None:
        return ""
    la, lb = labels
    lines = [f"{len(a.workloads) - len(diffs)} of {len(a.workloads)} workloads agree"]
    if parting is not None:
        reason = tie_reason(parting)
        tie = f" ({reason}: a tie, agreement.tie_reason)" if reason else ""
        lines.append(f"the runs first part at {format_duration(parting.at)}{tie}:")
        lines += [f"  only {la}: {_step(s)}" for s in parting.only_a]
        lines += [f"  only {lb}: {_step(s)}" for s in parting.only_b]
        if parting.both:
            lines.append(f"  both: {'; '.join(_step(s) for s in parting.both)}")
    mine = {key(w): w for w in a.workloads}
    theirs = {key(w): w for w in b.workloads}
    for d in diffs:
        lines.append(f"{d.workload}: {la} {d.a}; {lb} {d.b}")
        lines.append(f"  {la}: {_timeline(mine.get(d.workload))}")
        lines.append(f"  {lb}: {_timeline(theirs.get(d.workload))}")
    return "\n".join(lines)
