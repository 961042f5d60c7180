"""A stopPolicy change said the same way everywhere (gpu_queues/kueue/stop.py): which team,
what happens to it, how many admitted workloads it touches; the cluster read as data of any
shape; a cluster that cannot be read makes the count unknown, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.kueue import stop

pytestmark = pytest.mark.unit


def listing(*queues: tuple[str, str | None, Any]) -> dict[str, Any]:
    """A ClusterQueue list as the API serves it: (name, stopPolicy, status.admittedWorkloads)."""
    items = []
    for name, policy, admitted in queues:
        spec = {"stopPolicy": policy} if policy else {}
        items.append(
            {"metadata": {"name": name}, "spec": spec, "status": {"admittedWorkloads": admitted}}
        )
    return {"items": items}


@pytest.mark.parametrize(
    ("before", "after", "admitted", "said"),
    [
        pytest.param(
            None, "Hold", 3,
            "team ml stops admitting: new workloads wait (stopPolicy None → Hold); "
            "its 3 admitted workloads keep running",
            id="hold",
        ),
        pytest.param(
            "Hold", "HoldAndDrain", 1,
            "team ml: its running jobs will be evicted and nothing new admitted "
            "(stopPolicy Hold → HoldAndDrain); 1 admitted workload to be evicted",
            id="drain",
        ),
        pytest.param(
            "HoldAndDrain", "None", None,
            "team ml admits again (stopPolicy HoldAndDrain → None); admitted workloads now: "
            "unknown (no cluster read)",
            id="admits-again-unknown",
        ),
    ],
)  # fmt: skip
def test_each_move_says_what_happens_to_the_team(
    before: str | None, after: str, admitted: int | None, said: str
) -> None:
    (change,) = stop.stop_changes([("ml", before)], [("ml", "ml-cq", after)])
    assert stop.sentence(change, admitted) == said


def test_unset_and_none_are_the_same_policy_and_a_new_team_had_none() -> None:
    assert stop.stop_changes([("ml", None)], [("ml", "ml-cq", "None")]) == []
    assert stop.stop_changes([], [("new", "new-cq", None)]) == []
    assert stop.stop_changes([], [("new", "new-cq", "Hold")]) == [
        stop.StopChange("new", "new-cq", "None", "Hold")
    ]


def test_the_preview_compares_with_the_live_cluster_and_counts_its_admitted() -> None:
    live = listing(("ml-cq", None, 4), ("cv-cq", "Hold", 2), ("ops-cq", "Hold", 0))
    teams = [("ml", "ml-cq", "HoldAndDrain"), ("cv", "cv-cq", None), ("ops", "ops-cq", "Hold")]
    lines = stop.preview_lines(teams, None, None, lambda *_: stop.live_queues(live))
    assert lines == [
        "team ml: its running jobs will be evicted and nothing new admitted "
        "(stopPolicy None → HoldAndDrain); 4 admitted workloads to be evicted",
        "team cv admits again (stopPolicy Hold → None); 2 admitted workloads now",
    ]  # ops was held and stays held: nothing to say


def test_a_cluster_that_cannot_be_read_names_every_held_team_with_an_unknown_count() -> None:
    def unreadable(*_: Any) -> Any:
        raise stop.Unreadable("no usable kubeconfig: none set")

    teams = [("ml", "ml-cq", "Hold"), ("cv", "cv-cq", None)]
    (line,) = stop.preview_lines(teams, None, None, unreadable)
    assert line.startswith("team ml stops admitting")
    assert (
        "its admitted workloads (how many is unknown: the cluster could not be read: no usable "
        "kubeconfig" in line
    )


@pytest.mark.parametrize(
    "served",
    [
        None, [], {"items": "x"}, {"items": [1, None, {"metadata": []}]},
        {"items": [{"metadata": {"name": "a"}, "status": {"admittedWorkloads": "7"}}]},
        {"items": [{"metadata": {"name": "a"}, "status": {"admittedWorkloads": True}}]},
    ],
)  # fmt: skip
def test_a_broken_or_hostile_listing_is_read_as_data(served: Any) -> None:
    queues = stop.live_queues(served)
    assert all(q.admitted is None and q.stop_policy == "None" for q in queues.values())
    assert set(queues) <= {"a"}
    assert stop.counts(queues) == {}
