"""Deployments through the sandbox's replay (`Deployments`): kube-controller-manager's Deployment
and ReplicaSet controllers make its pods, and Kueue's pod integration makes each pod a Workload
of its own, admitted on its own (Kueue's deployment integration only labels the pod template).
The replay follows each pod as a workload of its own (a `Tracked` replica, known by the pod's
UID, as the Workload's owner is the pod), and sums them up into the Deployment's row by the
fast engine's rules (toolchain/go/whatif/deployment_result.go, then
gpu_queues.whatif.outcome.replicas_row).

A pod Kueue preempts it deletes, and the ReplicaSet makes another in its place: the replay
keeps each replica's pods in a slot (`Serving.slots`), the new pod in the slot of one gone, as
the fast engine's ReplicaSet does. The Deployment serves from when every replica has had a pod
running: its duration (gpu-queues.dev/duration) counts from then, when its user deletes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_queues.whatif.outcome import outcome, replicas_row
from gpu_queues.whatif.report import WorkloadResult
from gpu_queues.whatif.workloads import owner, pod_unschedulable
from sandbox.replay.tracked import Tracked, all_running
from sandbox.replay.watch import created_at, uid

# The Deployment controller names each ReplicaSet `<deployment>-<hash>` and labels it and its
# pods with the hash: a pod's Deployment is read from its ReplicaSet's name (names are unique
# in a namespace, and in a mix).
TEMPLATE_HASH_LABEL: Final = "pod-template-hash"


def deployment_of(pod: dict[str, Any], deployments: Mapping[tuple[str, str], str]) -> str | None:
    """The UID of the replayed Deployment the pod runs for (`deployments`: (namespace, name)
    -> UID), or None when it runs for none."""
    meta = pod.get("metadata") or {}
    ref = owner(pod, "ReplicaSet")
    template_hash = (meta.get("labels") or {}).get(TEMPLATE_HASH_LABEL)
    if ref is None or not template_hash:
        return None
    name, suffix = str(ref.get("name") or ""), f"-{template_hash}"
    if not name.endswith(suffix):
        return None
    return deployments.get((str(meta.get("namespace")), name.removesuffix(suffix)))


def gone(pods: list[dict[str, Any]]) -> bool:
    """A replica's pod is no more: deleted, or being deleted (the ReplicaSet replaces it)."""
    return all((p.get("metadata") or {}).get("deletionTimestamp") for p in pods)


@dataclass
class Serving:
    """One Deployment of the mix through the replay (`parent`, its row) and its pods."""

    parent: Tracked
    slots: list[list[Tracked]] = field(default_factory=list)
    """Each replica's pods, oldest first, the last its current one."""
    served: bool = False
    """Every replica has had a pod running: its duration counts from then."""

    @property
    def replicas(self) -> int:
        return max(self.parent.entry.pods, 1)

    def adopt(self, pod: dict[str, Any], pods: Mapping[str, list[dict[str, Any]]]) -> Tracked:
        """A new pod of the Deployment, a replica's: the first one without a pod, else the
        first whose pod is gone (`pods`: the live pods by their UID)."""
        e = dataclasses.replace(
            self.parent.entry, name=str(pod["metadata"]["name"]), pods=1, duration=None
        )
        replica = Tracked(e, uid=uid(pod), submitted=True)
        slot = next((s for s in self.slots if gone(pods.get(s[-1].uid or "", []))), None)
        if len(self.slots) < self.replicas or slot is None:
            self.slots.append([replica])
        else:
            slot.append(replica)
        return replica

    def current(self) -> list[Tracked]:
        return [slot[-1] for slot in self.slots]

    def starts_serving(self) -> bool:
        """Every replica has now had a pod running, for the first time: its duration counts
        from now."""
        fresh = not self.served and self.all_ran()
        self.served = self.served or fresh
        return fresh

    def all_ran(self) -> bool:
        return len(self.slots) >= self.replicas and all(
            any(r.intervals for r in slot) for slot in self.slots
        )

    def row(
        self, workloads: Mapping[str, dict[str, Any]], pods: Mapping[str, list[dict[str, Any]]]
    ) -> WorkloadResult:
        """The Deployment's row: admitted once all its replicas have been (when the last of
        them first was), its GPU time its pods' run time over its replicas, its evictions and
        steps its pods', its runs the spans in which every replica had a pod running; its
        Workload a current pod's (one not admitted when there is one, for Kueue's message)."""
        t = self.parent
        runs, firsts = [], []
        evictions, steps, gpu_seconds = [], [], 0.0
        for slot in self.slots:
            admitted = [r.admitted_at for r in slot if r.admitted_at is not None]
            firsts.append(min(admitted, default=None))
            runs.append([span for r in slot for span in r.intervals])
            for r in slot:
                gpu_seconds += r.gpu_seconds / self.replicas
                evictions += r.evictions
                steps += r.timeline
        complete = len(self.slots) >= self.replicas and None not in firsts
        admitted_at = max(f for f in firsts if f is not None) if complete else None
        current = self.current()
        deleted = t.completing
        running = not deleted and len(current) == self.replicas
        running = running and all(all_running(r, pods.get(r.uid or "", [])) for r in current)
        stuck = next(
            (m for r in current for p in pods.get(r.uid or "", []) if (m := pod_unschedulable(p))),
            None,
        )
        replicas = [workloads[r.uid] for r in current if r.uid and r.uid in workloads]
        waiting = [w for w in replicas if not (w.get("status") or {}).get("admission")]
        found = outcome(
            t.entry,
            next(iter(waiting or replicas), None),
            running=running,
            stuck=stuck,
            evictions=evictions,
            admitted_at=admitted_at,
            gpu_seconds=gpu_seconds,
            problem=t.problem,
            intervals=together(runs),
            timeline=sorted(steps, key=lambda step: step[0]),
            deleted=deleted,
        )
        found.admission_order = tuple(
            sorted(n for r in self.replicas_all() for n in r.admission_order)
        )
        return replicas_row(t.entry, found, replicas, admitted_at)

    def replicas_all(self) -> list[Tracked]:
        return [r for slot in self.slots for r in slot]


