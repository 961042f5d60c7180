"""Which replayed object a Workload or a pod belongs to, for every kind the sandbox replays
(Job, Pod, JobSet, LeaderWorkerSet, StatefulSet, Deployment, RayCluster, the Kubeflow v1 jobs,
MPIJob, TrainJob), where the replay creates each, and the replay's index of the cluster's
Workloads and pods by the workload they are for (`Owners`). A RayCluster's pods are its own
(KubeRay's owner reference), and so are a PyTorchJob's or another Kubeflow v1 job's (the
training-operator's). A TrainJob's are its JobSet's, named after it (the Trainer's). An
MPIJob's workers are its own, but its launcher pod is its launcher Job's: both carry the
MPIJob's name (the mpi-operator's labels), which the replay maps to its UID as for an LWS.

A JobSet's pods carry its UID (JobSet's label on its child Jobs' pods). A LeaderWorkerSet's
carry only its name (`leaderworkerset.sigs.k8s.io/name`: they belong to StatefulSets, the
workers' owned by the leader pod), which the replay maps to the UID of the LWS it created;
names are unique in a namespace, and in a mix (gpu_queues.whatif.mix refuses a second). A
StatefulSet's pods are its own (their owner reference); a Deployment's are its ReplicaSet's,
each a workload of its own to Kueue (sandbox/replay/serving.py follows them). A TrainJob's
pods are its JobSet's, which the Trainer names after it: they carry the JobSet's UID, and its
name, which the replay maps to the UID of the TrainJob it created (a JobSet of the mix cannot
share a TrainJob's name in its namespace: the Trainer could not make its own).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.trainjob import distinct
from gpu_queues.whatif.workloads import KubeError, Rest, owner
from sandbox.replay.groups import group_key, groups_of, pod_group, workload_group
from sandbox.replay.watch import uid

# Where the replay creates each kind it replays (the JobSet and LWS controllers run in the
# sandbox when the stack's Kueue has their integrations: sandbox/jobset.py, sandbox/lws.py;
# kube-controller-manager's StatefulSet, Deployment and ReplicaSet controllers always do).
COLLECTIONS: Final = {
    "Job": ("/apis/batch/v1", "jobs"),
    "Pod": ("/api/v1", "pods"),
    "JobSet": ("/apis/jobset.x-k8s.io/v1alpha2", "jobsets"),
    "LeaderWorkerSet": ("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "RayCluster": ("/apis/ray.io/v1", "rayclusters"),
    # The training-operator's (sandbox/training_operator.py).
    "PyTorchJob": ("/apis/kubeflow.org/v1", "pytorchjobs"),
    "TFJob": ("/apis/kubeflow.org/v1", "tfjobs"),
    "XGBoostJob": ("/apis/kubeflow.org/v1", "xgboostjobs"),
    "PaddleJob": ("/apis/kubeflow.org/v1", "paddlejobs"),
    "JAXJob": ("/apis/kubeflow.org/v1", "jaxjobs"),
    "MPIJob": ("/apis/kubeflow.org/v2beta1", "mpijobs"),
    "TrainJob": ("/apis/trainer.kubeflow.org/v1alpha1", "trainjobs"),
}
# The Kubeflow v1 jobs: their pods and Workload are theirs (the training-operator's owner
# reference, Kueue's).
KUBEFLOW_V1: Final = ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
# Where the replay creates the runtimes of the mix's TrainJobs, before any submission.
RUNTIMES: Final = {
    "ClusterTrainingRuntime": "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
    "TrainingRuntime": "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{}/trainingruntimes",
}


def install_runtimes(rest: Rest, entries: list[Entry]) -> list[str]:
    """Create the runtimes of the mix's TrainJobs replayed here, each once, before any
    submission, as the Trainer's install puts them on a cluster (the Trainer's webhook refuses
    a TrainJob whose runtime is not there). A runtime the API server refuses is a note; its
    TrainJobs' rows say what it then answers them."""
    notes = []
    for runtime in distinct(e.runtime for e in entries if e.status == "ok"):
        meta = runtime.get("metadata") or {}
        path = RUNTIMES[str(runtime.get("kind"))].format(meta.get("namespace"))
        try:
            rest.create(path, runtime)
        except KubeError as exc:
            notes.append(
                f"the API server refused the mix's {runtime.get('kind')} {meta.get('name')}: {exc}"
            )
    return notes


