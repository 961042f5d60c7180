"""The what-if report's pictures and the tables beside them (issue 23, item 8): Mermaid
`xychart-beta` charts, which a GitHub PR comment renders, of the GPUs in use per team and of
the pending workloads over simulated time (with a base, both runs on one chart), the
utilization of each ResourceFlavor's GPUs, and each team's p50, p90 and longest wait; and,
when the mix replays more than one workload kind, the GPU-hours each kind ran and waited
(gpu_queues/whatif/kinds.py) with a chart of its GPUs waiting over time.

The series are step functions of the workloads' runs (WorkloadResult.intervals) and
submissions, sampled on at most MAX_POINTS points: the run's time is cut into equal buckets
of a round length (1m, 15m, 1h, ...), and each point is the most the step function reaches
within its bucket (a peak between two points is never lost), so a mix of thousands of
workloads draws as fast and as small as one of ten.

Mermaid's xychart draws lines in the order given, colored from `plotColorPalette`: the
palette is set in the block's init directive, and a line of text under each chart names the
colors, since not every Mermaid release GitHub has run draws a legend of the lines' titles.
tests/unit/whatif/test_charts_render.py renders every chart with the pinned Mermaid
(tests/js/mermaid/).
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from gpu_queues.escape import mermaid, text
from gpu_queues.whatif import kinds as by_kinds
from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.report import ADMITTED, PENDING, Run, WorkloadResult, percentile

MAX_POINTS: Final = 100
TEAM_LINES: Final = 8
"""Teams drawn per run; beyond, the ones with the fewest GPU-hours are summed in one line."""
OTHERS: Final = "other teams"
# Bucket lengths, in seconds: round to read on a time axis.
ROUND_STEPS: Final = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                      21600, 43200, 86400)  # fmt: skip
# (name, the new run's color, the base run's: the same hue, lighter).
PALETTE: Final = (
    ("blue", "#1f77b4", "#9ecae9"),
    ("orange", "#ff7f0e", "#ffbb78"),
    ("green", "#2ca02c", "#98df8a"),
    ("red", "#d62728", "#ff9896"),
    ("purple", "#9467bd", "#c5b0d5"),
    ("brown", "#8c564b", "#c49c94"),
    ("pink", "#e377c2", "#f7b6d2"),
    ("grey", "#7f7f7f", "#c7c7c7"),
    ("olive", "#bcbd22", "#dbdb8d"),
    ("cyan", "#17becf", "#9edae5"),
)


# --- step functions ----------------------------------------------------------------------


def steps(changes: Iterable[tuple[float, int]]) -> list[tuple[float, int]]:
    """(time, change) pairs as a step function: (time, value from then on), one per time
    at which the value moves, every change at one instant applied together (a run that
    ends as another begins is no peak); changes at an infinite time are never reached."""
    by_time: dict[float, int] = {}
    for at, delta in changes:
        if math.isfinite(at):  # a run going at the end never ends on a chart
            by_time[at] = by_time.get(at, 0) + delta
    out: list[tuple[float, int]] = []
    value = 0
    for at in sorted(by_time):
        if by_time[at]:
            value += by_time[at]
            out.append((at, value))
    return out


@dataclass(frozen=True)
class Axis:
    """The time axis: `points` bucket starts, `step` seconds apart, from 0."""

    step: float
    points: int

    @classmethod
    def over(cls, end: float, most: int = MAX_POINTS) -> Axis:
        span = end if end > 0 else 60.0
        wanted = span / (most - 1)
        step = next((s for s in ROUND_STEPS if s >= wanted), None)
        if step is None:
            step = 86400 * math.ceil(wanted / 86400)
        return cls(float(step), max(2, min(most, math.floor(span / step) + 1)))

    @property
    def unit(self) -> tuple[str, float]:
        """How the axis counts time: hours, minutes or seconds, by the span."""
        span = self.step * (self.points - 1)
        if span >= 2 * 3600:
            return "h", 3600.0
        if span >= 120:
            return "min", 60.0
        return "s", 1.0


def sample(points: Sequence[tuple[float, int]], axis: Axis) -> list[int]:
    """The most the step function reaches within each bucket of the axis."""
    times = [t for t, _ in points]
    out = []
    for i in range(axis.points):
        start = i * axis.step
        end = (i + 1) * axis.step if i < axis.points - 1 else math.inf
        first = bisect.bisect_right(times, start)
        value = points[first - 1][1] if first else 0
        last = bisect.bisect_left(times, end)
        out.append(max([value, *(v for _, v in points[first:last])]))
    return out


def runs(w: WorkloadResult, end: float = math.inf) -> list[tuple[float, float]]:
    """The workload's runs, the one still going at the end of the replay lasting until
    `end` (by default for ever: on a chart it runs on past the last point)."""
    return [(s, e if e is not None else max(end, s)) for s, e in w.intervals]


def gpus_in_use(workloads: Iterable[WorkloadResult]) -> list[tuple[float, int]]:
    """GPUs held by running workloads over time."""
    changes: list[tuple[float, int]] = []
    for w in workloads:
        for s, e in runs(w):
            if e > s and w.gpus:
                changes += [(s, w.gpus), (e, -w.gpus)]
    return steps(changes)


def pending(workloads: Iterable[WorkloadResult]) -> list[tuple[float, int]]:
    """Workloads submitted and waiting over time: not running, not yet finished, not
    holding quota (an unschedulable workload holds it from its admission on)."""
    changes: list[tuple[float, int]] = []
    for w in workloads:
        if w.outcome not in ADMITTED | PENDING:
            continue
        ran = runs(w)
        changes.append((w.submit_at, 1))
        for s, e in ran:
            changes += [(s, -1), (e, 1)]
        done = w.outcome == "finished" or (w.outcome == "unschedulable" and not ran)
        if done and ran:
            changes.append((ran[-1][1], -1))
        elif done and w.wait_seconds is not None:
            changes.append((w.submit_at + w.wait_seconds, -1))
    return steps(changes)


# --- the charts --------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    title: str
    values: list[int]
    color: str
    says: str
    """How the legend names its color."""


def _quoted(label: str) -> str:
    """A title Mermaid reads as one string, whatever a team's name holds (gpu_queues.escape)."""
    return mermaid(label)


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def xychart(title: str, y_title: str, axis: Axis, lines: Sequence[Line]) -> str:
    """One Mermaid xychart-beta block (without the Markdown fence)."""
    unit, size = axis.unit
    top = max([1, *(v for line in lines for v in line.values)])
    palette = ", ".join(line.color for line in lines)
    init = {"themeVariables": {"xyChart": {"plotColorPalette": palette}}}
    last = _number(axis.step * (axis.points - 1) / size)
    out = [
        f"%%{{init: {json.dumps(init)}}}%%",
        "xychart-beta",
        f"    title {_quoted(title)}",
        f'    x-axis "simulated time ({unit})" 0 --> {last}',
        f"    y-axis {_quoted(y_title)} 0 --> {top}",
    ]
    for line in lines:
        out.append(f"    line {_quoted(line.title)} [{', '.join(map(str, line.values))}]")
    return "\n".join(out)


