"""Which flavor Kueue assigned: one reader of a Workload's admission for the what-if, `gpuq
status` and the rehearsal (its check that a job got the flavor it must)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.whatif.workloads import admitted_flavor, assigned_flavors
from sandbox.rehearse.sizing import POD_SET

pytestmark = pytest.mark.unit


def workload(*assignments: dict[str, Any]) -> dict[str, Any]:
    return {"status": {"admission": {"clusterQueue": "cq", "podSetAssignments": list(assignments)}}}


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
