"""Two runs of one mix set side by side: which workloads differ, and the first instant at
which their stories (admissions, runs with their nodes, evictions, ends) part."""

from __future__ import annotations

import pytest

from gpu_queues.whatif.agreement import (
    Verdict,
    differences,
    explain,
    first_parting,
    tie_reason,
    timing_tie,
)
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult

pytestmark = pytest.mark.unit


def w(name: str, flavor: str = "h100", wait: float = 0.0, **kw: object) -> WorkloadResult:
    return WorkloadResult(
        name, "nlp", "nlp-lq", "finished", flavor=flavor, wait_seconds=wait,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def run(*workloads: WorkloadResult) -> Run:
    return Run(list(workloads), [], RunMeta("xc", "xc"))


def story(admitted: float, flavor: str, node: str, end: float) -> dict[str, object]:
    return {
        "timeline": [(admitted, "admitted", flavor), (admitted, "ran", node)],
        "intervals": [(admitted, end)],
    }


def test_runs_that_tell_the_same_story_agree_throughout():
    a = run(
        w("x1", **story(60, "h100", "h100-0", 660)), w("x2", **story(120, "a100", "a100-1", 900))
    )
    b = run(
        w("x1", **story(60, "h100", "h100-0", 660)), w("x2", **story(120, "a100", "a100-1", 900))
    )
    assert differences(a, b) == []
    assert first_parting(a, b) is None
    assert explain(a, b) == ""


def test_a_pod_placed_on_another_node_is_where_the_runs_part_even_when_the_verdicts_agree():
    a = run(w("x1", **story(60, "h100", "h100-1", 660)))
    b = run(w("x1", **story(60, "h100", "h100-0", 660)))
    assert differences(a, b) == []
    parting = first_parting(a, b)
    assert parting is not None and parting.at == 60
    assert parting.only_a == (("nlp/x1", "ran", "h100-1"),)
    assert parting.only_b == (("nlp/x1", "ran", "h100-0"),)
    assert parting.both == (("nlp/x1", "admitted", "h100"),)


def test_a_different_wait_and_flavor_are_named_with_both_timelines():
    a = run(w("x1", "a100", 300, **story(300, "a100", "a100-0", 900)), w("x2"))
    b = run(w("x1", "h100", 0, **story(0, "h100", "h100-0", 600)), w("x2"))
    (d,) = differences(a, b)
    assert d.workload == "nlp/x1"
    assert d.a == Verdict("finished", "a100", 300) and d.b == Verdict("finished", "h100", 0)
    text = explain(a, b, ("sandbox", "fast"))
    assert text.splitlines()[0] == "1 of 2 workloads agree"
    assert "the runs first part at 0s:" in text
    assert "  only fast: nlp/x1 admitted (h100)" in text
    assert "nlp/x1: sandbox finished on a100, wait 5m; fast finished on h100, wait 0s" in text
    assert "  sandbox: 5m admitted a100; 5m ran a100-0; 15m stopped" in text


def test_an_eviction_in_one_run_only_parts_them_at_its_instant():
    evicted = {
        "timeline": [(0, "admitted", "h100"), (600, "evicted", "Preempted (InClusterQueue)")]
    }
    a = run(w("x1", **evicted))
    b = run(w("x1", timeline=[(0, "admitted", "h100")]))
    parting = first_parting(a, b)
    assert parting is not None and parting.at == 600
    assert parting.only_a == (("nlp/x1", "evicted", "Preempted (InClusterQueue)"),)


def test_a_workload_one_run_lacks_is_a_difference():
    (d,) = differences(run(w("x1"), w("x2")), run(w("x1")))
    assert d.workload == "nlp/x2" and d.b.outcome == "missing"
    (d,) = differences(run(w("x1")), run(w("x1"), w("x3")))
    assert d.workload == "nlp/x3" and d.a.outcome == "missing"


def test_a_reclaim_among_workloads_admitted_at_that_instant_is_a_timing_tie():
    """Both runs admitted x1 and x2 at 1m; one reclaimed x1, the other x2: Kueue's choice went by
    the second each admission fell in."""

    def at_one(evicted: str, kept: str) -> Run:
        return run(
            w(evicted, timeline=[(60, "admitted", "h100"),
                                 (60, "evicted", "Preempted (InCohortReclamation)")]),
            w(kept, timeline=[(60, "admitted", "h100"), (60, "ran", "h100-0")]),
        )  # fmt: skip

    parting = first_parting(at_one("x1", "x2"), at_one("x2", "x1"))
    assert parting is not None and timing_tie(parting)
    assert "a tie Kueue breaks by the second of admission" in explain(
        at_one("x1", "x2"), at_one("x2", "x1")
    )


def test_an_eviction_of_a_workload_admitted_earlier_is_no_tie():
    """x1 ran since 0s; one run evicts it at 1m, the other does not: that is a difference."""
    a = run(
        w("x1", timeline=[(0, "admitted", "h100"), (60, "evicted", "Preempted (InClusterQueue)")])
    )
    b = run(w("x1", timeline=[(0, "admitted", "h100")]))
    parting = first_parting(a, b)
    assert parting is not None and not timing_tie(parting)


def test_jobs_admitted_together_on_other_nodes_are_a_difference():
    """Seed 79: two jobs admitted in one cycle, placed in the other order. The cross-check hands
    the fast engine the order the sandbox saw; a parting there is no tie."""
    a = run(
        w("x1", timeline=[(60, "admitted", "h100"), (60, "ran", "h100-0")]),
        w("x2", timeline=[(60, "admitted", "h100"), (60, "ran", "h100-0")]),
    )
    b = run(
        w("x1", timeline=[(60, "admitted", "h100"), (60, "ran", "h100-1")]),
        w("x2", timeline=[(60, "admitted", "h100"), (60, "ran", "h100-0")]),
    )
    parting = first_parting(a, b)
    assert parting is not None and tie_reason(parting) is None
