"""How the sandbox's replay reads evictions off the Workload watch (sandbox/replay/holds.py),
fed the states of a Deployment's replica's Workload that Kueue v0.18.3 preempted on the sandbox
(cause serving-preempted; conditions as recorded, messages shortened), in each order the watch
may deliver them."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.replay.holds import Holds

pytestmark = pytest.mark.unit

PREEMPTED = "Preempted to accommodate a workload due to prioritization in the ClusterQueue"
EVICTION = "Preempted (InClusterQueue)"


def state(*conditions: tuple[str, str, str], admitted: bool = False) -> dict[str, Any]:
    """The replica's Workload with these (type, status, reason) conditions."""
    status: dict[str, Any] = {
        "conditions": [
            {"type": kind, "status": is_, "reason": why, "message": PREEMPTED}
            for kind, is_, why in conditions
        ]
    }
    if admitted:
        flavors = {"cpu": "pool", "memory": "pool", "nvidia.com/gpu": "pool"}
        status["admission"] = {"podSetAssignments": [{"name": "main", "flavors": flavors}]}
    meta = {"uid": "wl-1", "ownerReferences": [{"kind": "Pod", "uid": "pod-1"}]}
    return {"metadata": meta, "status": status}


RESERVED = ("QuotaReserved", "True", "QuotaReserved")
ADMITTED = state(RESERVED, ("Admitted", "True", "Admitted"), admitted=True)
# Kueue's preemption, written while it still holds its quota...
MARKED = state(
    RESERVED,
    ("Evicted", "True", "Preempted"),
    ("Admitted", "True", "Admitted"),
    ("Preempted", "True", "InClusterQueue"),
    admitted=True,
)
# ...then its quota released (this one is also the state it is deleted in, its pod gone).
RELEASED = state(
    ("QuotaReserved", "False", "Pending"),
    ("Evicted", "True", "Preempted"),
    ("Admitted", "False", "NoReservation"),
    ("Preempted", "True", "InClusterQueue"),
    ("Requeued", "True", "Preempted"),
)
# Finished before the watch saw its quota released (any reason: a finished Workload holds none).
FINISHED = state(
    RESERVED,
    ("Evicted", "True", "Preempted"),
    ("Admitted", "True", "Admitted"),
    ("Preempted", "True", "InClusterQueue"),
    ("Finished", "True", "Succeeded"),
    admitted=True,
)


def steps(
    *states: dict[str, Any], deleted_at_its_end: bool = False
) -> list[tuple[float, str, str]]:
    holds = Holds()
    for at, wl in enumerate(states):
        holds.seen("pod-1", wl, float(at), deleted_at_its_end)
    return [(at, what, detail) for at, what, detail, _ in holds.steps["pod-1"]]


def test_a_preemption_is_one_eviction_when_it_is_marked_before_the_quota_goes() -> None:
    assert steps(ADMITTED, MARKED, RELEASED, RELEASED) == [
        (0, "admitted", "pool"), (1, "evicted", EVICTION),
    ]  # fmt: skip


def test_a_preemption_is_an_eviction_when_the_workload_comes_already_released() -> None:
    assert steps(ADMITTED, RELEASED) == [(0, "admitted", "pool"), (1, "evicted", EVICTION)]


def test_a_preempted_workload_seen_finished_is_evicted_all_the_same() -> None:
    """Finished for having run, its end would be no eviction: its eviction marks say it was."""
    assert steps(ADMITTED, FINISHED) == [(0, "admitted", "pool"), (1, "evicted", EVICTION)]
    finished = state(RESERVED, ("Finished", "True", "Succeeded"), admitted=True)
    assert steps(ADMITTED, finished) == [(0, "admitted", "pool")]


def test_a_preempted_workload_seen_only_as_deleted_is_evicted() -> None:
    """Its last state before the deletion still holds quota; the deleted object (the watch's
    DELETED event, as it was at the end) carries the marks."""
    assert steps(ADMITTED, ADMITTED, MARKED) == [(0, "admitted", "pool"), (2, "evicted", EVICTION)]


def test_an_eviction_counts_once_per_admission_and_again_after_the_next() -> None:
    again = steps(ADMITTED, MARKED, RELEASED, ADMITTED, MARKED, RELEASED)
    assert [what for _, what, _ in again] == ["admitted", "evicted", "admitted", "evicted"]
    # Kueue keeps Evicted=True through the re-admission: the second loss of quota still counts.
    assert [what for _, what, _ in steps(ADMITTED, MARKED, RELEASED, MARKED, RELEASED)] == [
        "admitted", "evicted", "admitted", "evicted",
    ]  # fmt: skip


def test_the_end_of_a_workload_the_replay_deleted_is_no_eviction() -> None:
    assert steps(ADMITTED, MARKED, RELEASED, deleted_at_its_end=True) == [(0, "admitted", "pool")]


def test_marks_on_a_workload_that_never_held_quota_are_no_eviction() -> None:
    pending = state(("QuotaReserved", "False", "Pending"), ("Evicted", "True", "Deactivated"))
    assert steps(pending) == []
