"""What a change makes worse, by one rule the PR preview's warnings and the quota advisor
(gpu_queues/advise) share: a team whose p90 wait gets more than 10% worse than the base's, a
workload the base admitted that the change no longer admits (or admits onto no node), and one
that finished on the base and is preempted or waiting again at the change's end (its wait,
counted to its first admission, hides that). Besides, for the PR preview: a workload kind
(JobSet, PyTorchJob, ...) whose waited GPU-hours get more than 10% worse, when the mix replays
more than one kind (gpu_queues/whatif/kinds.py), so a change that hurts multi-node training
more than single-GPU jobs says so; the advisor does not weigh that one (goal.regressed).
One threshold, WORSE_BY, for the teams' waits and the kinds' (`worse`).

A p90 wait of None means the percentile falls on a workload never admitted (report.py), so it
is worse than any time; a team whose base p90 is None cannot get worse by this rule.
"""

from __future__ import annotations

from typing import Final

from gpu_queues.escape import code, text
from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.kinds import KindFigures, by_kind, gpu_hours, shown
from gpu_queues.whatif.report import ADMITTED, Run, TeamResult, WorkloadResult

WORSE_BY: Final = 0.10
"""How much worse a team's p90 wait, or a kind's waited GPU-hours, may get before it counts
as a regression (10%)."""
BEGIN: Final = "<!-- regressions -->"
END: Final = "<!-- /regressions -->"
"""The markers around report.md's warning lines, which the PR comment lifts to its top
(gpu_queues.tools.pr_comment)."""


def worse(before: float, after: float, worse_by: float = WORSE_BY) -> bool:
    """The one rule: whether `after` is more than `worse_by` worse (larger) than `before`."""
    return after > before * (1 + worse_by)


def p90_regressed(base: TeamResult, new: TeamResult, worse_by: float = WORSE_BY) -> bool:
    """Whether `new`'s p90 wait is more than `worse_by` worse than `base`'s."""
    if base.workloads == 0 or base.wait_p90 is None:
        return False
    if new.wait_p90 is None:
        return new.workloads > 0
    return worse(base.wait_p90, new.wait_p90, worse_by)


def kind_regressed(base: KindFigures, new: KindFigures, worse_by: float = WORSE_BY) -> bool:
    """Whether a kind's waited GPU-hours on `new` are more than `worse_by` worse than on
    `base`; a kind replayed on one side only cannot regress (nothing to compare)."""
    if base.workloads == 0 or new.workloads == 0:
        return False
    return worse(base.waited_hours, new.waited_hours, worse_by)


def regressed_kinds(
    base: Run, new: Run, worse_by: float = WORSE_BY
) -> list[tuple[KindFigures, KindFigures]]:
    """(base, change) figures of each kind whose waited GPU-hours regressed, in the change's
    order; none when the runs replay a single kind (kinds.shown). The PR preview warns of
    them and the advisor avoids them."""
    if not shown(new, base):
        return []
    before = by_kind(base)
    return [
        (before[kind], k)
        for kind, k in by_kind(new).items()
        if kind in before and kind_regressed(before[kind], k, worse_by)
    ]


def kind_regressions(base: Run, new: Run, worse_by: float = WORSE_BY) -> list[str]:
    """One warning line per kind whose waited GPU-hours regressed (regressed_kinds)."""
    source = code(base.meta.source)
    lines = []
    for b, k in regressed_kinds(base, new, worse_by):
        kind = k.kind
        growth = f", +{(k.waited_hours / b.waited_hours - 1) * 100:.0f}%" if b.waited_hours else ""
        lines.append(
            f"⚠️ kind {text(kind)}: waited GPU-hours {gpu_hours(b.waited_hours)} → "
            f"{gpu_hours(k.waited_hours)}{growth} (more than {worse_by:.0%} worse than {source})"
        )
    return lines


def _wait(value: float | None) -> str:
    return "not admitted" if value is None else format_duration(value)


def regressions(base: Run, new: Run, worse_by: float = WORSE_BY) -> list[str]:
    """One warning line per team whose p90 wait regressed, then per kind whose waited
    GPU-hours did (kind_regressions), then per workload that no longer fits (admitted on the
    base, never admitted or admitted onto no node on the change) or no longer finishes."""
    lines = []
    source = code(base.meta.source)  # Markdown lines: every name through gpu_queues.escape
    before = {t.team: t for t in base.teams}
    for t in new.teams:
        b = before.get(t.team)
        if b is None or not p90_regressed(b, t, worse_by):
            continue
        growth = ""
        if t.wait_p90 is not None and b.wait_p90:
            growth = f", +{(t.wait_p90 / b.wait_p90 - 1) * 100:.0f}%"
        lines.append(
            f"⚠️ team {text(t.team)}: p90 wait {_wait(b.wait_p90)} → {_wait(t.wait_p90)}{growth} "
            f"(more than {worse_by:.0%} worse than {source})"
        )
    lines += kind_regressions(base, new, worse_by)
    for w in lost(base, new):
        if w.outcome == "unschedulable":
            lines.append(
                f"⚠️ {_name(w)} no longer fits: admitted, but its pods fit no node "
                f"(it ran on {source})"
            )
        else:
            why = f": {text(w.message)}" if w.message else ""
            lines.append(
                f"⚠️ {_name(w)} no longer fits: admitted on {source}, never admitted here{why}"
            )
    for w in unfinished(base, new):
        lines.append(
            f"⚠️ {_name(w)} no longer finishes: finished on {source}, {w.outcome} at the end here"
        )
    return lines


def _name(w: WorkloadResult) -> str:
    return text(f"{w.namespace}/{w.name}")


def unfinished(base: Run, new: Run) -> list[WorkloadResult]:
    """The workloads that finished on the base and, admitted at least once on the change, are
    still running, preempted or pending again at its end (lost() has the others)."""
    earlier = {(w.namespace, w.name): w for w in base.workloads}
    gone = {(w.namespace, w.name) for w in lost(base, new)}
    return [
        w
        for w in new.workloads
        if (o := earlier.get((w.namespace, w.name))) is not None
        and o.outcome == "finished"
        and w.outcome in ("preempted", "pending")
        and (w.namespace, w.name) not in gone
    ]


def lost(base: Run, new: Run) -> list[WorkloadResult]:
    """The workloads of `new` that no longer fit: admitted onto nodes on the base, never
    admitted (or admitted onto no node) on the change."""
    earlier = {(w.namespace, w.name): w for w in base.workloads}
    out = []
    for w in new.workloads:
        o = earlier.get((w.namespace, w.name))
        if o is None or o.outcome not in ADMITTED or o.outcome == "unschedulable":
            continue
        never = w.outcome in ("pending", "preempted") and w.wait_seconds is None
        if never or w.outcome == "unschedulable":
            out.append(w)
    return out


def block(lines: list[str]) -> list[str]:
    """The warning lines between report.md's markers (nothing when there are none)."""
    if not lines:
        return []
    return [BEGIN, *[f"{line}  " for line in lines], END, ""]
