"""The replay's scheduling gate: the pods of the mix wait, gated, until the replay lets them go,
job by job in the order Kueue admitted them, once the cluster has settled from an instant.

When Kueue admits several jobs at one instant (a job's end frees quota for two others, say),
the Job controller creates their pods at about the same moment and kube-scheduler places them
in whatever order they reach it: which job's pods come first is a race between the
controllers' goroutines, so two runs of one mix could place them differently and, where the
nodes are nearly full, tell different days. The sandbox engine takes the race away: a
MutatingAdmissionPolicy (Kubernetes' own admission, in the API server) adds the gate
`gpu-queues.dev/replay` to every pod created in the mix's namespaces, and once the cluster has
settled the replay removes it job by job in the order Kueue admitted the jobs (the order of
their admissions on the Workload watch; Replay.settle), each job's pods tried by the scheduler
before the next job's are let go (an LWS group's leader before its workers: `waves`). The fast
engine places them so too (toolchain/go/whatif/scheduling.go, nextToPlace and bind).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from gpu_queues.whatif.workloads import KubeError, Rest

GATE = "gpu-queues.dev/replay"
POLICY = "gpu-queues-replay-gate"
POLICIES = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
# Kueue's gate on a pod of a group it has not admitted (podconstants.SchedulingGateName).
KUEUE_GATE = "kueue.x-k8s.io/admission"
# LWS's label on each pod of a group: 0 on the leader, 1 to size - 1 on the workers.
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def policy(namespaces: Iterable[str]) -> dict[str, Any]:
    """The policy that gates every pod created in `namespaces` (CEL: the request's namespace
    among them)."""
    listed = json.dumps(sorted(set(namespaces)))
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "matchConditions": [
                {"name": "the-mix-namespaces", "expression": f"request.namespace in {listed}"}
            ],
            "mutations": [
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {
                        "expression": (
                            "Object{spec: Object.spec{schedulingGates: "
                            f'[Object.spec.schedulingGates{{name: "{GATE}"}}]}}}}'
                        )
                    },
                }
            ],
        },
    }


def binding() -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY},
        "spec": {"policyName": POLICY},
    }


class GateError(Exception):
    """The replay cannot gate the mix's pods; the message says why."""


def install(rest: Rest, namespaces: Iterable[str]) -> None:
    """Gate the pods of `namespaces` from now on (what was there before is left as it is)."""
    try:
        remove(rest)
        rest.create(POLICIES, policy(namespaces))
        rest.create(BINDINGS, binding())
    except KubeError as exc:
        raise GateError(
            f"cannot install the replay's scheduling gate (a MutatingAdmissionPolicy, "
            f"admissionregistration.k8s.io/v1, served from Kubernetes 1.36): {exc}"
        ) from None


def remove(rest: Rest) -> None:
    for path in (BINDINGS, POLICIES):
        try:
            rest.request("DELETE", f"{path}/{POLICY}")
        except KubeError as exc:
            if exc.status != 404:
                raise


def gated(pod: dict[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(isinstance(g, dict) and g.get("name") == GATE for g in gates)


def kueue_holds(pod: dict[str, Any]) -> bool:
    """Kueue's admission gate is still on the pod: a pod of a group (an LWS's, a StatefulSet's,
    a `pod-group-name` group) made before Kueue admitted it. It is not the replay's to let go
    yet: Kueue lifts its gate from a group's pods in parallel (v0.18.3 pod_controller.go, Run),
    so were the replay's gate already gone, their order at the scheduler would be that race's
    (seed 714: an LWS's worker placed before its leader)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(isinstance(g, dict) and g.get("name") == KUEUE_GATE for g in gates)


def tried(pod: dict[str, Any]) -> bool:
    """The scheduler has placed the pod, or found no node for it."""
    if (pod.get("spec") or {}).get("nodeName"):
        return True
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason")
        for c in conditions
        if isinstance(c, dict)
    )


def waves(pods: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A job's gated pods in the waves the replay lets them go, each tried by the scheduler
    before the next: an LWS group's leader before its workers, as the fast engine places a
    Workload's pod sets in their order (scheduling.go, bind); every other job's pods at once.

    Kueue ungates a group's pods in parallel (v0.18.3 pod_controller.go, Run), so on a cluster
    either the leader or a worker may reach kube-scheduler first, and it matters: a worker's
    StatefulSet selects its leader, so the worker's default spreading counts the leader, while
    the leader's counts no worker (seed 714 at 5h26m: both on one node when the worker went
    first, on two when the leader did). The replay gives the leader-first answer."""
    first = [p for p in pods if labels(p).get(LWS_WORKER_INDEX) in (None, "0")]
    rest = [p for p in pods if labels(p).get(LWS_WORKER_INDEX) not in (None, "0")]
    return [wave for wave in (first, rest) if wave]


def labels(pod: dict[str, Any]) -> dict[str, Any]:
    return (pod.get("metadata") or {}).get("labels") or {}


def ungate(rest: Rest, pod: dict[str, Any]) -> None:
    """Let the pod go: its gates without the replay's (Kubernetes lets gates be removed, never
    added, once a pod exists)."""
    meta = pod.get("metadata") or {}
    gates = [
        g for g in (pod.get("spec") or {}).get("schedulingGates") or [] if g.get("name") != GATE
    ]
    path = f"/api/v1/namespaces/{meta.get('namespace')}/pods/{meta.get('name')}"
    patch = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")},
        {"op": "replace", "path": "/spec/schedulingGates", "value": gates},
    ]
    try:
        rest.request("PATCH", path, patch, content_type="application/json-patch+json")
    except KubeError as exc:
        if exc.status not in (404, 409, 422):  # gone, or changed since read: read it again
            raise