def _block(chart: str, lines: Sequence[Line], axis: Axis) -> list[str]:
    legend = "; ".join(f"{line.says}: {text(line.title)}" for line in lines)
    return [
        "```mermaid",
        chart,
        "```",
        "",
        f"Lines: {legend}. Each point is the most within its {format_duration(axis.step)} "
        "of simulated time.",
    ]


def _sides(new: Run, base: Run | None) -> list[tuple[str, Run, int]]:
    """(suffix of the lines' titles, run, palette column) of each run drawn."""
    if base is None:
        return [("", new, 1)]
    return [(" (base)", base, 2), (" (new)", new, 1)]


def _teams_drawn(new: Run, base: Run | None) -> tuple[list[str], bool]:
    """The teams with a line of their own, in the stack's order, and whether others are
    summed in one more: the TEAM_LINES with the most GPU-hours in either run."""
    runs = [new, base] if base is not None else [new]
    order = list(dict.fromkeys(t.team for run in runs for t in run.teams))
    if len(order) <= TEAM_LINES:
        return order, False
    hours = dict.fromkeys(order, 0.0)
    for run in runs:
        for t in run.teams:
            hours[t.team] = max(hours[t.team], t.gpu_hours)
    top = set(sorted(order, key=lambda team: (-hours[team], order.index(team)))[: TEAM_LINES - 1])
    return [team for team in order if team in top], True


