"""`gpuq status --eta` without a cluster or the engine: the refusals a user sees (no stack, a
cluster whose visibility API does not answer, --eta given to the status module itself), and
how an estimate reads. The replay itself is tested on the sandbox (tests/e2e/test_eta.py);
the mix it replays in tests/unit/tools/test_eta_mix.py."""

from __future__ import annotations

import pytest

from gpu_queues.tools import eta
from gpu_queues.tools.eta_mix import Item, Plan, RunTime
from gpu_queues.tools.status import Snapshot
from gpu_queues.tools.status import main as status_main
from tests.unit.tools.test_eta_mix import NOW, config, workload

pytestmark = pytest.mark.unit


def test_no_visibility_api_for_a_queue_with_pending_work_is_refused_by_name() -> None:
    snap = Snapshot(
        NOW,
        [("vision", "vision-cq"), ("nlp", "nlp-cq")],
        {},
        [(workload("p", "vision", created=5), "vision-cq", "vision")],
        {},
        unanswered=("vision-cq", "nlp-cq"),  # nlp-cq has nothing pending: not named
    )
    with pytest.raises(eta.EtaError) as caught:
        eta.predict(config(), snap, lambda kind, ns, name: None, [], source="test")
    message = str(caught.value)
    assert "visibility API gave no pending workloads for ClusterQueue vision-cq (" in message
    assert "nlp-cq" not in message


def test_eta_needs_a_stack_and_the_status_module_points_to_it(capsys) -> None:
    assert eta.main([]) == 2
    assert "--stack is needed" in capsys.readouterr().err
    assert eta.main(["--stack", "staging", "--history", "a week"]) == 2
    assert "--history: 'a week' is not a duration" in capsys.readouterr().err
    assert eta.main(["--stack", "staging", "--horizon", "soon"]) == 2
    assert "--horizon: 'soon' is not a duration" in capsys.readouterr().err
    assert eta.main(["--stack", "staging", "--horizon", "0s"]) == 2
    assert "--horizon: must be more than 0s (or none)" in capsys.readouterr().err
    assert status_main(["--eta"]) == 2
    assert "make status ARGS=--eta" in capsys.readouterr().err


def test_in_words() -> None:
    assert [eta.in_words(s) for s in (0, 0.4, 40, 719, 3 * 3600 + 600)] == [
        "now", "now", "in 40s", "in 12 min", "in 3h10m"
    ]  # fmt: skip


def test_an_estimate_reads_with_its_position_time_flavor_and_what_it_rests_on() -> None:
    item = Item(
        "train", "vision", "job-train-x", "vision", "vision-cq", "pending", NOW,
        RunTime(600, "annotation", "gpu-queues.dev/duration 10m"), position=(2, 1),
    )  # fmt: skip
    unknown = Item(
        "sweep", "nlp", "job-sweep-x", "nlp", "nlp-cq", "pending", NOW,
        RunTime(None, "unknown", "unknown: no annotation"), position=(0, 0),
    )  # fmt: skip
    estimate = eta.Estimate(
        Plan(NOW),
        None,
        [
            eta.Prediction(item, NOW + 720, "h100", {"annotation": 2, "median": 1}),
            eta.Prediction(unknown, None, None, {}, "not admitted before the replay ended"),
        ],
        ["an assumption"],
        "live cluster of stack prod",
    )
    text = eta.render(estimate)
    assert "### Start-time estimates: live cluster of stack prod, at 2026-12-01T12:00:00Z" in text
    assert (
        "| 2, 1 (vision-cq) | vision/train | vision | 2026-12-01T12:12:00Z | in 12 min | h100 "
        "| gpu-queues.dev/duration 10m | 2 annotation, 1 median |"
    ) in text
    assert "| not admitted before the replay ended | - | - | unknown: no annotation | - |" in text
    assert text.endswith("Assumptions:\n- an assumption\n")
    again = eta.Prediction(item, NOW, "a100", {}, preempted=2)
    assert eta.flavor_text(again) == "a100 (preempted 2x later in the replay)"
    public = eta.public(estimate)["predictions"][0]
    assert (public["predictedAdmission"], public["inSeconds"]) == ("2026-12-01T12:12:00Z", 720)
