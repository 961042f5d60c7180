"""What a replay found, and the report made of it: per workload (outcome, flavor, Kueue's
message, wait) and per team (admitted, pending, GPU-hours, wait p50/p90), as report.json and
as Markdown tables readable in a PR comment (gpu_queues/whatif/markdown.py), with what
changed between the base and the new config when both were replayed.

report.json is exactly {"new": RUN, "base": RUN or null}, RUN being
{"workloads": [{name, namespace, queue, outcome, flavor, message, waitSeconds}],
 "teams": [{team, clusterQueue, admitted, pending, gpuHours, waitP50Seconds, waitP90Seconds}]};
replay.json, beside it, holds how each run was made (stack source, simulated and wall time,
notes), so tools reading report.json see only the documented shape.

What an engine hands back (the run file, `Run.to_json`/`Run.from_json`) has more per workload
than report.json shows; the charts of report.md (gpu_queues/whatif/charts.py) are drawn from:
- `submit_at`: when the workload was submitted, in simulated seconds from the start;
- `intervals`: its runs, in order, as [start, end] pairs of simulated seconds: a run starts
  when the workload holds quota and every pod it needs runs (its GPUs are in use from then),
  and ends when that stops (it finished, was evicted or preempted, a pod stopped); `end` is
  null (None) for the run still going when the replay ended, which lasts until the end of
  the run's time (RunMeta.horizon_seconds, else simulated_seconds). Runs do not overlap and
  none is empty (end > start). The GPU seconds of the runs sum to `gpu_seconds`. A workload
  that never ran has none. An engine that fills `intervals` need not fill anything else for
  the charts: the GPUs held are `gpus`, the team `team`, the flavor `flavor`;
and per run, `RunMeta.flavor_gpus`: the GPUs each ResourceFlavor's nodes offer (what the
stack declares, count x per-node GPUs or its capacity), for the utilization table.
None of these is in report.json.

Counting rules (docs/what-if.md):
- outcome at the end: finished, admitted (running), unschedulable (admitted, its pods fit no
  node), preempted (evicted by preemption and waiting again), pending (never admitted), or
  invalid / unsupported (not replayed; the message says why);
- a team's `admitted` counts finished, admitted and unschedulable workloads; `pending` counts
  pending and preempted ones; invalid and unsupported workloads count in neither;
- wait: from submission to the first admission, in simulated seconds; a workload never
  admitted waits longer than the replay, so the percentiles (nearest rank) count it as
  waiting forever, and a percentile that falls on one is null ("not admitted" in Markdown);
- GPU-hours: GPUs held by the workload's running pods x simulated time they ran.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final, Literal

from gpu_queues.escape import code
from gpu_queues.whatif.durations import format_duration

Outcome = Literal[
    "finished", "admitted", "unschedulable", "preempted", "pending", "invalid", "unsupported"
]
ADMITTED: Final = frozenset({"finished", "admitted", "unschedulable"})
PENDING: Final = frozenset({"pending", "preempted"})
PUBLIC_WORKLOAD_KEYS: Final = (
    "name",
    "namespace",
    "queue",
    "outcome",
    "flavor",
    "message",
    "waitSeconds",
)
PUBLIC_TEAM_KEYS: Final = (
    "team",
    "clusterQueue",
    "admitted",
    "pending",
    "gpuHours",
    "waitP50Seconds",
    "waitP90Seconds",
)


@dataclass
class WorkloadResult:
    name: str
    namespace: str
    queue: str | None
    outcome: Outcome
    flavor: str | None = None
    message: str | None = None
    wait_seconds: float | None = None
    # Not in report.json (its shape is fixed); used for the team figures and the Markdown.
    kind: str = "Job"
    team: str | None = None
    cluster_queue: str | None = None
    gpus: int = 0
    gpu_seconds: float = 0.0
    submit_at: float = 0.0
    preemptions: int = 0
    first_flavor: str | None = None
    """The flavor of its first admission (the fast engine records it; `flavor` is the last)."""
    intervals: list[tuple[float, float | None]] = field(default_factory=list)
    """The workload's runs, (start, end or None while running at the end), in simulated
    seconds (the module's docstring has the rules; the charts are drawn from them)."""
    timeline: list[tuple[float, str, str]] = field(default_factory=list)
    """Its hold on quota, in order: (simulated second, "admitted", flavor) and (second,
    "evicted", reason), as the engine saw it; how two runs of one mix are set side by side
    (gpu_queues/whatif/agreement.py). Not in report.json."""
    workload_uid: str | None = None
    """Its Workload's UID, where a cluster gave it one (the sandbox engine): the cross-check
    hands it to the fast engine, so that the ties Kueue breaks by UID fall the same way."""
    admission_order: tuple[int, ...] = ()
    """Where each of its admissions came among all the run's, as a cluster's watch saw them
    (the sandbox engine): the cross-check hands that order to the fast engine, so that the
    pods of jobs admitted together reach the scheduler in the same order. Not in report.json."""

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "queue": self.queue,
            "outcome": self.outcome,
            "flavor": self.flavor,
            "message": self.message,
            "waitSeconds": None if self.wait_seconds is None else round(self.wait_seconds),
        }