# The kinds a Workload may belong to, the first found its owner: Kueue lists an LWS group's pods
# among its Workload's owners beside the LWS (as a pod group's), so the LWS comes before Pod, and
# so does a StatefulSet. (A Deployment's pods' Workloads are each its pod's.)
WORKLOAD_OWNERS: Final = (
    "LeaderWorkerSet",
    "StatefulSet",
    "JobSet",
    "RayCluster",
    *KUBEFLOW_V1,
    "MPIJob",
    "TrainJob",
    "Job",
    "Pod",
)
# The kinds whose Workloads Kueue labels with their UID (LABELLED_OWNERS).
LABELLED_OWNERS: Final = ("LeaderWorkerSet", "StatefulSet")
# JobSet's label on every pod of its child Jobs: the pods of a JobSet are one workload's.
JOBSET_UID_LABEL: Final = "jobset.sigs.k8s.io/jobset-uid"
# ... and its name: a TrainJob's JobSet's is the TrainJob's.
JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
# LWS's label on every pod of its groups (leader and workers).
LWS_NAME_LABEL: Final = "leaderworkerset.sigs.k8s.io/name"
# The mpi-operator's labels on its launcher's and workers' pods: the MPIJob's name, and its own.
MPIJOB_NAME_LABEL: Final = "training.kubeflow.org/job-name"
MPI_OPERATOR_LABEL: Final = "training.kubeflow.org/operator-name"


# What Kueue's leaderworkerset and statefulset integrations write on each Workload they make
# (constructWorkload): the owner's UID and kind, which stay when its owner reference goes.
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
OWNER_GVK_ANNOTATION: Final = "kueue.x-k8s.io/job-owner-gvk"


def workload_owner(wl: dict[str, Any]) -> dict[str, Any] | None:
    """The replayed object a Workload belongs to (a Job, Pod, JobSet, LeaderWorkerSet,
    StatefulSet, RayCluster or TrainJob). An LWS's or a StatefulSet's is read from the labels
    Kueue writes, not only from its owner references: once the LWS is deleted, the garbage
    collector drops the reference to it but keeps the Workload while its pods, owners too, are
    being deleted, so its last state names only pods."""
    meta = wl.get("metadata") or {}
    gvk = str((meta.get("annotations") or {}).get(OWNER_GVK_ANNOTATION, ""))
    owner_uid = (meta.get("labels") or {}).get(JOB_UID_LABEL)
    for kind in LABELLED_OWNERS:
        if gvk.endswith(f"Kind={kind}") and owner_uid:
            return {"kind": kind, "uid": str(owner_uid)}
    return next((ref for kind in WORKLOAD_OWNERS if (ref := owner(wl, kind))), None)


