"""A Deployment in a mix is one row of the report, its pods Kueue's Workloads, one each: the
row pending until all its replicas are admitted, saying how many are, and naming the flavors
they were admitted to. What it shares with a StatefulSet: test_serving_mix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_queues.whatif.outcome import outcome, replicas_row
from tests.unit.whatif.serving import entries, serving

pytestmark = pytest.mark.unit


def pod_workload(flavor: str | None) -> dict[str, Any]:
    """A pod's Workload: admitted to flavor, or (None) pending with Kueue's message."""
    if flavor is None:
        pending = {"type": "QuotaReserved", "status": "False", "message": "4 more needed"}
        return {"status": {"conditions": [pending]}}
    assignment = {"name": "main", "flavors": {"nvidia.com/gpu": flavor}, "count": 1}
    return {"status": {"admission": {"clusterQueue": "vision", "podSetAssignments": [assignment]},
                       "conditions": [{"type": "QuotaReserved", "status": "True"},
                                      {"type": "Admitted", "status": "True"}]}}  # fmt: skip


def row(tmp_path: Path, replicas: list[dict[str, Any]], admitted_at: float | None) -> Any:
    (e,) = entries(tmp_path, serving("Deployment"))
    waiting = [w for w in replicas if "admission" not in w["status"]]
    first = (waiting or replicas)[0]
    base = outcome(e, first, running=not waiting, stuck=None, evictions=[],
                   admitted_at=admitted_at, gpu_seconds=0.0, problem=None)  # fmt: skip
    return replicas_row(e, base, replicas, admitted_at)


def test_a_deployment_short_of_replicas_is_pending_saying_how_many_and_why(
    tmp_path: Path,
) -> None:
    r = row(tmp_path, [pod_workload("a100"), pod_workload("a100"), pod_workload(None)], None)
    assert (r.outcome, r.wait_seconds) == ("pending", None)
    assert r.message == "2 of 3 pods admitted: 4 more needed"


def test_a_deployment_whose_replicas_got_different_flavors_says_so(tmp_path: Path) -> None:
    r = row(tmp_path, [pod_workload("a100"), pod_workload("h100"), pod_workload("a100")], 60.0)
    assert (r.outcome, r.flavor) == ("admitted", "a100, h100")
    assert r.message == "its pods were admitted to different flavors: a100, h100"
    same = row(tmp_path, [pod_workload("h100")] * 3, 60.0)
    assert (same.outcome, same.flavor, same.message) == ("admitted", "h100", None)
