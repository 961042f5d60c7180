"""The regressions the PR preview leads with (gpu_queues.whatif.regressions): a team whose p90
wait gets more than 10% worse than the base's, a workload that no longer fits; report.md
starts with them and the PR comment lifts them above everything else."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.tools.pr_comment import compose, split, upsert
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.regressions import BEGIN, END, regressions
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results

pytestmark = pytest.mark.unit


def run(source: str, workloads: list[tuple[str, str, str, float | None, str | None]]) -> Run:
    results = [
        WorkloadResult(
            name, f"team-{team}", "q", outcome, wait_seconds=wait, team=team, message=msg
        )  # type: ignore[arg-type]
        for name, team, outcome, wait, msg in workloads
    ]
    teams = team_results(results, [("a", "a-cq"), ("b", "b-cq")])
    return Run(results, teams, RunMeta("s", source, simulated_seconds=7200, engine="fast"))


BASE = run(
    "s@main",
    [
        ("a1", "a", "finished", 1000.0, None),
        ("b1", "b", "finished", 0.0, None),
        ("b2", "b", "finished", 60.0, None),
    ],
)


def test_ten_percent_worse_is_not_a_regression_and_a_second_more_is():
    same = run(
        "s",
        [
            ("a1", "a", "finished", 1100.0, None),
            *[(n, "b", "finished", 0.0, None) for n in ("b1", "b2")],
        ],
    )
    assert regressions(BASE, same) == []
    worse = run(
        "s",
        [
            ("a1", "a", "finished", 1101.0, None),
            *[(n, "b", "finished", 0.0, None) for n in ("b1", "b2")],
        ],
    )
    (line,) = regressions(BASE, worse)
    assert line.startswith("⚠️ team a: p90 wait 16m40s → 18m21s, +10%")


def test_a_workload_the_base_admitted_and_the_change_never_does_no_longer_fits():
    message = "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu"
    new = run(
        "s",
        [
            ("a1", "a", "finished", 0.0, None),
            ("b1", "b", "finished", 0.0, None),
            ("b2", "b", "pending", None, message),
        ],
    )
    lines = regressions(BASE, new)
    assert lines == [
        "⚠️ team b: p90 wait 1m → not admitted (more than 10% worse than `s@main`)",
        f"⚠️ team-b/b2 no longer fits: admitted on `s@main`, never admitted here: {message}",
    ]


def test_report_md_leads_with_the_warnings_and_the_pr_comment_lifts_them_to_its_top():
    new = run(
        "s",
        [
            ("a1", "a", "finished", 5000.0, None),
            ("b1", "b", "finished", 0.0, None),
            ("b2", "b", "finished", 0.0, None),
        ],
    )
    md = render(new, BASE)
    assert md.startswith(BEGIN + "\n⚠️ team a: p90 wait")
    assert render(BASE, BASE).startswith("### What-if")
    tag = "<!-- quota-diff-s -->"
    text = compose(tag, "| quota diff |", {"what-if": md})
    lines = text.splitlines()
    assert lines[0] == tag and lines[1] == "<!-- lead:what-if -->" and lines[2] == BEGIN
    assert lines[3].startswith("⚠️ team a") and text.index(END) < text.index("| quota diff |")
    assert text.count("⚠️ team a") == 1
    # Read back, the section has its warnings again: a later update keeps them.
    assert split(text, tag) == ("| quota diff |", {"what-if": md})


def test_a_main_body_update_keeps_the_lifted_warnings():
    comments: list[dict[str, Any]] = []

    def gh(method: str, url: str, body: dict[str, Any] | None) -> Any:
        if method == "GET":
            return list(comments)
        if method == "POST":
            comments.append({"id": 1, "body": (body or {})["body"]})
        if method == "PATCH":
            comments[0]["body"] = (body or {})["body"]
        return {}

    new = run(
        "s",
        [
            ("a1", "a", "finished", 5000.0, None),
            ("b1", "b", "finished", 0.0, None),
            ("b2", "b", "finished", 0.0, None),
        ],
    )
    upsert(gh, "o/r", 1, "m", render(new, BASE), section="what-if")
    upsert(gh, "o/r", 1, "m", "| quota diff v2 |")
    body = comments[0]["body"]
    assert body.splitlines()[1:3] == ["<!-- lead:what-if -->", BEGIN]
    assert body.count("⚠️ team a") == 1 and "| quota diff v2 |" in body


def test_a_workload_preempted_at_the_end_no_longer_finishes():
    """b2 finished on the base; on the change it was admitted at once (wait 0 s, so no p90
    moves) and is preempted and waiting again at the end."""
    new = run(
        "s",
        [
            ("a1", "a", "finished", 0.0, None),
            ("b1", "b", "finished", 0.0, None),
            ("b2", "b", "preempted", 0.0, None),
        ],
    )
    assert regressions(BASE, new) == [
        "⚠️ team-b/b2 no longer finishes: finished on `s@main`, preempted at the end here"
    ]
