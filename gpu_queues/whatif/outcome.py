"""What a replayed workload comes to in the report (gpu_queues.whatif.report's WorkloadResult),
from what either engine saw: one set of rules for the fast engine (gpu_queues.whatif.fast) and
the sandbox's (sandbox/replay/tracked.py), so both report alike."""

from __future__ import annotations

from typing import Any

from gpu_queues.whatif.mix import DELETED_WHEN_DONE, Entry
from gpu_queues.whatif.podgroups import missing
from gpu_queues.whatif.podsets import pod_sets
from gpu_queues.whatif.report import WorkloadResult
from gpu_queues.whatif.workloads import (
    admitted_flavor,
    classify,
    holds_quota,
    pending_message,
    preemptions,
)


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
    deleted: bool = False,
) -> WorkloadResult:
    """The report's row for a replayed workload, from what either engine saw: its Workload at
    the end, whether its pods all run, the scheduler's message for a pod that fits no node,
    its evictions ("reason: message", oldest first) and when it was first admitted. `deleted`:
    the Workload (`wl` as last seen) went with its owner, deleted by its user at its time
    (DELETED_WHEN_DONE): it is finished."""
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
    if wl is None and not problem and (short := missing(e)):
        base.message = (
            f"Kueue makes no Workload for a pod group until all its pods exist: "
            f"{short} of its {e.pods + short} are not in the mix"
        )
        return base
    if problem or wl is None:
        base.outcome, base.message = "invalid", problem or "Kueue made no Workload for it"
        return base
    base.wait_seconds = None if admitted_at is None else admitted_at - e.submit_at
    base.preemptions = max(preemptions(wl), sum("Preempted" in x for x in evictions))
    # A kind deleted when its time is up (DELETED_WHEN_DONE) ends with its owner gone: finished.
    gone_preempted = bool(evictions and base.preemptions) and e.kind not in DELETED_WHEN_DONE
    state, base.flavor, message = classify(
        wl, running, stuck, bool(evictions and base.preemptions), gone_preempted=gone_preempted
    )
    if deleted and e.kind in DELETED_WHEN_DONE:
        state, base.flavor, message = "finished", admitted_flavor(wl), None
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


def replicas_row(
    e: Entry, row: WorkloadResult, replicas: list[dict[str, Any]], admitted_at: float | None
) -> WorkloadResult:
    """A Deployment's row (`row`, from the Workload of one of its pods: one not admitted when
    there is one), its pods each a Workload of its own to Kueue, `replicas` the current ones';
    or a LeaderWorkerSet's, its groups each a Workload of its own, `replicas` theirs.
    It is admitted once all its replicas have been (`admitted_at`, when the last one first
    was): until then pending, saying how many of its pods (groups) are admitted and Kueue's
    message for one that is not. Its flavor is its admitted pods'; when they differ, the
    message says so."""
    if row.outcome in ("invalid", "unsupported"):
        return row
    held = [w for w in replicas if holds_quota(w)]
    flavors = sorted({f for w in held if (f := admitted_flavor(w))})
    notes: list[str] = []
    wanted, unit = e.pods, "pods"
    if e.kind == "LeaderWorkerSet":
        wanted, unit = max((ps.copies for ps in pod_sets(e.kind, e.manifest)), default=1), "groups"
        if wanted == 1:  # one Workload: the row is its own, as the sandbox engine's row is
            return row
    if len(held) < wanted and row.outcome != "finished":
        waiting = next((w for w in replicas if not holds_quota(w)), None)
        # Once admitted, the row's own message (classify's) is the waiting one's already.
        says = pending_message(waiting) if waiting is not None and admitted_at is None else None
        notes.append(f"{len(held)} of {wanted} {unit} admitted" + (f": {says}" if says else ""))
    if admitted_at is None and row.outcome != "finished":
        row.outcome, row.wait_seconds, row.message = "pending", None, None
    if len(flavors) > 1:
        row.flavor = ", ".join(flavors)
        notes.append(f"its pods were admitted to different flavors: {row.flavor}")
    if notes:
        row.message = "; ".join([*notes, *([row.message] if row.message else [])])
    return row


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
