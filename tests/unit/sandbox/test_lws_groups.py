"""How the sandbox's replay follows a LeaderWorkerSet of several groups without a cluster
(sandbox/replay/groups.py, owners.py): each group's Workload and pods are the group's, by the
index Kueue and LWS write on them; the LWS serves while all its groups run together; its row is
summed up from its groups by the fast engine's rules (toolchain/go/whatif/lws_result.go)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.whatif.mix import Entry
from sandbox.replay.groups import Groups, group_key
from sandbox.replay.owners import Owners
from sandbox.replay.serving import Deployments
from sandbox.replay.tracked import Tracked

pytestmark = pytest.mark.unit

LWS_GVK = "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet"


def lws(replicas: int) -> dict[str, Any]:
    """The LWS as the API server returns it when the replay creates it."""
    meta = {"name": "serve", "namespace": "ns", "uid": "lws-uid"}
    return {"kind": "LeaderWorkerSet", "metadata": meta, "spec": {"replicas": replicas}}


def group_workload(index: int, *, admitted: bool) -> dict[str, Any]:
    """A group's Workload as Kueue's leaderworkerset integration writes it (constructWorkload)."""
    conditions = [{"type": "QuotaReserved", "status": "True" if admitted else "False"}]
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        status["admission"] = {
            "podSetAssignments": [{"name": "worker", "flavors": {"nvidia.com/gpu": "pool"}}]
        }
    else:
        conditions[0] |= {"reason": "Pending", "message": "couldn't assign flavors: no quota"}
    meta = {
        "name": f"leaderworkerset-serve-{index}-abcde",
        "uid": f"wl-{index}",
        "labels": {"kueue.x-k8s.io/job-uid": "lws-uid"},
        "annotations": {
            "kueue.x-k8s.io/job-owner-gvk": LWS_GVK,
            "kueue.x-k8s.io/component-workload-index": str(index),
        },
        "ownerReferences": [{"kind": "LeaderWorkerSet", "uid": "lws-uid"}],
    }
    return {"metadata": meta, "status": status}


def group_pod(index: int, name: str) -> dict[str, Any]:
    labels = {
        "leaderworkerset.sigs.k8s.io/name": "serve",
        "leaderworkerset.sigs.k8s.io/group-index": str(index),
    }
    meta = {"uid": name, "name": name, "namespace": "ns", "labels": labels}
    meta["creationTimestamp"] = "2026-01-01T00:01:00Z"
    return {"metadata": meta, "status": {"phase": "Running"}}


MANIFEST = {**lws(2), "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2}}}
SERVE = Entry(
    1, "mix.yaml#2", "LeaderWorkerSet", "serve", "ns", "jobs", submit_at=60, gpus=8, pods=4,
    duration=1200, manifest=MANIFEST,
)  # fmt: skip


def test_an_lws_of_several_groups_has_a_workload_and_pods_per_group() -> None:
    owners = Owners()
    assert owners.made("LeaderWorkerSet", "ns", "serve", [lws(2)]) == "lws-uid"
    assert owners.workload(group_workload(1, admitted=True)) == group_key("lws-uid", 1)
    assert owners.pod(group_pod(0, "serve-0")) == "lws-uid/0"
    assert owners.pod(group_pod(1, "serve-1-1")) == "lws-uid/1"
    index, pods = owners.index(
        [group_workload(0, admitted=True), group_workload(1, admitted=False)],
        [],
        [group_pod(0, "serve-0"), group_pod(1, "serve-1")],
        lambda _: False,
    )
    assert sorted(index) == ["lws-uid/0", "lws-uid/1"] and sorted(pods) == sorted(index)


def test_an_lws_of_one_group_is_its_group_s_workload() -> None:
    owners = Owners()
    owners.made("LeaderWorkerSet", "ns", "serve", [lws(1)])
    assert owners.workload(group_workload(0, admitted=True)) == "lws-uid"
    assert owners.pod(group_pod(0, "serve-0")) == "lws-uid"


def test_an_lws_serves_while_its_groups_run_together_and_its_row_waits_for_the_last() -> None:
    """serve (2 groups of 2 pods, 4 GPUs each): group 0 admitted and running at 60 s, group 1
    at 600 s; deleted at 1800 s. Its wait is its last group's (540 s), its runs the span both
    ran, its GPU time its groups' over its groups. A group preempted and run again starts its
    duration again (the fast engine's lwsPodChanged)."""
    parent = Tracked(SERVE, uid="lws-uid", submitted=True)
    d = Deployments()
    d.follow(groups := Groups.made(parent, 2))
    g0, g1 = groups.current()
    assert (g0.uid, g1.uid, g0.entry.pods, g0.entry.gpus, g0.entry.duration) == (
        "lws-uid/0", "lws-uid/1", 2, 4, None,
    )  # fmt: skip
    assert d.replicas() == [g0, g1] and d.adopt([group_pod(0, "serve-0")], {}) == []
    g0.admitted_at, g0.started_at, g0.intervals = 60.0, 60.0, [(60.0, None)]
    g0.timeline = [(60.0, "admitted", "pool"), (60.0, "ran", "pool-0, pool-0")]
    assert d.newly_served() == []
    workloads = {
        "lws-uid/0": group_workload(0, admitted=True),
        "lws-uid/1": group_workload(1, admitted=False),
    }
    early = groups.row(workloads, {})
    assert (early.outcome, early.wait_seconds) == ("pending", None)
    assert (early.message or "").startswith("1 of 2 groups admitted: couldn't assign flavors")
    g1.admitted_at, g1.started_at, g1.intervals = 600.0, 600.0, [(600.0, None)]
    g1.timeline = [(600.0, "admitted", "pool"), (600.0, "ran", "pool-0, pool-0")]
    assert [s.parent for s in d.newly_served()] == [parent]
    assert d.newly_served() == []  # while they run together, once
    g1.started_at = None  # preempted...
    assert d.newly_served() == []
    g1.started_at = 900.0  # ...and running again: its duration counts from now
    assert [s.parent for s in d.newly_served()] == [parent]
    d.deleting(parent)
    parent.completing = True
    assert g0.completing and g1.completing
    g0.intervals, g0.gpu_seconds = [(60.0, 1800.0)], 1740.0
    g1.intervals, g1.gpu_seconds = [(600.0, 1800.0)], 1200.0
    workloads["lws-uid/1"] = group_workload(1, admitted=True)
    row = groups.row(workloads, {})
    assert (row.outcome, row.flavor, row.wait_seconds) == ("finished", "pool", 540.0)
    assert row.intervals == [(600.0, 1800.0)]
    assert row.gpu_seconds * row.gpus == 4 * (1740 + 1200)
    assert [step[0] for step in row.timeline] == [60.0, 60.0, 600.0, 600.0]