def pod_key(
    pod: dict[str, Any],
    lws_uids: Mapping[tuple[str, str], str] | None = None,
    mpijob_uids: Mapping[tuple[str, str], str] | None = None,
    trainjob_uids: Mapping[tuple[str, str], str] | None = None,
) -> str:
    """The UID of the replayed object a pod runs for: its TrainJob (by its JobSet's name,
    through `trainjob_uids`: (namespace, name) -> UID), its JobSet (through its child Job), its
    LeaderWorkerSet (by name, through `lws_uids`), its MPIJob (by name, through `mpijob_uids`,
    the launcher's pod through its Job too), its StatefulSet, its Job, or the pod itself (a
    Deployment's pods too: each is a workload of its own)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    jobset = labels.get(JOBSET_UID_LABEL)
    if jobset:
        named = (str(meta.get("namespace")), str(labels.get(JOBSET_NAME_LABEL)))
        return (trainjob_uids or {}).get(named) or str(jobset)
    if labels.get(MPI_OPERATOR_LABEL) == "mpi-operator":
        name = (str(meta.get("namespace")), str(labels.get(MPIJOB_NAME_LABEL)))
        if mpijob := (mpijob_uids or {}).get(name):
            return mpijob
    lws = (lws_uids or {}).get((str(meta.get("namespace")), str(labels.get(LWS_NAME_LABEL))))
    if lws:
        return lws
    # An LWS's pods belong to its StatefulSets too, but are the LWS's, not theirs.
    of_a_statefulset = None if LWS_NAME_LABEL in labels else owner(pod, "StatefulSet")
    # A RayCluster's head and worker pods are its own (KubeRay's owner reference), and so are a
    # Kubeflow v1 job's (the training-operator's).
    ref = of_a_statefulset or owner(pod, "RayCluster") or owner(pod, "Job")
    ref = ref or next((r for kind in KUBEFLOW_V1 if (r := owner(pod, kind))), None)
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


@dataclass
class Owners:
    """The replay's bookkeeping of which workload each Workload and pod is for: a pod group's
    pods map to its first pod's UID (the UID the replay knows the group by), an LWS's name to
    its UID; and the index of the cluster's Workloads and pods by it."""

    member_of: dict[str, str] = field(default_factory=dict)
    """A pod group's pods' UIDs -> its first's."""
    lws_uids: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, name) -> UID of each LWS the replay made (pod_key)."""
    mpijob_uids: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, name) -> UID of each MPIJob the replay made (pod_key)."""
    trainjob_uids: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, name) -> UID of each TrainJob the replay made (pod_key)."""
    grouped: set[str] = field(default_factory=set)
    """The UIDs of the LWSs of several groups: their Workloads and pods are their groups'
    (groups.group_key), an LWS of one group's its own."""

    def made(self, kind: str, namespace: str, name: str, made: list[dict[str, Any]]) -> str:
        """The replay created `made` (a pod group's pods, or one object): the UID it knows the
        workload by from now on."""
        key = uid(made[0])
        self.member_of.update((uid(m), key) for m in made)
        if kind == "LeaderWorkerSet":
            self.lws_uids[(namespace, name)] = key
            if groups_of(made[0]) > 1:
                self.grouped.add(key)
        if kind == "MPIJob":
            self.mpijob_uids[(namespace, name)] = key
        if kind == "TrainJob":
            self.trainjob_uids[(namespace, name)] = key
        return key

    def key(self, owner_uid: str) -> str:
        """The UID the replay knows a workload by, from one of its owners' (a group's pods')."""
        return self.member_of.get(owner_uid, owner_uid)

    def pod(self, pod: dict[str, Any]) -> str:
        """The UID the replay knows the workload a pod runs for by (an LWS's group's, when it
        has several)."""
        key = pod_key(pod, self.lws_uids, self.mpijob_uids, self.trainjob_uids)
        return self._of_group(self.key(key), pod_group(pod))

    def workload(self, wl: dict[str, Any]) -> str | None:
        """The UID the replay knows the workload a Workload is for by (an LWS's group's, when it
        has several), None when it is for no replayed object."""
        ref = workload_owner(wl)
        if ref is None:
            return None
        return self._of_group(self.key(str(ref.get("uid"))), workload_group(wl))

    def _of_group(self, key: str, group: str | None) -> str:
        return group_key(key, group) if key in self.grouped and group is not None else key

    def index(
        self,
        live: list[dict[str, Any]],
        departed: list[dict[str, Any]],
        pods: list[dict[str, Any]],
        deleted_at_its_end: Callable[[str], bool],
    ) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
        """Workloads by the UID the replay knows their workload by, and pods likewise (the Job,
        or the pod itself for plain pods). A Workload the garbage collector deleted (its plain
        Pod was deleted on preemption) stays as it was last; one of a workload the replay
        deleted when its time was up (`deleted_at_its_end`, by that UID) is finished
        (ended_by_deletion)."""
        workloads: dict[str, dict[str, Any]] = {}
        for wl in departed + live:
            if (key := self.workload(wl)) is not None:
                workloads[key] = wl
        owned = {self.workload(wl) for wl in live}
        for key in set(workloads) - owned:
            if deleted_at_its_end(key):
                workloads[key] = ended_by_deletion(workloads[key])
        by_owner: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_owner.setdefault(self.pod(pod), []).append(pod)
        return workloads, by_owner
