"""A LeaderWorkerSet of several groups through the sandbox's replay (`Groups`): LWS's own
controller makes each group's pods, and Kueue's leaderworkerset integration makes each group a
Workload of its own (named after the group: the LWS's name and the group's index), admitted on
its own. The replay follows each group as a workload of its own (a `Tracked` group, known by
`group_key`: the LWS's UID and the group's index) and sums them up into the LWS's row as the fast
engine does (toolchain/go/whatif/lws_result.go, then gpu_queues.whatif.outcome.replicas_row):
the rules of a Deployment's replicas (serving.py), a group never replaced (a preempted group's
pods are made again for the same Workload).

The LWS serves from when all its groups run together, and again from each time they come to do
so after one was preempted: its duration (gpu-queues.dev/duration) counts from the last such
instant, when its user deletes it (the fast engine's lwsPodChanged). An LWS of one group is its
group's Workload and the replay follows it as a workload of its own (timeline.py), as before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

from sandbox.replay.serving import Serving
from sandbox.replay.tracked import Tracked

# Kueue's annotation on each group's Workload (constructWorkload), and LWS's label on each of
# a group's pods: the group's index.
WORKLOAD_GROUP_ANNOTATION: Final = "kueue.x-k8s.io/component-workload-index"
POD_GROUP_LABEL: Final = "leaderworkerset.sigs.k8s.io/group-index"


def group_key(lws_uid: str, index: object) -> str:
    """The UID the replay knows a group of an LWS by."""
    return f"{lws_uid}/{index}"


def workload_group(wl: dict[str, Any]) -> str | None:
    """The index of the LWS group a Workload is for (None when it names none)."""
    index = ((wl.get("metadata") or {}).get("annotations") or {}).get(WORKLOAD_GROUP_ANNOTATION)
    return None if index is None else str(index)


def pod_group(pod: dict[str, Any]) -> str | None:
    """The index of the LWS group a pod is of (None when it names none)."""
    index = ((pod.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
    return None if index is None else str(index)


def groups_of(lws: dict[str, Any]) -> int:
    """The LWS's groups (spec.replicas; 1 by the CRD's default)."""
    replicas = (lws.get("spec") or {}).get("replicas", 1)
    return replicas if isinstance(replicas, int) else 1


@dataclass
class Groups(Serving):
    """One LWS of several groups through the replay (`parent`, its row), a group in each slot
    (serving.Serving's rules of a row, each group a replica)."""

    groups: int = 1

    @classmethod
    def made(cls, parent: Tracked, groups: int) -> Groups:
        """The LWS `parent` the replay created (its UID known), of `groups` groups."""
        assert parent.uid is not None
        each = dataclasses.replace(
            parent.entry,
            pods=parent.entry.pods // groups,
            gpus=parent.entry.gpus // groups,
            duration=None,
        )
        slots = [
            [Tracked(each, uid=group_key(parent.uid, g), submitted=True)] for g in range(groups)
        ]
        return cls(parent, slots, groups=groups)

    @property
    def replicas(self) -> int:
        return self.groups

    def adopt(self, pod: dict[str, Any], pods: Any) -> Tracked:
        raise AssertionError("an LWS's groups are made with it, never adopted")

    def starts_serving(self) -> bool:
        """All its groups run together now, and did not at the last look: its duration counts
        from now (again, after a group's preemption)."""
        together = all(r.started_at is not None for r in self.current())
        fresh = together and not self.served
        self.served = together
        return fresh
