"""What a replay found, and the report made of it: per workload (outcome, flavor, Kueue's
message, wait) and per team (admitted, pending, GPU-hours, wait p50/p90), as report.json and
as Markdown tables readable in a PR comment, with what changed between the base and the new
config when both were replayed.

report.json is exactly {"new": RUN, "base": RUN or null}, RUN being
{"workloads": [{name, namespace, queue, outcome, flavor, message, waitSeconds}],
 "teams": [{team, clusterQueue, admitted, pending, gpuHours, waitP50Seconds, waitP90Seconds}]};
replay.json, beside it, holds how each run was made (stack source, simulated and wall time,
notes), so tools reading report.json see only the documented shape.

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
MESSAGE_WIDTH: Final = 160  # Markdown cells; report.json keeps the whole message
MARKDOWN_LIMIT: Final = 50_000  # of a PR comment's 65536 characters; the quota diff shares it
CHANGES_SHOWN: Final = 40


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
    notes: list[str] = field(default_factory=list)

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
            [WorkloadResult(**w) for w in data["workloads"]],
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
            f"`{run.meta.source}` had nothing left to happen after "
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


# --- Markdown ------------------------------------------------------------------------------


def _wait(value: float | None, workloads: int) -> str:
    if workloads == 0:
        return "-"
    return "not admitted" if value is None else format_duration(value)


def _hours(value: float) -> str:
    return f"{value:.1f}"


def _cell(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= MESSAGE_WIDTH else flat[: MESSAGE_WIDTH - 1] + "…"


def _arrow(before: str, after: str) -> str:
    return after if before == after else f"{before} → **{after}**"


def clock_line(meta: RunMeta) -> str:
    ratio = meta.ratio
    speed = f" ({ratio:.0f}x)" if ratio else ""
    return (
        f"`{meta.source}`: {format_duration(meta.simulated_seconds)} of simulated time "
        f"replayed in {format_duration(meta.wall_seconds)}{speed}, {meta.events} events "
        f"(settling per event: median {meta.settle_p50_seconds:.1f}s, "
        f"longest {meta.settle_max_seconds:.1f}s)"
    )


def changes(base: Run, new: Run) -> list[str]:
    """One line per team figure that moved, then per workload whose outcome or flavor moved."""
    lines = []
    if base.meta.kueue_version != new.meta.kueue_version:
        lines.append(f"Kueue {base.meta.kueue_version} → {new.meta.kueue_version}")
    before = {t.team: t for t in base.teams}
    for t in new.teams:
        b = before.get(t.team)
        if b is None:
            lines.append(f"{t.team}: new team ({t.admitted} admitted, {t.pending} pending)")
            continue
        moved = []
        if b.pending != t.pending:
            moved.append(f"{b.pending} pending → {t.pending} pending")
        if b.admitted != t.admitted:
            moved.append(f"{b.admitted} admitted → {t.admitted} admitted")
        for label, x, y in (("p50", b.wait_p50, t.wait_p50), ("p90", b.wait_p90, t.wait_p90)):
            old, now = _wait(x, b.workloads), _wait(y, t.workloads)
            if old != now:
                moved.append(f"{label} wait {old} → {now}")
        if abs(b.gpu_hours - t.gpu_hours) >= 0.05:
            moved.append(f"GPU-hours {_hours(b.gpu_hours)} → {_hours(t.gpu_hours)}")
        if moved:
            lines.append(f"{t.team}: " + "; ".join(moved))
    for team in before.keys() - {t.team for t in new.teams}:
        lines.append(f"{team}: no longer in the stack")
    earlier = {(w.namespace, w.name): w for w in base.workloads}
    for w in new.workloads:
        o = earlier.get((w.namespace, w.name))
        if o is None:
            continue
        if (o.outcome, o.flavor) != (w.outcome, w.flavor):
            was = o.outcome + (f" ({o.flavor})" if o.flavor else "")
            now = w.outcome + (f" ({w.flavor})" if w.flavor else "")
            lines.append(f"{w.namespace}/{w.name}: {was} → {now}")
    return lines


def team_table(new: Run, base: Run | None) -> list[str]:
    lines = [
        "| Team | ClusterQueue | Admitted | Pending | GPU-hours | Wait p50 | Wait p90 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    before = {t.team: t for t in base.teams} if base else {}
    for t in new.teams:
        cells = [str(t.admitted), str(t.pending), _hours(t.gpu_hours)]
        cells += [_wait(t.wait_p50, t.workloads), _wait(t.wait_p90, t.workloads)]
        b = before.get(t.team)
        if b is not None:
            old = [str(b.admitted), str(b.pending), _hours(b.gpu_hours)]
            old += [_wait(b.wait_p50, b.workloads), _wait(b.wait_p90, b.workloads)]
            cells = [_arrow(x, y) for x, y in zip(old, cells, strict=True)]
        lines.append(f"| {t.team} | {t.cluster_queue} | " + " | ".join(cells) + " |")
    return lines


def workload_table(new: Run, base: Run | None) -> list[str]:
    lines = [
        "| Workload | Queue | Outcome | Flavor | Wait | GPUs | Message |",
        "| --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    old = {(w.namespace, w.name): w for w in base.workloads} if base else {}
    for w in new.workloads:
        outcome: str = w.outcome
        flavor = w.flavor or ""
        wait = "" if w.wait_seconds is None else format_duration(w.wait_seconds)
        o = old.get((w.namespace, w.name))
        if o is not None:
            outcome = _arrow(o.outcome, outcome)
            flavor = _arrow(o.flavor or "-", w.flavor or "-") if (o.flavor or w.flavor) else ""
            was = "" if o.wait_seconds is None else format_duration(o.wait_seconds)
            wait = _arrow(was or "-", wait or "-") if (was or wait) else ""
        lines.append(
            f"| {w.namespace}/{w.name} | {w.queue or ''} | {outcome} | {flavor} | {wait} | "
            f"{w.gpus} | {_cell(w.message)} |"
        )
    return lines


def _shown(new: Run, base: Run | None, room: int) -> tuple[Run, int]:
    """The workloads the table has room for: those that changed against the base (without
    one, those that did not simply finish) first, then the rest in order, as many as fit in
    `room` characters; and how many are left out."""
    old = {(w.namespace, w.name): w for w in base.workloads} if base else {}

    def moved(w: WorkloadResult) -> bool:
        o = old.get((w.namespace, w.name))
        if base is None:
            return w.outcome != "finished"
        return o is None or (o.outcome, o.flavor, o.wait_seconds) != (
            w.outcome,
            w.flavor,
            w.wait_seconds,
        )

    ranked = sorted(range(len(new.workloads)), key=lambda i: (not moved(new.workloads[i]), i))
    keep: set[int] = set()
    for i in ranked:
        trial = Run([new.workloads[j] for j in sorted(keep | {i})], new.teams, new.meta)
        if len("\n".join(workload_table(trial, base))) > room:
            break
        keep.add(i)
    chosen = Run([new.workloads[j] for j in sorted(keep)], new.teams, new.meta)
    return chosen, len(new.workloads) - len(keep)


def render(new: Run, base: Run | None, limit: int = MARKDOWN_LIMIT) -> str:
    """report.md: what changed (with a base), the team table, then every workload (as many
    as `limit` characters hold: a PR comment holds 65536, the quota diff shares it)."""
    title = f"### What-if: `{new.meta.source}`"
    if base is not None:
        title += f" against `{base.meta.source}`"
    replayed = [w for w in new.workloads if w.outcome in ADMITTED | PENDING]
    release = new.meta.kueue_version
    if base is not None and base.meta.kueue_version != release:
        release += f" (`{base.meta.source}` on its own release, {base.meta.kueue_version})"
    lines = [
        title,
        "",
        f"{len(new.workloads)} workloads ({len(replayed)} replayed) on the real Kueue "
        f"{release} and kube-scheduler, in a sandbox shaped like the stack. "
        "Simulated time jumps from event to event (a submission, a job's end) once Kueue and "
        "the scheduler have settled:",
        "",
    ]
    lines += [f"- {clock_line(r.meta)}" for r in ([base] if base else []) + [new]]
    lines.append("")
    if base is not None:
        moved = changes(base, new)
        lines += ["**What changed**", ""]
        if not moved:
            lines.append("- nothing: the same outcomes")
        lines += [f"- {m}" for m in moved[:CHANGES_SHOWN]]
        if len(moved) > CHANGES_SHOWN:
            lines.append(f"- ... and {len(moved) - CHANGES_SHOWN} more (report.json)")
        lines.append("")
    lines += team_table(new, base)
    notes = [n for r in ([base] if base else []) + [new] for n in r.meta.notes]
    tail = ["Notes:", ""] + [f"- {n}" for n in dict.fromkeys(notes)] + [""] if notes else []
    room = limit - len("\n".join(lines + tail)) - 200
    shown, left = _shown(new, base, room)
    lines += [
        "",
        f"<details><summary>Workloads ({len(new.workloads)})</summary>",
        "",
        *workload_table(shown, base),
    ]
    if left:
        lines.append(f"\n{left} more workloads (unchanged first left out) in report.json.")
    lines += ["", "</details>", "", *tail]
    return "\n".join(lines)
