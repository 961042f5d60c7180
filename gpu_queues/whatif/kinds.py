"""GPU-hours by workload kind (issue 40, item 7): how much GPU time each kind of the mix (Job,
Pod, JobSet, PyTorchJob, RayJob, ...) ran and how much it waited, so that a change which hurts
multi-node training more than single-GPU jobs says so (gpu_queues/whatif/regressions.py warns
of it by the team rule's WORSE_BY; gpu_queues/whatif/charts.py draws the table and the chart).

The kinds are the mix's own (WorkloadResult.kind, as the mix names it), in the order they first
appear in the run: nothing here lists them, so a kind an engine learns to replay is counted
without a change here. Only replayed workloads count (outcome in ADMITTED | PENDING; invalid
and unsupported ones ran nowhere), as in the team figures.

Per kind, from the run's own figures (exact, nothing sampled):
- `run_hours`: the GPU-hours its workloads ran, `gpus` x `gpu_seconds` / 3600 summed: the team
  table's GPU-hours rule, so the kinds' figures sum to the teams';
- `waited_hours`: the GPU-hours its workloads waited, `gpus` x the wait from submission to the
  first admission (report.py's wait) / 3600 summed; a workload never admitted waits until the
  end of the run's time (RunMeta.end: with a base, both runs are carried on to the same end,
  report.align), so a change that leaves a big job out counts its GPUs waiting throughout. A
  wait again after a preemption is not in it (the wait stops at the first admission; the
  "no longer finishes" warning is about those), nor is a workload that holds quota and fits
  no node (unschedulable: admitted, so its wait has ended);
- `workloads` replayed, `gpus` they ask for (summed) and `never`, those never admitted.

The figures are shown only when the replayed workloads of the run (or of either run, with a
base) are of more than one kind: with one kind they are the mix's totals, which the team table
already has (`shown`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gpu_queues.whatif.report import ADMITTED, PENDING, Run, WorkloadResult


@dataclass(frozen=True)
class KindFigures:
    """What a kind's replayed workloads ran and waited, in GPU-hours (the module's rules)."""

    kind: str
    workloads: int = 0
    gpus: int = 0
    run_hours: float = 0.0
    waited_hours: float = 0.0
    never: int = 0
    """Replayed workloads never admitted (waiting until the run's end)."""


def replayed(run: Run) -> list[WorkloadResult]:
    return [w for w in run.workloads if w.outcome in ADMITTED | PENDING]


def waited_seconds(w: WorkloadResult, end: float) -> float:
    """How long the workload waited for its first admission, a workload never admitted until
    `end` (the run's end); never less than 0."""
    until = w.submit_at + w.wait_seconds if w.wait_seconds is not None else end
    return max(0.0, until - w.submit_at)


def by_kind(run: Run) -> dict[str, KindFigures]:
    """Each kind of the run's replayed workloads and its figures, in the order of the run."""
    mine: dict[str, list[WorkloadResult]] = {}
    for w in replayed(run):
        mine.setdefault(w.kind, []).append(w)
    return {
        kind: KindFigures(
            kind=kind,
            workloads=len(ws),
            gpus=sum(w.gpus for w in ws),
            run_hours=math.fsum(w.gpus * w.gpu_seconds for w in ws) / 3600,
            waited_hours=math.fsum(w.gpus * waited_seconds(w, run.meta.end) for w in ws) / 3600,
            never=sum(w.wait_seconds is None for w in ws),
        )
        for kind, ws in mine.items()
    }


def gpu_hours(value: float) -> str:
    """GPU-hours as shown: one decimal, or two significant digits below 1 (0.0083: a figure
    that is not 0 never shows as 0.0)."""
    if value == 0 or value >= 1:
        return f"{value:.1f}"
    return f"{value:.2g}"


def kinds(runs: Iterable[Run | None]) -> list[str]:
    """The kinds replayed in any of the runs, in the order they first appear (base first)."""
    return list(dict.fromkeys(w.kind for run in runs if run is not None for w in replayed(run)))


def shown(new: Run, base: Run | None) -> bool:
    """Whether report.md has the figures by kind: when more than one kind was replayed."""
    return len(kinds([base, new])) > 1


def waiting(workloads: Iterable[WorkloadResult]) -> list[tuple[float, int]]:
    """(time, change) of the GPUs waiting for their first admission: a workload's GPUs from its
    submission to its first admission (never admitted: for good). The area under the step
    function up to the run's end is `waited_hours` x 3600 (gpu_queues.whatif.charts.steps)."""
    changes: list[tuple[float, int]] = []
    for w in workloads:
        if w.outcome not in ADMITTED | PENDING or not w.gpus:
            continue
        changes.append((w.submit_at, w.gpus))
        if w.wait_seconds is not None:
            changes.append((w.submit_at + max(0.0, w.wait_seconds), -w.gpus))
    return changes
