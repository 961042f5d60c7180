"""How the sandbox's replay follows serving workloads without a cluster (sandbox/replay/serving.py,
owners.py): a StatefulSet's pods and group Workload are its own; a Deployment's pods are found by
their ReplicaSet's name, each followed as a workload of its own, a pod replacing a deleted one in
its replica's slot, and the Deployment's row summed up by the fast engine's rules."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.whatif.mix import Entry
from sandbox.replay.owners import Owners, pod_key, workload_owner
from sandbox.replay.serving import Deployments, Serving, deployment_of, together
from sandbox.replay.tracked import Tracked

pytestmark = pytest.mark.unit

WEB = Entry(
    1, "mix.yaml#2", "Deployment", "web", "ns", "jobs", submit_at=60, gpus=4, pods=2, duration=1200
)


def pod(name: str, *, rs: str = "web-5d8f", template_hash: str = "5d8f", at: int = 0) -> Any:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "creationTimestamp": f"2026-01-01T00:00:{at:02d}Z",
            "labels": {"pod-template-hash": template_hash, "app": "web"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": rs, "uid": "rs-uid"}],
        },
        "status": {"phase": "Running"},
    }


def workload(owner: str, *, admitted: bool) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True" if admitted else "False"}]
    if admitted:
        conditions.append({"type": "Admitted", "status": "True"})
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        status["admission"] = {
            "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "pool"}}]
        }
    else:
        conditions[0]["message"] = "couldn't assign flavors to pod set main: insufficient quota"
        conditions[0]["reason"] = "Pending"
    return {
        "metadata": {"uid": f"wl-{owner}", "ownerReferences": [{"kind": "Pod", "uid": owner}]},
        "status": status,
    }


def test_a_statefulset_s_pods_and_its_group_workload_are_its_own() -> None:
    of_sts = {"metadata": {"uid": "p1", "ownerReferences": [{"kind": "StatefulSet", "uid": "s"}]}}
    assert pod_key(of_sts) == "s"
    group = {
        "metadata": {
            "labels": {"kueue.x-k8s.io/job-uid": "s"},
            "annotations": {"kueue.x-k8s.io/job-owner-gvk": "apps/v1, Kind=StatefulSet"},
            # Deleted with its StatefulSet, the garbage collector drops the reference first.
            "ownerReferences": [{"kind": "Pod", "uid": "p1"}],
        }
    }
    assert workload_owner(group) == {"kind": "StatefulSet", "uid": "s"}


def test_a_deployment_s_pods_are_found_by_their_replicaset_s_name() -> None:
    deployments = {("ns", "web"): "web-uid"}
    assert deployment_of(pod("web-5d8f-a"), deployments) == "web-uid"
    assert deployment_of(pod("x", rs="webx-5d8f"), deployments) is None  # another Deployment
    assert deployment_of(pod("y", template_hash="0000"), deployments) is None  # not its RS
    assert deployment_of({"metadata": {"namespace": "ns"}}, deployments) is None  # no owner
    # Each is a workload of its own: its pod and its Workload (the pod's) are by its UID.
    assert pod_key(pod("web-5d8f-a")) == "uid-web-5d8f-a"
    assert workload_owner(workload("uid-web-5d8f-a", admitted=True)) == {
        "kind": "Pod",
        "uid": "uid-web-5d8f-a",
    }


def deployment() -> tuple[Deployments, Tracked]:
    d = Deployments()
    parent = Tracked(WEB, uid="web-uid", submitted=True)
    d.made(parent)
    return d, parent


def test_a_pod_made_for_a_deleted_one_takes_its_replica_s_slot() -> None:
    d, _ = deployment()
    first, second = pod("web-5d8f-a", at=1), pod("web-5d8f-b", at=2)
    live = {"uid-web-5d8f-a": [first], "uid-web-5d8f-b": [second]}
    adopted = d.adopt([second, first, pod("other", rs="db-1", template_hash="1")], live)
    assert [r.entry.name for r in adopted] == ["web-5d8f-a", "web-5d8f-b"]  # oldest first
    assert (adopted[0].entry.kind, adopted[0].entry.pods, adopted[0].entry.duration) == (
        "Deployment", 1, None,
    )  # fmt: skip
    assert d.adopt([first, second], live) == []  # followed already
    # Kueue preempts b by deleting its pod; the ReplicaSet makes c in its place.
    third = pod("web-5d8f-c", at=9)
    (c,) = d.adopt([first, third], {"uid-web-5d8f-a": [first], "uid-web-5d8f-c": [third]})
    serving = d.by_uid["web-uid"]
    assert [[r.entry.name for r in slot] for slot in serving.slots] == [
        ["web-5d8f-a"], ["web-5d8f-b", "web-5d8f-c"],
    ]  # fmt: skip
    assert serving.current() == [adopted[0], c]


def test_a_deployment_serves_once_each_replica_has_run_and_its_row_waits_for_the_last() -> None:
    """web (2 pods of 2 GPUs): a admitted and running at 60 s, b waits until 600 s; deleted at
    1800 s. Its wait is its last replica's (540 s), its runs the span both ran (600-1800), its
    GPU time its pods' over its replicas, its steps theirs."""
    d, parent = deployment()
    a, b = d.adopt([pod("a", at=1), pod("b", at=2)], {"uid-a": [pod("a")], "uid-b": [pod("b")]})
    a.admitted_at, a.intervals, a.gpu_seconds = 60.0, [(60.0, None)], 0.0
    a.timeline = [(60.0, "admitted", "pool"), (60.0, "ran", "pool-0")]
    assert d.newly_served() == []  # b has not run
    workloads = {
        "uid-a": workload("uid-a", admitted=True),
        "uid-b": workload("uid-b", admitted=False),
    }
    pods = {"uid-a": [pod("a")], "uid-b": [{**pod("b"), "status": {"phase": "Pending"}}]}
    early = d.by_uid["web-uid"].row(workloads, pods)
    assert (early.outcome, early.wait_seconds) == ("pending", None)
    assert (early.message or "").startswith("1 of 2 pods admitted: couldn't assign flavors")
    b.admitted_at, b.intervals = 600.0, [(600.0, None)]
    b.timeline = [(600.0, "admitted", "pool"), (600.0, "ran", "pool-0")]
    assert [s.parent for s in d.newly_served()] == [parent]
    assert d.newly_served() == []  # once
    d.deleting(parent)
    parent.completing = True
    assert a.completing and b.completing
    a.intervals, a.gpu_seconds = [(60.0, 1800.0)], 1740.0
    b.intervals, b.gpu_seconds = [(600.0, 1800.0)], 1200.0
    workloads["uid-b"] = workload("uid-b", admitted=True)
    row = d.by_uid["web-uid"].row(workloads, {})
    assert (row.outcome, row.flavor, row.wait_seconds) == ("finished", "pool", 540.0)
    assert row.intervals == [(600.0, 1800.0)]
    assert row.gpu_seconds * row.gpus == 2 * (1740 + 1200)
    assert [step[0] for step in row.timeline] == [60.0, 60.0, 600.0, 600.0]