class Deployments:
    """The mix's Deployments through the replay, by their UIDs."""

    def __init__(self) -> None:
        self.by_uid: dict[str, Serving] = {}
        self.by_name: dict[tuple[str, str], str] = {}

    def made(self, t: Tracked) -> None:
        """The replay created the Deployment `t` (its UID known)."""
        assert t.uid is not None
        self.by_uid[t.uid] = Serving(t)
        self.by_name[(t.entry.namespace, t.entry.name)] = t.uid

    def follow(self, s: Serving) -> None:
        """Another workload of several Workloads made with it (an LWS's groups: groups.py),
        followed and summed up alike; no pods are adopted for it."""
        assert s.parent.uid is not None
        self.by_uid[s.parent.uid] = s

    def adopt(
        self, live: Iterable[dict[str, Any]], pods: Mapping[str, list[dict[str, Any]]]
    ) -> list[Tracked]:
        """The replicas of the pods the ReplicaSets made since the last call (`live`: every
        pod; `pods`: by their UID), oldest first."""
        known = {r.uid for s in self.by_uid.values() for r in s.replicas_all()}
        out = []
        for pod in sorted(live, key=lambda p: (created_at(p), p["metadata"]["name"])):
            d = deployment_of(pod, self.by_name)
            if d is not None and uid(pod) not in known:
                out.append(self.by_uid[d].adopt(pod, pods))
        return out

    def deleting(self, t: Tracked) -> None:
        """The replay deletes `t` at its time: if a Deployment, its pods go with it."""
        for r in self.by_uid[t.uid].replicas_all() if t.uid in self.by_uid else ():
            r.completing = True

    def replicas(self) -> list[Tracked]:
        """Every pod of every Deployment, as the replay follows them."""
        return [r for s in self.by_uid.values() for r in s.replicas_all()]

    def newly_served(self) -> list[Serving]:
        """The workloads whose duration counts from now (Serving.starts_serving)."""
        return [s for s in self.by_uid.values() if s.starts_serving()]


def together(runs: list[list[tuple[float, float | None]]]) -> list[tuple[float, float | None]]:
    """The spans in which every replica had a pod running (each replica's runs, one list each,
    not overlapping), oldest first."""
    if not runs:
        return []
    out = list(runs[0])
    for following in runs[1:]:
        both = []
        for a_start, a_end in out:
            for b_start, b_end in following:
                start = max(a_start, b_start)
                ends = [e for e in (a_end, b_end) if e is not None]
                end = min(ends) if ends else None
                if end is None or end > start:
                    both.append((start, end))
        out = both
    return sorted(out, key=lambda span: span[0])
