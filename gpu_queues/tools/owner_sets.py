"""Owners of several Workloads, recorded as one manifest of their kind: a LeaderWorkerSet (Kueue's
leaderworkerset integration makes a Workload of each of its groups, its replicas, each of a
leader and a worker pod set, or one main pod set without a leader template) and a Deployment
(Kueue's pod integration makes a Workload of each of its pods, owned by the Pod, owned by its
ReplicaSet, owned by the Deployment). The mix's one document makes as many Workloads again
(gpu_queues/whatif/podsets.py), so the owner is written once, from its spec, and checked against
all its Workloads together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gpu_queues.tools.owners import Unrecordable, comment_text, workload_manifest
from gpu_queues.values import as_dict
from gpu_queues.whatif.podsets import pod_sets as pod_sets_of

SET_KINDS: Final = ("LeaderWorkerSet", "Deployment")


def set_manifest(
    kind: str,
    namespace: str,
    name: str,
    found: Mapping[str, Any],
    workloads: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The owner (`found`, as the API has it) as the mix submits it, from all its Workloads:
    each must make the same manifest (workload_manifest: the owner's shape, that Workload's pod
    templates, queue and priority), and they must be as many as the owner's groups (an LWS's
    replicas) or pods (a Deployment's replicas); else it changed since Kueue made them (a
    scale, a rollout under way): Unrecordable saying what differs."""
    made = [
        (_name(wl), workload_manifest(wl, kind, namespace, name, found))
        for wl in sorted(workloads, key=_name)
    ]
    (first_name, first), *rest = made
    for other_name, other in rest:
        if other != first:
            raise Unrecordable(
                f"its {kind}'s Workloads {comment_text(first_name)} and "
                f"{comment_text(other_name)} differ in their pod templates, queue or priority "
                "(a rollout under way?)"
            )
    pod_set = pod_sets_of(kind, first)[-1]
    wanted = pod_set.copies if kind == "LeaderWorkerSet" else pod_set.count
    if wanted != len(made):
        what = "groups (replicas)" if kind == "LeaderWorkerSet" else "replicas"
        raise Unrecordable(
            f"its {kind} no longer matches its Workloads: {wanted} {what} against "
            f"{len(made)} Workload{'s' if len(made) != 1 else ''}"
            + (" of its pods" if kind == "Deployment" else "")
        )
    return first


def _name(wl: Mapping[str, Any]) -> str:
    return str(as_dict(wl.get("metadata")).get("name"))