@dataclass
class TeamResult:
    team: str
    cluster_queue: str
    admitted: int
    pending: int
    gpu_hours: float
    wait_p50: float | None
    wait_p90: float | None
    workloads: int = 0
    """Replayed workloads of the team (invalid and unsupported ones excluded)."""

    def public(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "clusterQueue": self.cluster_queue,
            "admitted": self.admitted,
            "pending": self.pending,
            "gpuHours": round(self.gpu_hours, 2),
            "waitP50Seconds": None if self.wait_p50 is None else round(self.wait_p50),
            "waitP90Seconds": None if self.wait_p90 is None else round(self.wait_p90),
        }


@dataclass
class RunMeta:
    """How a run was made: what it replayed, and the clock."""

    stack: str
    source: str
    """Which stack file: `staging (work tree)`, `staging@1a2b3c4`."""
    simulated_seconds: float = 0.0
    """Simulated time the replay went through (to its last event, or --until)."""
    horizon_seconds: float | None = None
    """Until when GPU-hours count, when later than simulated_seconds (see `extend`)."""
    wall_seconds: float = 0.0
    events: int = 0
    settle_p50_seconds: float = 0.0
    settle_max_seconds: float = 0.0
    quiet_seconds: float = 0.0
    """How long the cluster had to stay unchanged to count as settled."""
    longest_silence_seconds: float = 0.0
    """The longest pause between two changes within one event (kept below quiet_seconds)."""
    kueue_version: str = ""
    """The Kueue release the run was made on (the side's stack file's own)."""
    kueue_image: str = ""
    """The image of the controller pod that ran it, read from the running sandbox."""
    kueue_binary: str = ""
    """The controller binary that played that pod (.toolchain/bin/kueue-<release>)."""
    flavor_gpus: dict[str, int] = field(default_factory=dict)
    """GPUs each ResourceFlavor's nodes offer, as the stack declares them (the utilization
    table's GPU-hours available: these x the run's time)."""
    notes: list[str] = field(default_factory=list)
    scheduling_cycles: int | None = None
    """Kueue's scheduling cycles the fast engine ran (None on the sandbox, which does not count
    them): the bench's per-cycle cost (docs/what-if.md, Speed)."""
    engine: str = "sandbox"
    """Which engine replayed it: `fast` (Kueue's own code on a simulated clock, in one
    process) or `sandbox` (the real control plane); docs/what-if.md, Engines."""

    @property
    def end(self) -> float:
        """Until when the run counts: the other run's end when carried on to it (`extend`)."""
        return max(self.horizon_seconds or 0.0, self.simulated_seconds)

    @property
    def ratio(self) -> float | None:
        """Simulated seconds per wall second of the replay itself."""
        if self.wall_seconds <= 0:
            return None
        return self.simulated_seconds / self.wall_seconds