def test_together_is_when_every_replica_ran() -> None:
    assert together([]) == []
    assert together([[(0.0, 60.0), (180.0, None)], [(0.0, None)]]) == [(0.0, 60.0), (180.0, None)]
    assert together([[(0.0, 100.0)], [(100.0, 200.0)]]) == []  # never both at once
    assert together([[(0.0, None)], [(30.0, 50.0), (70.0, None)]]) == [(30.0, 50.0), (70.0, None)]


def test_the_owners_index_finishes_what_the_replay_deleted_at_its_end() -> None:
    owners = Owners()
    gone = workload("p", admitted=True)
    workloads, _ = owners.index([], [gone], [], lambda key: key == "p")
    assert any(c["type"] == "Finished" for c in workloads["p"]["status"]["conditions"])
    kept, _ = owners.index([], [gone], [], lambda key: False)  # preempted: as last seen
    assert not any(c["type"] == "Finished" for c in kept["p"]["status"]["conditions"])


def test_serving_replicas_default_to_one() -> None:
    import dataclasses

    one = Serving(Tracked(dataclasses.replace(WEB, pods=0)))
    assert one.replicas == 1


def test_a_replica_s_quota_lost_when_the_replay_deleted_its_deployment_is_no_eviction() -> None:
    """Deleted at its time, a Deployment's pods' Workloads lose their quota without being
    finished for having run (seen on the sandbox): that is their end, not an eviction. Lost
    before, it is one."""
    from sandbox.replay.holds import Holds

    holds = Holds()
    d, parent = deployment()
    _, b = d.adopt([pod("a", at=1), pod("b", at=2)], {})
    for held in (True, False):
        holds.seen("uid-a", workload("uid-a", admitted=held), 0.0, deleted_at_its_end=False)
    d.deleting(parent)
    assert b.completing  # what Replay._deleted_at_its_end reads
    for held in (True, False):
        holds.seen("uid-b", workload("uid-b", admitted=held), 0.0, deleted_at_its_end=True)
    assert [step[1] for step in holds.steps["uid-a"]] == ["admitted", "evicted"]
    assert [step[1] for step in holds.steps["uid-b"]] == ["admitted"]
