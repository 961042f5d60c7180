"""Which flavor Kueue assigned: one reader of a Workload's admission for the what-if, `gpuq
status` and the rehearsal (its check that a job got the flavor it must)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.whatif.workloads import (
    POD_GONE,
    admitted_flavor,
    assigned_flavors,
    classify,
    finished_done,
)
from sandbox.rehearse.sizing import POD_SET
from tests.builders import Workload

pytestmark = pytest.mark.unit


AT = "2026-12-01T12:00:00Z"


def workload(*assignments: dict[str, Any]) -> dict[str, Any]:
    return Workload("w", "ns").admission("cq", *assignments).obj()


def test_each_pod_set_gets_its_own_flavors() -> None:
    wl = workload(
        {"name": "launcher", "flavors": {"cpu": "cpu-pool", "memory": "cpu-pool"}, "count": 1},
        {"name": POD_SET, "flavors": {"cpu": "h100", "nvidia.com/gpu": "h100"}, "count": 4},
    )
    assert assigned_flavors(wl) == {
        "launcher": {"cpu": "cpu-pool", "memory": "cpu-pool"},
        POD_SET: {"cpu": "h100", "nvidia.com/gpu": "h100"},
    }
    # The report names the GPUs' flavor when the workload has GPUs.
    assert admitted_flavor(wl) == "h100"


def test_without_gpus_every_flavor_is_named_once() -> None:
    wl = workload(
        {"name": "a", "flavors": {"cpu": "small", "memory": "big"}},
        {"name": "b", "flavors": {"cpu": "small"}},
    )
    assert admitted_flavor(wl) == "small, big"


@pytest.mark.parametrize(
    "wl",
    [None, {}, {"status": {}}, workload(), {"status": {"admission": {"podSetAssignments": "x"}}}],
)
def test_no_admission_assigns_nothing(wl: dict[str, Any] | None) -> None:
    assert assigned_flavors(wl) == {}
    assert admitted_flavor(wl or {}) is None


def test_what_is_not_a_flavor_name_is_left_out() -> None:
    wl = workload({"name": POD_SET, "flavors": {"cpu": "a100", "memory": None, "x": 3}})
    assert assigned_flavors(wl) == {POD_SET: {"cpu": "a100"}}


def finished_as(reason: str) -> dict[str, Any]:
    """A Workload Kueue finished with `reason`, after it was preempted."""
    return (
        Workload("w", "ns").condition("Finished", "True", AT, reason, "m").pending(AT)
        .condition("Evicted", "True", AT, "Preempted", "to make room")
    ).obj()  # fmt: skip


def test_a_preempted_plain_pod_whose_owner_is_gone_is_preempted_not_finished() -> None:
    # Kueue preempts a plain Pod by deleting it and finishes the Workload of the owner that
    # is gone: the report says preempted (for good), not finished.
    state, flavor, message = classify(finished_as("OwnerNotFound"), False, None, True)
    assert (state, flavor) == ("preempted", None)
    assert message == f"Preempted: to make room; {POD_GONE}"
    assert not finished_done(finished_as("OwnerNotFound"))
    # A workload that ran to its end is finished, preempted before or not.
    assert classify(finished_as("Succeeded"), False, None, True)[0] == "finished"
    assert finished_done(finished_as("Succeeded"))
    # Gone without a preemption (its owner deleted): still the Finished Kueue says.
    assert classify(finished_as("OwnerNotFound"), False, None, False)[0] == "finished"
    # A RayCluster the replay deletes when its time is up, after a preemption: its owner was
    # gone for that, not for the preemption (outcome.py passes gone_preempted=False).
    finished = classify(finished_as("OwnerNotFound"), False, None, True, gone_preempted=False)
    assert finished[0] == "finished"