def gpu_chart(new: Run, base: Run | None) -> list[str]:
    """GPUs in use per team over simulated time, a line per team (and run)."""
    end = new.meta.end if base is None else max(new.meta.end, base.meta.end)
    axis = Axis.over(end)
    drawn, others = _teams_drawn(new, base)
    lines = []
    for i, team in enumerate([*drawn, *([OTHERS] if others else [])]):
        name, new_color, base_color = PALETTE[i % len(PALETTE)]
        for suffix, run, column in _sides(new, base):
            mine = [
                w for w in run.workloads
                if (w.team == team) or (team == OTHERS and w.team not in drawn)
            ]  # fmt: skip
            color = new_color if column == 1 else base_color
            says = name if column == 1 else f"light {name}"
            values = sample(gpus_in_use(mine), axis)
            lines.append(Line(team + suffix, values, color, says))
    if not lines:  # Mermaid cannot draw a chart of no line (an error on the page)
        return ["No team to chart GPUs for."]
    return _block(xychart("GPUs in use per team", "GPUs", axis, lines), lines, axis)


def pending_chart(new: Run, base: Run | None) -> list[str]:
    """Pending workloads over simulated time (a line per run)."""
    end = new.meta.end if base is None else max(new.meta.end, base.meta.end)
    axis = Axis.over(end)
    name, new_color, base_color = PALETTE[0]
    lines = [
        Line(
            "pending" + suffix,
            sample(pending(run.workloads), axis),
            new_color if column == 1 else base_color,
            name if column == 1 else f"light {name}",
        )
        for suffix, run, column in _sides(new, base)
    ]
    chart = xychart("Pending workloads", "workloads", axis, lines)
    return _block(chart, lines, axis)


# --- the tables --------------------------------------------------------------------------


def _arrow(before: str, after: str) -> str:
    return after if before == after else f"{before} → **{after}**"


def _wait(value: float | None, replayed: int) -> str:
    if replayed == 0:
        return "-"
    return "not admitted" if value is None else format_duration(value)


def team_waits(run: Run, team: str) -> tuple[int, list[str]]:
    """(replayed workloads, [p50, p90, max] as shown) of a team's waits; a workload never
    admitted waits forever (report.py's rule), so a max over one is "not admitted"."""
    waits = [
        math.inf if w.wait_seconds is None else w.wait_seconds
        for w in run.workloads
        if w.team == team and w.outcome in ADMITTED | PENDING
    ]
    longest = max(waits, default=None)
    figures = [percentile(waits, 50), percentile(waits, 90)]
    figures.append(None if longest is None or math.isinf(longest) else longest)
    return len(waits), [_wait(v, len(waits)) for v in figures]


