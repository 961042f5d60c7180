"""Every chart of the what-if report rendered as a browser renders it (issue 23, item 8): with
the pinned Mermaid (tests/js/mermaid/package.json, installed by `make mermaid`, a step of
`make test` and `make test-unit`), parsed, laid out and drawn to SVG in a DOM
(tests/js/mermaid/render.mjs), so a chart a PR comment would show as an error, or draw wrong,
fails here. Broken charts are fed too: the renderer must refuse them, or this test could not
fail."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.whatif.charts import PALETTE, Axis, Line, mermaid_blocks, xychart
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import Run
from tests.golden import recording
from tests.golden.test_golden import REPLAY
from tests.unit.whatif import test_kinds as kinds
from tests.unit.whatif.test_charts import _big, run, w

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
MODULES = ROOT / ".cache" / "node" / "mermaid"
SCRIPT = ROOT / "tests" / "js" / "mermaid" / "render.mjs"
PINNED = json.loads((ROOT / "tests" / "js" / "mermaid" / "package.json").read_text())[
    "dependencies"
]


def installed() -> str:
    """node, once `make mermaid` has installed the pinned packages; a failure otherwise (the
    charts are never left unchecked for want of an install)."""
    node = shutil.which("node")
    if node is None or not (MODULES / ".stamp").exists():
        pytest.fail("Mermaid is not installed here: run `make mermaid` (make test does)")
    return node


def mermaid_render(diagrams: list[str]) -> list[dict[str, Any]]:
    node = installed()
    done = subprocess.run(
        [node, str(SCRIPT), str(MODULES)], input=json.dumps(diagrams), capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(results) == len(diagrams)
    return results


COLORS = {name: new for name, new, _ in PALETTE} | {f"light {n}": b for n, _, b in PALETTE}


def legends(markdown: str) -> list[list[str]]:
    """The colors each chart's text legend names (its `Lines: color: title; ...` line), as
    the palette's codes, one list per chart in order."""
    said = re.findall(r"^Lines: (.*)\. Each point", markdown, re.MULTILINE)
    return [[COLORS[part.split(": ")[0]] for part in line.split("; ")] for line in said]


def drawn_wrong(text: str, result: dict[str, Any], colors: list[str]) -> str | None:
    """What is wrong with a rendered chart: not rendered, not an xychart, numbers that are
    not numbers in its drawing, a line missing or with points missing, or drawn in another
    color than the legend under the chart says (`colors`, in the lines' order)."""
    if not result["ok"]:
        return f"Mermaid refused it: {result['error']}"
    svg = result["svg"]
    if result["type"] != "xychart":
        return f"rendered as {result['type']}"
    if "NaN" in svg or "Infinity" in svg:
        return "NaN or Infinity in the drawing"
    lines = re.findall(r'^\s*line "([^"]*)" \[([^]]*)\]$', text, re.MULTILINE)
    if len(lines) != len(colors):
        return f"{len(lines)} lines, {len(colors)} in the legend"
    for i, (title, values) in enumerate(lines):
        plot = re.search(rf'<g class="line-plot-{i}"><path d="([^"]*)"[^>]*stroke="([^"]*)"', svg)
        if plot is None:
            return f"line {title} not drawn"
        points = plot.group(1).count("L") + 1
        if points != len(values.split(",")):
            return f"line {title}: {points} points drawn of {len(values.split(','))}"
        if plot.group(2) != colors[i]:
            return f"line {title} drawn in {plot.group(2)}, not its legend's {colors[i]}"
    return None


def reports() -> dict[str, str]:
    replay = json.loads(REPLAY.read_text())
    single = run([w("a", "research", "admitted", [(0, None)], gpus=4)], end=0)
    empty = Run([], [], run([]).meta)
    return {
        "golden report.md": recording.report_of(replay, "report.md"),
        "golden compare.md": recording.report_of(replay, "compare.md"),
        "5,000 workloads of 12 teams": render(_big(5000, teams=12), None),
        "5,000 workloads, with a base": render(_big(5000, 12), _big(5000, 12, seed=2)),
        "a replay that ended at 0s": render(single, None),
        "no workloads, no teams": render(empty, None),
        "kinds, with a base": render(kinds.HAND, kinds.BASE),
    }


def test_the_pinned_mermaid_is_what_the_tests_installed() -> None:
    installed()
    there = json.loads((MODULES / "node_modules" / "mermaid" / "package.json").read_text())
    assert re.fullmatch(r"\d+\.\d+\.\d+", PINNED["mermaid"]), "pin an exact version"
    assert there["version"] == PINNED["mermaid"], "run make mermaid again"


def test_every_chart_of_the_report_renders_as_a_browser_draws_it() -> None:
    charts = []
    for name, md in reports().items():
        blocks = mermaid_blocks(md)
        assert len(blocks) == len(legends(md)), f"{name}: a chart without its legend"
        charts += [(name, block, colors) for block, colors in zip(blocks, legends(md), strict=True)]
    # two charts per report (none of no team), and the kinds' third where more than one is
    assert len(charts) == 2 * 7 - 1 + 1
    results = mermaid_render([block for _, block, _ in charts])
    wrong = [
        f"{name}: {why}\n{block[:400]}"
        for (name, block, colors), result in zip(charts, results, strict=True)
        if (why := drawn_wrong(block, result, colors))
    ]
    assert not wrong, "\n\n".join(wrong)


GOOD = [Line("research", [0, 4, 2], "#1f77b4", "blue"), Line("vision", [1, 1, 0], "#ff7f0e",
        "orange")]  # fmt: skip
COLORED = [line.color for line in GOOD]
BROKEN = {
    "a value that is not a number": (lambda t: t.replace("[0, 4, 2]", "[0, nan, 2]"),
                                     "Mermaid refused it"),
    "a quote in a title": (lambda t: t.replace('line "research"', 'line "research "(new)"'),
                           "Mermaid refused it"),
    "a statement xychart does not have": (
        lambda t: t.replace("xychart-beta", "xychart-beta\n    lines [1]"), "Mermaid refused it"),
    "a misspelt axis": (lambda t: t.replace("y-axis", "y axis"), "Mermaid refused it"),
    "a range with a short arrow": (lambda t: t.replace("0 --> 2", "0 -> 2"), "Mermaid refused it"),
    "another diagram inside": (lambda t: t.replace("xychart-beta", "graph TD\n    a --> b"),
                               "Mermaid refused it"),
    "an unknown diagram": (lambda t: t.replace("xychart-beta", "xychart-gamma"),
                           "Mermaid refused it"),
    "the palette out of the legend's order": (
        lambda t: t.replace('"#1f77b4, #ff7f0e"', '"#ff7f0e, #1f77b4"'), "not its legend's"),
    "a line left out": (lambda t: t.replace('    line "vision" [1, 1, 0]', ""),
                        "1 lines, 2 in the legend"),
}  # fmt: skip


def test_a_broken_chart_fails() -> None:
    """The check can fail: each breakage of a good chart is caught (most by Mermaid itself)."""
    good = xychart("GPUs in use per team", "GPUs", Axis(step=60, points=3), GOOD)
    broken = {name: breakage(good) for name, (breakage, _) in BROKEN.items()}
    assert all(text != good for text in broken.values())
    ok, *bad = mermaid_render([good, *broken.values()])
    assert drawn_wrong(good, ok, COLORED) is None
    missed = []
    for (name, text), result in zip(broken.items(), bad, strict=True):
        found = drawn_wrong(text, result, COLORED)
        if found is None or BROKEN[name][1] not in found:
            missed.append(f"{name}: {found}")
    assert not missed, "\n".join(missed)
