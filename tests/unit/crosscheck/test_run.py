"""What the cross-check hands the fast engine of the sandbox's run: the order its watch saw the
admissions in, and how that reaches the engine's input."""

from __future__ import annotations

import pytest

from gpu_queues.whatif import engine_input
from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult
from sandbox import shape as fake_cluster
from sandbox.crosscheck.run import placement_order
from sandbox.paths import ROOT

pytestmark = pytest.mark.unit


def admitted(name: str, *order: int) -> WorkloadResult:
    return WorkloadResult(name, "nlp", "nlp-lq", "finished", admission_order=order)


def test_the_admissions_come_in_the_order_the_watch_saw_them_re_admissions_included():
    run = Run([admitted("a", 1, 4), admitted("b", 2), admitted("c"), admitted("d", 3)], [],
              RunMeta("xc", "xc"))  # fmt: skip
    assert placement_order(run) == [("nlp", "a"), ("nlp", "b"), ("nlp", "d"), ("nlp", "a")]


def test_the_engine_gets_the_order_as_mix_indices_leaving_out_what_it_does_not_replay():
    def entry(index: int) -> Entry:
        meta = {"name": f"w{index}", "namespace": "ns"}
        return Entry(index, f"mix.yaml#{index + 1}", "Job", f"w{index}", "ns", "q",
                     manifest={"kind": "Job", "metadata": meta})  # fmt: skip

    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    order = [("ns", "w2"), ("ns", "w0"), ("other", "w1"), ("ns", "w2")]
    sent = engine_input.engine_input(config, [entry(0), entry(2)], "", None, None, order)
    assert sent["placementOrder"] == [2, 0, 2]
    assert engine_input.engine_input(config, [entry(0)], "", None)["placementOrder"] == []