def wait_table(new: Run, base: Run | None) -> list[str]:
    lines = [
        "**Waits per team** (from submission to first admission, simulated)",
        "",
        "| Team | Replayed | Wait p50 | Wait p90 | Wait max |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for t in new.teams:
        count, cells = team_waits(new, t.team)
        shown = [str(count), *cells]
        if base is not None and any(b.team == t.team for b in base.teams):
            old_count, old = team_waits(base, t.team)
            shown = [_arrow(x, y) for x, y in zip([str(old_count), *old], shown, strict=True)]
        lines.append(f"| {text(t.team)} | " + " | ".join(shown) + " |")
    return lines


NO_FLAVOR: Final = "(preempted, no flavor at the end)"


def flavor_use(run: Run) -> dict[str, float]:
    """GPU-hours used per flavor over the run's time, from the workloads' runs (those the
    charts draw), under the flavor of each workload's admission (a workload preempted and
    waiting at the end has none: NO_FLAVOR)."""
    used: dict[str, float] = dict.fromkeys(run.meta.flavor_gpus, 0.0)
    for w in run.workloads:
        seconds = sum(e - s for s, e in runs(w, run.meta.end))
        if w.gpus and seconds:
            key = w.flavor or NO_FLAVOR
            used[key] = used.get(key, 0.0) + w.gpus * seconds / 3600
    return used


def _utilization(run: Run, flavor: str) -> list[str]:
    gpus = run.meta.flavor_gpus.get(flavor)
    used = flavor_use(run).get(flavor, 0.0)
    if not gpus:
        return ["-", f"{used:.1f}", "-", "-"]
    available = gpus * run.meta.end / 3600
    share = f"{100 * used / available:.0f}%" if available > 0 else "-"
    return [str(gpus), f"{used:.1f}", f"{available:.1f}", share]


def flavor_table(new: Run, base: Run | None) -> list[str]:
    """GPU-hours used / available per ResourceFlavor over the run's time."""
    runs = [base, new] if base is not None else [new]
    flavors = list(
        dict.fromkeys(
            [f for run in runs for f in run.meta.flavor_gpus]
            + [f for run in runs for f, used in flavor_use(run).items() if used]
        )
    )
    lines = [
        f"**GPU utilization per flavor** (over {format_duration(new.meta.end)} simulated)",
        "",
        "| Flavor | GPUs | GPU-hours used | GPU-hours available | Utilization |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for flavor in flavors:
        cells = _utilization(new, flavor)
        if base is not None:
            cells = [_arrow(x, y) for x, y in zip(_utilization(base, flavor), cells, strict=True)]
        lines.append(f"| {text(flavor)} | " + " | ".join(cells) + " |")
    if not flavors:
        lines.append("| - | - | 0.0 | - | - |")
    return lines


def _kind_cells(figures: by_kinds.KindFigures | None) -> list[str]:
    if figures is None:
        return ["-"] * 5
    hours = [by_kinds.gpu_hours(figures.run_hours), by_kinds.gpu_hours(figures.waited_hours)]
    return [str(figures.workloads), str(figures.gpus), *hours, str(figures.never)]


def kind_table(new: Run, base: Run | None) -> list[str]:
    """GPU-hours by kind: per kind replayed (in either run), its workloads, the GPUs they ask
    for, the GPU-hours they ran and waited (kinds.py's rules), and how many were never
    admitted; with a base, `before → after`. Nothing when one kind was replayed (kinds.shown)."""
    if not by_kinds.shown(new, base):
        return []
    now, before = by_kinds.by_kind(new), by_kinds.by_kind(base) if base is not None else {}
    lines = [
        "**GPU-hours by kind** (run: GPUs x the time they ran; waited: GPUs x the wait for the "
        "first admission, one never admitted waiting until the end of the "
        f"{format_duration(new.meta.end)} simulated)",
        "",
        "| Kind | Replayed | GPUs | GPU-hours run | GPU-hours waited | Never admitted |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind in by_kinds.kinds([base, new]):
        cells = _kind_cells(now.get(kind))
        if base is not None:
            old = _kind_cells(before.get(kind))
            cells = [_arrow(x, y) for x, y in zip(old, cells, strict=True)]
        lines.append(f"| {text(kind)} | " + " | ".join(cells) + " |")
    return lines


def kind_chart(new: Run, base: Run | None) -> list[str]:
    """GPUs waiting for their first admission per kind over simulated time, a line per kind
    (and run): the area under a line is the kind's waited GPU-hours. Nothing when one kind
    was replayed (kinds.shown)."""
    if not by_kinds.shown(new, base):
        return []
    end = new.meta.end if base is None else max(new.meta.end, base.meta.end)
    axis = Axis.over(end)
    lines = []
    for i, kind in enumerate(by_kinds.kinds([base, new])):
        name, new_color, base_color = PALETTE[i % len(PALETTE)]
        for suffix, run, column in _sides(new, base):
            mine = [w for w in run.workloads if w.kind == kind]
            values = sample(steps(by_kinds.waiting(mine)), axis)
            color, says = (new_color, name) if column == 1 else (base_color, f"light {name}")
            lines.append(Line(kind + suffix, values, color, says))
    return _block(xychart("GPUs waiting per kind", "GPUs", axis, lines), lines, axis)


def sections(new: Run, base: Run | None) -> list[str]:
    """What report.md shows between the team table and the workloads: the waits, the
    flavors' utilization, the two charts, and with more than one kind replayed, the
    GPU-hours by kind and its chart."""
    by_kind = [*kind_table(new, base), "", *kind_chart(new, base)]
    return [
        *wait_table(new, base),
        "",
        *flavor_table(new, base),
        "",
        *gpu_chart(new, base),
        "",
        *pending_chart(new, base),
        *(["", *by_kind] if by_kinds.shown(new, base) else []),
    ]


def mermaid_blocks(markdown: str) -> list[str]:
    """Every ```mermaid block of a Markdown text (what the render test feeds Mermaid)."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in markdown.splitlines():
        if current is None and line.strip() == "```mermaid":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks
