"""One workload through the sandbox's replay (`Tracked`: when it was admitted, ran, was evicted),
and what it comes to in the report (`result`, through the rules both engines share:
gpu_queues.whatif.outcome)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.outcome import outcome
from gpu_queues.whatif.report import WorkloadResult
from gpu_queues.whatif.workloads import pod_phase, pod_unschedulable


@dataclass
class Tracked:
    """One replayed workload through the replay."""

    entry: Entry
    uid: str | None = None
    submitted: bool = False
    problem: str | None = None
    admitted_at: float | None = None
    started_at: float | None = None
    run: int = 0
    """Counts the workload's runs, so that the end of an earlier run (before a preemption)
    is not taken for the end of the current one."""
    gpu_seconds: float = 0.0
    intervals: list[tuple[float, float | None]] = field(default_factory=list)
    """Its runs so far (WorkloadResult.intervals): opened and closed with started_at."""
    finished: bool = False
    completing: bool = False
    evictions: list[str] = field(default_factory=list)
    workload_uid: str | None = None
    admission_order: tuple[int, ...] = ()
    """WorkloadResult.admission_order."""
    run_pods: frozenset[str] = frozenset()
    """The UIDs of the pods of its current run."""
    placed: list[tuple[float, str, str]] = field(default_factory=list)
    """When each run's pods all ran, and on which nodes: (second, "ran", nodes)."""
    timeline: list[tuple[float, str, str]] = field(default_factory=list)
    """WorkloadResult.timeline: its admissions and evictions, as the watch saw them."""


def close_run(t: Tracked, now: float) -> None:
    """The workload's current run ended at `now`; a run that began and ended at the same
    simulated instant used no GPU time and is dropped (runs are never empty), and so is the
    note of where its pods ran (the fast engine drops both alike)."""
    start, _ = t.intervals.pop()
    if now > start:
        t.intervals.append((start, now))
    elif t.placed and t.placed[-1][0] == start:
        t.placed.pop()


def all_running(t: Tracked, pods: list[dict[str, Any]]) -> bool:
    """Every pod the workload needs is running (a Job's parallelism)."""
    running = sum(pod_phase(p) == "Running" for p in pods)
    return running >= max(t.entry.pods, 1)


def running_pods(pods: list[dict[str, Any]]) -> frozenset[str]:
    """The UIDs of the workload's running pods."""
    return frozenset(
        str((p.get("metadata") or {}).get("uid") or "") for p in pods if pod_phase(p) == "Running"
    )


def nodes_of(pods: list[dict[str, Any]]) -> str:
    """The nodes a workload's running pods are on, one per pod, in name order."""
    names = [
        str((p.get("spec") or {}).get("nodeName") or "") for p in pods if pod_phase(p) == "Running"
    ]
    return ", ".join(sorted(names))


def result(t: Tracked, wl: dict[str, Any] | None, pods: list[dict[str, Any]]) -> WorkloadResult:
    """What became of the workload, as the report shows it."""
    stuck = next((m for p in pods if (m := pod_unschedulable(p))), None)
    found = outcome(
        t.entry,
        wl,
        running=all_running(t, pods),
        stuck=stuck,
        evictions=t.evictions,
        admitted_at=t.admitted_at,
        gpu_seconds=t.gpu_seconds,
        problem=t.problem,
        intervals=t.intervals,
        timeline=t.timeline,
    )
    found.workload_uid = t.workload_uid
    found.admission_order = t.admission_order
    return found
