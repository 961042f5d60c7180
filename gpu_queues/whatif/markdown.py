"""The what-if report as Markdown readable in a PR comment: the clock line, the team table,
the waits, the flavors' utilization and the charts (gpu_queues/whatif/charts.py), the
GPU-hours by workload kind when more than one is replayed (gpu_queues/whatif/kinds.py), the
workload table, and what changed between the base and the new config, kept within a PR
comment's size (the runs and their figures are in gpu_queues/whatif/report.py). Every name,
source and message in it went through gpu_queues.escape: a mix's names cannot add Markdown or
HTML to the comment.
"""

from __future__ import annotations

from typing import Final

from gpu_queues.escape import code, text
from gpu_queues.whatif.charts import sections
from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.regressions import block, regressions
from gpu_queues.whatif.report import ADMITTED, PENDING, Run, RunMeta, WorkloadResult

MESSAGE_WIDTH: Final = 160  # Markdown cells; report.json keeps the whole message
MARKDOWN_LIMIT: Final = 50_000  # of a PR comment's 65536 characters; the quota diff shares it
CHANGES_SHOWN: Final = 40


def _wait(value: float | None, workloads: int) -> str:
    if workloads == 0:
        return "-"
    return "not admitted" if value is None else format_duration(value)


def _hours(value: float) -> str:
    return f"{value:.1f}"


def _cell(message: str | None) -> str:
    return text(message, MESSAGE_WIDTH) if message else ""


def _name(namespace: str, name: str) -> str:
    return text(f"{namespace}/{name}")


def _arrow(before: str, after: str) -> str:
    return after if before == after else f"{before} → **{after}**"


def clock_line(meta: RunMeta) -> str:
    ratio = meta.ratio
    speed = f" ({ratio:.0f}x)" if ratio else ""
    if meta.engine == "fast":
        return (
            f"{code(meta.source)}: {format_duration(meta.simulated_seconds)} of simulated time "
            f"replayed in {meta.wall_seconds:.1f}s{speed}, {meta.events} instants"
        )
    return (
        f"{code(meta.source)}: {format_duration(meta.simulated_seconds)} of simulated time "
        f"replayed in {format_duration(meta.wall_seconds)}{speed}, {meta.events} events "
        f"(settling per event: median {meta.settle_p50_seconds:.1f}s, "
        f"longest {meta.settle_max_seconds:.1f}s)"
    )


def changes(base: Run, new: Run) -> list[str]:
    """One line per team figure that moved, then per workload whose outcome or flavor moved."""
    lines = []
    if base.meta.kueue_version != new.meta.kueue_version:
        lines.append(f"Kueue {text(base.meta.kueue_version)} → {text(new.meta.kueue_version)}")
    before = {t.team: t for t in base.teams}
    for t in new.teams:
        b = before.get(t.team)
        if b is None:
            lines.append(f"{text(t.team)}: new team ({t.admitted} admitted, {t.pending} pending)")
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
            lines.append(f"{text(t.team)}: " + "; ".join(moved))
    for team in before.keys() - {t.team for t in new.teams}:
        lines.append(f"{text(team)}: no longer in the stack")
    earlier = {(w.namespace, w.name): w for w in base.workloads}
    for w in new.workloads:
        o = earlier.get((w.namespace, w.name))
        if o is None:
            continue
        if (o.outcome, o.flavor) != (w.outcome, w.flavor):
            was = o.outcome + (f" ({text(o.flavor)})" if o.flavor else "")
            now = w.outcome + (f" ({text(w.flavor)})" if w.flavor else "")
            lines.append(f"{_name(w.namespace, w.name)}: {was} → {now}")
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
        lines.append(f"| {text(t.team)} | {text(t.cluster_queue)} | " + " | ".join(cells) + " |")
    return lines


_WORKLOAD_HEADER = [
    "| Workload | Queue | Outcome | Flavor | Wait | GPUs | Message |",
    "| --- | --- | --- | --- | ---: | ---: | --- |",
]


def _workload_row(w: WorkloadResult, o: WorkloadResult | None) -> str:
    """One workload's row; `o` the same workload in the base, when there is one."""
    outcome: str = w.outcome
    flavor = text(w.flavor or "")
    wait = "" if w.wait_seconds is None else format_duration(w.wait_seconds)
    if o is not None:
        outcome = _arrow(o.outcome, outcome)
        if o.flavor or w.flavor:
            flavor = _arrow(
                text(o.flavor) if o.flavor else "-", text(w.flavor) if w.flavor else "-"
            )
        was = "" if o.wait_seconds is None else format_duration(o.wait_seconds)
        wait = _arrow(was or "-", wait or "-") if (was or wait) else ""
    return (
        f"| {_name(w.namespace, w.name)} | {text(w.queue or '')} | {outcome} | {flavor} | {wait} | "
        f"{w.gpus} | {_cell(w.message)} |"
    )


def _base_of(base: Run | None) -> dict[tuple[str, str], WorkloadResult]:
    return {(w.namespace, w.name): w for w in base.workloads} if base else {}


def workload_table(new: Run, base: Run | None) -> list[str]:
    old = _base_of(base)
    return _WORKLOAD_HEADER + [
        _workload_row(w, old.get((w.namespace, w.name))) for w in new.workloads
    ]


def _shown(new: Run, base: Run | None, room: int) -> tuple[Run, int]:
    """The workloads the table has room for: those that changed against the base (without
    one, those that did not simply finish) first, then the rest in order, as many as fit in
    `room` characters; and how many are left out."""
    old = _base_of(base)

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
    # A row reads the same whichever others are shown, so the table's length is the header's
    # plus each shown row's and a line break: summed once, not rendered again for each row.
    keep: set[int] = set()
    size = len("\n".join(_WORKLOAD_HEADER))
    for i in ranked:
        w = new.workloads[i]
        size += 1 + len(_workload_row(w, old.get((w.namespace, w.name))))
        if size > room:
            break
        keep.add(i)
    chosen = Run([new.workloads[j] for j in sorted(keep)], new.teams, new.meta)
    return chosen, len(new.workloads) - len(keep)


def render(new: Run, base: Run | None, limit: int = MARKDOWN_LIMIT) -> str:
    """report.md: with a base, a warning line per regression first, then what changed; the
    team table, then every workload (as many as `limit` characters hold: a PR comment holds
    65536, the quota diff shares it)."""
    title = f"### What-if: {code(new.meta.source)}"
    if base is not None:
        title += f" against {code(base.meta.source)}"
    replayed = [w for w in new.workloads if w.outcome in ADMITTED | PENDING]
    release = text(new.meta.kueue_version)
    if base is not None and base.meta.kueue_version != new.meta.kueue_version:
        release += (
            f" ({code(base.meta.source)} on its own release, {text(base.meta.kueue_version)})"
        )
    if new.meta.engine == "fast":
        how = (
            f"{len(new.workloads)} workloads ({len(replayed)} replayed) on Kueue {release}'s own "
            "scheduler, queues and controllers, on a simulated clock that jumps from event to "
            "event (a submission, a job's end) once they are quiet; pods are placed on the "
            "nodes the stack declares:"
        )
    else:
        how = (
            f"{len(new.workloads)} workloads ({len(replayed)} replayed) on the real Kueue "
            f"{release} and kube-scheduler, in a sandbox shaped like the stack. "
            "Simulated time jumps from event to event (a submission, a job's end) once Kueue "
            "and the scheduler have settled:"
        )
    # Regressions lead (gpu_queues.whatif.regressions): the PR comment lifts them to its top.
    lines = [*(block(regressions(base, new)) if base is not None else []), title, "", how, ""]
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
    lines += ["", *sections(new, base)]
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