@dataclass
class Run:
    workloads: list[WorkloadResult]
    teams: list[TeamResult]
    meta: RunMeta

    def public(self) -> dict[str, Any]:
        return {
            "workloads": [w.public() for w in self.workloads],
            "teams": [t.public() for t in self.teams],
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, for the run file the sandbox hands back to the host."""
        return {
            "workloads": [asdict(w) for w in self.workloads],
            "teams": [asdict(t) for t in self.teams],
            "meta": asdict(self.meta),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Run:
        return cls(
            [
                WorkloadResult(
                    **{
                        **w,
                        "intervals": [(start, end) for start, end in w.get("intervals") or []],
                        "timeline": [tuple(step) for step in w.get("timeline") or []],
                        "admission_order": tuple(w.get("admission_order") or ()),
                    }
                )
                for w in data["workloads"]
            ],
            [TeamResult(**t) for t in data["teams"]],
            RunMeta(**data["meta"]),
        )


# --- figures ---------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile; inf (never admitted) or no values give None."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    value = ordered[rank - 1]
    return None if math.isinf(value) else value


def team_results(
    workloads: Iterable[WorkloadResult], teams: Iterable[tuple[str, str]]
) -> list[TeamResult]:
    """One row per team of the stack (team, ClusterQueue), in the stack's order."""
    rows = []
    listed = list(workloads)
    for team, cq in teams:
        mine = [w for w in listed if w.team == team and w.outcome in ADMITTED | PENDING]
        waits = [math.inf if w.wait_seconds is None else w.wait_seconds for w in mine]
        rows.append(
            TeamResult(
                team=team,
                cluster_queue=cq,
                admitted=sum(w.outcome in ADMITTED for w in mine),
                pending=sum(w.outcome in PENDING for w in mine),
                gpu_hours=sum(w.gpu_seconds * w.gpus for w in mine) / 3600,
                wait_p50=percentile(waits, 50),
                wait_p90=percentile(waits, 90),
                workloads=len(mine),
            )
        )
    return rows


def extend(run: Run, end: float, teams: Iterable[tuple[str, str]]) -> Run:
    """The run carried on until `end`, simulated. A replay stops at its last event, after
    which nothing changes but the clock: running workloads keep running. So extending it is
    exact, and two runs compared side by side count GPU-hours over the same time."""
    reached = run.meta.horizon_seconds or run.meta.simulated_seconds
    if end <= reached:
        return run
    extra = end - reached
    workloads = [
        replace(w, gpu_seconds=w.gpu_seconds + extra) if w.outcome == "admitted" else w
        for w in run.workloads
    ]
    meta = replace(
        run.meta,
        horizon_seconds=end,
        notes=[
            *run.meta.notes,
            f"{code(run.meta.source)} had nothing left to happen after "
            f"{format_duration(run.meta.simulated_seconds)}; its running workloads are counted "
            f"until {format_duration(end)}, the end of the other run",
        ],
    )
    return Run(workloads, team_results(workloads, teams), meta)


def align(base: Run, new: Run) -> tuple[Run, Run]:
    """Both runs over the same simulated time (the longer one's)."""
    end = max(
        base.meta.horizon_seconds or base.meta.simulated_seconds,
        new.meta.horizon_seconds or new.meta.simulated_seconds,
    )
    return (
        extend(base, end, [(t.team, t.cluster_queue) for t in base.teams]),
        extend(new, end, [(t.team, t.cluster_queue) for t in new.teams]),
    )


def report_json(new: Run, base: Run | None) -> dict[str, Any]:
    """report.json: exactly {"new", "base"}, the shape other tools read."""
    return {"new": new.public(), "base": base.public() if base is not None else None}


def replay_json(new: Run, base: Run | None) -> dict[str, Any]:
    """replay.json: how each run was made (source, the clock's figures, notes), kept out of
    report.json so that file has exactly its documented shape."""
    return {"new": asdict(new.meta), "base": asdict(base.meta) if base is not None else None}
