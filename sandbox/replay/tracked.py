"""One workload through the replay (`Tracked`: when it was admitted, ran, was evicted), and what
it comes to in the report (`result`, gpu_queues.whatif.report's WorkloadResult)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.report import WorkloadResult
from gpu_queues.whatif.workloads import classify, pod_phase, pod_unschedulable, preemptions


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
    placed: list[tuple[float, str, str]] = field(default_factory=list)
    """When each run's pods all ran, and on which nodes: (second, "ran", nodes)."""
    timeline: list[tuple[float, str, str]] = field(default_factory=list)
    """WorkloadResult.timeline: its admissions and evictions, as the watch saw them."""


def close_run(t: Tracked, now: float) -> None:
    """The workload's current run ended at `now`; a run that began and ended at the same
    simulated instant used no GPU time and is dropped (runs are never empty)."""
    start, _ = t.intervals.pop()
    if now > start:
        t.intervals.append((start, now))


def all_running(t: Tracked, pods: list[dict[str, Any]]) -> bool:
    """Every pod the workload needs is running (a Job's parallelism)."""
    running = sum(pod_phase(p) == "Running" for p in pods)
    return running >= max(t.entry.pods, 1)


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
    return found


def outcome(
    e: Entry,
    wl: dict[str, Any] | None,
    *,
    running: bool,
    stuck: str | None,
    evictions: list[str],
    admitted_at: float | None,
    gpu_seconds: float,
    problem: str | None,
    intervals: list[tuple[float, float | None]] | tuple[()] = (),
    timeline: list[tuple[float, str, str]] | tuple[()] = (),
) -> WorkloadResult:
    """The report's row for a replayed workload, from what either engine saw: its Workload at
    the end, whether its pods all run, the scheduler's message for a pod that fits no node,
    its evictions ("reason: message", oldest first) and when it was first admitted."""
    base = WorkloadResult(
        e.name,
        e.namespace,
        e.queue,
        "pending",
        kind=e.kind,
        team=e.team,
        cluster_queue=e.cluster_queue,
        gpus=e.gpus,
        submit_at=e.submit_at,
        gpu_seconds=gpu_seconds,
        intervals=list(intervals),
        timeline=list(timeline),
    )
    if problem or wl is None:
        base.outcome, base.message = "invalid", problem or "Kueue made no Workload for it"
        return base
    base.wait_seconds = None if admitted_at is None else admitted_at - e.submit_at
    base.preemptions = max(preemptions(wl), sum("Preempted" in x for x in evictions))
    state, base.flavor, message = classify(wl, running, stuck, bool(evictions and base.preemptions))
    base.outcome = state
    history = f"evicted {len(evictions)}x, last: {evictions[-1]}" if evictions else None
    if state in ("finished", "admitted"):
        message = history
    elif state == "pending" and history:
        message = f"{message} ({history})"
    elif state == "preempted" and len(evictions) > 1:
        message = f"evicted {len(evictions)}x, last: {message}"
    base.message = message
    return base


def not_replayed(e: Entry) -> WorkloadResult:
    """An entry of the mix the replay did not submit: unsupported, or invalid as read."""
    return WorkloadResult(
        e.name,
        e.namespace,
        e.queue,
        "unsupported" if e.status == "unsupported" else "invalid",
        message=e.problem,
        kind=e.kind,
        team=e.team,
        cluster_queue=e.cluster_queue,
        gpus=e.gpus,
        submit_at=e.submit_at,
    )
