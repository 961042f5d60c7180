"""Which replayed object a Workload or a pod belongs to, for every kind the sandbox replays
(Job, Pod, JobSet, LeaderWorkerSet), and where the replay creates each.

A JobSet's pods carry its UID (JobSet's label on its child Jobs' pods). A LeaderWorkerSet's
carry only its name (`leaderworkerset.sigs.k8s.io/name`: they belong to StatefulSets, the
workers' owned by the leader pod), which the replay maps to the UID of the LWS it created;
names are unique in a namespace, and in a mix (gpu_queues.whatif.mix refuses a second).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from gpu_queues.whatif.workloads import owner
from sandbox.replay.watch import uid

# Where the replay creates each kind it replays (the JobSet and LWS controllers run in the
# sandbox when the stack's Kueue has their integrations: sandbox/jobset.py, sandbox/lws.py).
COLLECTIONS: Final = {
    "Job": ("/apis/batch/v1", "jobs"),
    "Pod": ("/api/v1", "pods"),
    "JobSet": ("/apis/jobset.x-k8s.io/v1alpha2", "jobsets"),
    "LeaderWorkerSet": ("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
}
# The kinds a Workload may belong to, the first found its owner: Kueue lists an LWS group's pods
# among its Workload's owners beside the LWS (as a pod group's), so the LWS comes before Pod.
WORKLOAD_OWNERS: Final = ("LeaderWorkerSet", "JobSet", "Job", "Pod")
# JobSet's label on every pod of its child Jobs: the pods of a JobSet are one workload's.
JOBSET_UID_LABEL: Final = "jobset.sigs.k8s.io/jobset-uid"
# LWS's label on every pod of its groups (leader and workers).
LWS_NAME_LABEL: Final = "leaderworkerset.sigs.k8s.io/name"


# What Kueue's leaderworkerset integration writes on each Workload it makes (constructWorkload):
# the LWS's UID and kind, which stay when its owner reference goes.
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
OWNER_GVK_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-gvk"


def workload_owner(wl: dict[str, Any]) -> dict[str, Any] | None:
    """The replayed object a Workload belongs to (a Job, Pod, JobSet or LeaderWorkerSet). An
    LWS's is read from the labels Kueue writes, not only from its owner references: once the
    LWS is deleted, the garbage collector drops the reference to it but keeps the Workload
    while its pods, owners too, are being deleted, so its last state names only pods."""
    meta = wl.get("metadata") or {}
    gvk = str((meta.get("annotations") or {}).get(OWNER_GVK_ANNOTATION, ""))
    lws_uid = (meta.get("labels") or {}).get(JOB_UID_LABEL)
    if gvk.endswith("Kind=LeaderWorkerSet") and lws_uid:
        return {"kind": "LeaderWorkerSet", "uid": str(lws_uid)}
    return next((ref for kind in WORKLOAD_OWNERS if (ref := owner(wl, kind))), None)


def pod_key(pod: dict[str, Any], lws_uids: Mapping[tuple[str, str], str] | None = None) -> str:
    """The UID of the replayed object a pod runs for: its JobSet (through its child Job), its
    LeaderWorkerSet (by name, through `lws_uids`: (namespace, name) -> UID), its Job, or the
    pod itself."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    jobset = labels.get(JOBSET_UID_LABEL)
    if jobset:
        return str(jobset)
    lws = (lws_uids or {}).get((str(meta.get("namespace")), str(labels.get(LWS_NAME_LABEL))))
    if lws:
        return lws
    ref = owner(pod, "Job")
    return str(ref.get("uid")) if ref else uid(pod)


# The reason of the end the replay reads into a Workload gone with its owner (ended_by_deletion).
DELETED_AT_ITS_END: Final = "DeletedAtItsEnd"


def ended_by_deletion(wl: dict[str, Any]) -> dict[str, Any]:
    """A Workload of a kind the replay deletes when its time is up (mix.DELETED_WHEN_DONE),
    gone with its owner, read as finished. Kueue writes no end on it: an LWS's Workloads have no
    finalizer and the garbage collector deletes them still Admitted (Kueue v0.18.3, seen on the
    sandbox), so the last state the watch saw holds quota."""
    out = copy.deepcopy(wl)
    status = out.setdefault("status", {})
    status["conditions"] = [
        *(c for c in status.get("conditions") or [] if c.get("type") != "Finished"),
        {
            "type": "Finished",
            "status": "True",
            "reason": DELETED_AT_ITS_END,
            "message": "the replay deleted its owner when its time was up, as its user would",
        },
    ]
    return out
