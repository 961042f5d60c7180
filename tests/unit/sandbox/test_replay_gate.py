"""The sandbox replay's scheduling gate (sandbox/replay/gate.py): the MutatingAdmissionPolicy that
gates the mix's pods, and how a pod is read and let go."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.whatif.workloads import KubeError
from sandbox.replay import gate
from sandbox.replay.owners import Owners

pytestmark = pytest.mark.unit


def test_the_policy_gates_pods_created_in_the_mix_s_namespaces_only():
    p = gate.policy(["team-b", "team-a", "team-a"])
    rules = p["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                      "resources": ["pods"]}]  # fmt: skip
    (condition,) = p["spec"]["matchConditions"]
    assert condition["expression"] == 'request.namespace in ["team-a", "team-b"]'
    (mutation,) = p["spec"]["mutations"]
    assert mutation["patchType"] == "ApplyConfiguration"
    assert f'name: "{gate.GATE}"' in mutation["applyConfiguration"]["expression"]
    assert gate.binding()["spec"]["policyName"] == p["metadata"]["name"]


def pod(gates: list[str], node: str = "", scheduled: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "team-a", "resourceVersion": "7"},
        "spec": {"schedulingGates": [{"name": g} for g in gates]},
        "status": {},
    }
    if node:
        out["spec"]["nodeName"] = node
    if scheduled:
        out["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": scheduled}
        ]
    return out


def test_a_pod_is_gated_by_the_replay_s_gate_only():
    assert gate.gated(pod([gate.GATE]))
    assert gate.gated(pod(["kueue.x-k8s.io/admission", gate.GATE]))
    assert not gate.gated(pod(["kueue.x-k8s.io/admission"]))
    assert not gate.gated({"metadata": {}})


def test_a_pod_is_tried_once_placed_or_found_no_node():
    assert not gate.tried(pod([]))
    assert gate.tried(pod([], node="gpu-0"))
    assert gate.tried(pod([], scheduled="Unschedulable"))
    assert not gate.tried(pod([], scheduled=""))


class Recorder:
    def __init__(self, fail: int | None = None) -> None:
        self.calls: list[tuple[str, str, Any, str]] = []
        self.fail = fail

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> Any:
        self.calls.append((method, path, body, content_type))
        if self.fail is not None:
            raise KubeError(self.fail, "refused")
        return None

    def create(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)


def test_ungating_keeps_the_other_gates_and_tests_the_version_it_read():
    rest = Recorder()
    gate.ungate(rest, pod(["kueue.x-k8s.io/admission", gate.GATE]))  # type: ignore[arg-type]
    ((method, path, body, kind),) = rest.calls
    assert (method, path, kind) == ("PATCH", "/api/v1/namespaces/team-a/pods/p",
                                    "application/json-patch+json")  # fmt: skip
    assert body[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert body[1]["value"] == [{"name": "kueue.x-k8s.io/admission"}]


@pytest.mark.parametrize("status", [404, 409, 422])
def test_a_pod_gone_or_changed_since_it_was_read_is_read_again(status: int):
    """The refusal is swallowed: the replay reads the pod again and lets it go then."""
    rest = Recorder(fail=status)
    assert gate.ungate(rest, pod([gate.GATE])) is None  # type: ignore[arg-type, func-returns-value]
    assert [c[0] for c in rest.calls] == ["PATCH"]


def test_an_api_server_without_the_policy_api_is_a_clear_error():
    with pytest.raises(gate.GateError, match="MutatingAdmissionPolicy"):
        gate.install(Recorder(fail=403), ["team-a"])  # type: ignore[arg-type]
    with pytest.raises(KubeError):
        gate.ungate(Recorder(fail=500), pod([gate.GATE]))  # type: ignore[arg-type]


def workload(job_uid: str, holds: bool) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True" if holds else "False"}]
    return {
        "metadata": {"uid": f"wl-{job_uid}", "ownerReferences": [{"kind": "Job", "uid": job_uid}]},
        "status": {"conditions": conditions},
    }


class Snapshot:
    def __init__(self, objects: list[dict[str, Any]]):
        self.objects = objects

    def snapshot(self) -> list[dict[str, Any]]:
        return self.objects


def gated_pod(job_uid: str) -> dict[str, Any]:
    p = pod([gate.GATE])
    p["metadata"]["uid"] = f"pod-{job_uid}"
    p["metadata"]["ownerReferences"] = [{"kind": "Job", "uid": job_uid}]
    return p


def test_the_gate_lets_jobs_go_in_the_order_of_their_last_admission():
    """Two jobs admitted, both evicted, then admitted again at one instant, b before a: b's
    pods go first. (Counting each job once numbered a re-admission like the next new one: two
    re-admissions tied, and the tie went by the Jobs' random UIDs.)"""
    from sandbox.replay.holds import Holds
    from sandbox.replay.timeline import Replay

    replay = Replay.__new__(Replay)
    replay.now, replay.holds = 0.0, Holds()
    replay.owners, replay.by_uid = Owners(), {}  # no pod groups, no LeaderWorkerSets
    seen = [("a", True), ("b", True), ("a", False), ("b", False), ("b", True), ("a", True)]
    for job, holds in seen:
        replay._workload_seen(workload(job, holds))
    assert replay.holds.admission_order["b"][-1] < replay.holds.admission_order["a"][-1]
    # Every admission in the order seen, for the cross-check's fast engine.
    assert replay.holds.admission_order == {"a": [1, 4], "b": [2, 3]}
    replay.informers = {"pods": Snapshot([gated_pod("a"), gated_pod("b")])}
    assert [p["metadata"]["uid"] for p in replay._next_gated()] == ["pod-b"]


def lws_pod(name: str, index: str) -> dict[str, Any]:
    p = pod([gate.GATE])
    p["metadata"].update(name=name, labels={gate.LWS_WORKER_INDEX: index})
    return p


def names(waves: list[list[dict[str, Any]]]) -> list[list[str]]:
    return [[p["metadata"]["name"] for p in wave] for wave in waves]


def test_an_lws_group_s_leader_goes_to_the_scheduler_before_its_workers():
    """Kueue ungates a group's pods in parallel; the worker's default spreading counts its
    leader, so which goes first decides where the worker lands (seed 714). The replay lets the
    leader go first, as the fast engine places the leader's pod set first."""
    group = [lws_pod("s-0-2", "2"), lws_pod("s-0", "0"), lws_pod("s-0-1", "1")]
    assert names(gate.waves(group)) == [["s-0"], ["s-0-2", "s-0-1"]]


def test_every_other_job_s_pods_go_at_once():
    job = [pod([gate.GATE]), pod([gate.GATE])]
    assert gate.waves(job) == [job]
    assert names(gate.waves([lws_pod("only-leader", "0")])) == [["only-leader"]]
    assert gate.waves([]) == []


def test_pods_kueue_still_holds_are_not_let_go_before_it_admits_them():
    """A group's pods are made before Kueue admits the group, its gate and the replay's on
    each: the replay waits for Kueue's to go, so that its own order, not Kueue's parallel
    ungating, is the order the scheduler sees them in."""
    from sandbox.replay.holds import Holds
    from sandbox.replay.timeline import Replay

    replay = Replay.__new__(Replay)
    replay.now, replay.holds = 0.0, Holds()
    replay.owners, replay.by_uid = Owners(), {}
    held = gated_pod("group")
    held["spec"]["schedulingGates"].insert(0, {"name": gate.KUEUE_GATE})
    replay.informers = {"pods": Snapshot([held])}
    assert gate.kueue_holds(held) and replay._next_gated() == []
    replay.informers = {"pods": Snapshot([gated_pod("group")])}  # Kueue admitted it
    assert [p["metadata"]["uid"] for p in replay._next_gated()] == ["pod-group"]
