"""The workload mix a what-if replays: ordinary Kubernetes manifests, read from a file or a
folder and checked against the stack, each one either ready to submit or refused with the
reason (never an exception: a bad manifest is a row of the report, not a failed replay).

A manifest is what a user would `kubectl apply`: a batch/v1 Job (or a Pod, a
jobset.x-k8s.io/v1alpha2 JobSet, a kubeflow.org/v1 PyTorchJob, TFJob, XGBoostJob, PaddleJob or
JAXJob, a ray.io/v1 RayJob or RayCluster, a kubeflow.org/v2beta1 MPIJob or a
trainer.kubeflow.org/v1alpha1 TrainJob, an apps/v1 StatefulSet or a leaderworkerset.x-k8s.io/v1
LeaderWorkerSet, when Kueue's integration for it is on) with its namespace,
the `kueue.x-k8s.io/queue-name` label and, when the stack declares WorkloadPriorityClasses,
`kueue.x-k8s.io/priority-class`. Two optional annotations drive the replay's clock:
  gpu-queues.dev/submit-at   offset from the start of the replay (e.g. 15m); default 0
  gpu-queues.dev/duration    how long the job runs once its pods run (e.g. 2h); default:
                             until the end of the replay
Durations are numbers with units d, h, m, s, combined as in Go (1h30m, 90s, 1.5h, 1d).

Reading the files is in documents.py, durations in durations.py, counting GPUs in gpus.py,
a workload's pod sets in podsets.py, pod groups (several Pods, one workload) in podgroups.py,
a TrainJob's (and the runtime documents a mix carries for its TrainJobs, which are no rows) in
trainjob.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final, Literal

from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.fields import GO_DURATION_MAX_SECONDS, labels_problem, name_problem
from gpu_queues.values import as_dict, tree_copy
from gpu_queues.whatif.documents import Limits, MixDocument, read_documents
from gpu_queues.whatif.durations import DurationError, parse_duration
from gpu_queues.whatif.podgroups import grouped
from gpu_queues.whatif.podsets import PodSet, held, kind_problem, pod_sets
from gpu_queues.whatif.shapes import body_problem, head_problem
from gpu_queues.whatif.trainjob import (
    Runtimes,
    is_runtime,
    runtime_key,
    runtime_object,
    trainjob_pod_sets,
)

ANNOTATION_SUBMIT_AT: Final = "gpu-queues.dev/submit-at"
ANNOTATION_DURATION: Final = "gpu-queues.dev/duration"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
# The sandbox's own lever on a pod (sandbox/kwok-stages.yaml); the replay sets it itself.
COMPLETE_AFTER: Final = "sandbox.gpu-queues.dev/complete-after"
DEFAULT_NAMESPACE: Final = "default"  # what kubectl uses for a manifest without one

Status = Literal["ok", "invalid", "unsupported"]

# Kinds Kueue's integrations manage (group, kind) -> the framework name that enables them.
FRAMEWORKS: Final[dict[tuple[str, str], str]] = {
    ("batch", "Job"): "batch/job",
    ("", "Pod"): "pod",
    ("apps", "Deployment"): "deployment",
    ("apps", "StatefulSet"): "statefulset",
    ("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io/jobset",
    ("kubeflow.org", "MPIJob"): "kubeflow.org/mpijob",
    ("kubeflow.org", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("kubeflow.org", "TFJob"): "kubeflow.org/tfjob",
    ("kubeflow.org", "PaddleJob"): "kubeflow.org/paddlejob",
    ("kubeflow.org", "XGBoostJob"): "kubeflow.org/xgboostjob",
    ("kubeflow.org", "JAXJob"): "kubeflow.org/jaxjob",
    ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org/trainjob",
    ("ray.io", "RayJob"): "ray.io/rayjob",
    ("ray.io", "RayCluster"): "ray.io/raycluster",
    ("ray.io", "RayService"): "ray.io/rayservice",
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkerset.x-k8s.io/leaderworkerset",
    ("workload.codeflare.dev", "AppWrapper"): "workload.codeflare.dev/appwrapper",
    ("sparkoperator.k8s.io", "SparkApplication"): "sparkoperator.k8s.io/sparkapplication",
}
# What an engine replays: Jobs, Pods, StatefulSets and Deployments on both (the sandbox's Job,
# StatefulSet, Deployment and ReplicaSet controllers are kube-controller-manager's, kwok plays
# every pod's kubelet: sandbox/replay/serving.py follows a Deployment's pods), JobSets on both
# (the fast one plays the JobSet controller as far as Kueue reads it; the sandbox runs JobSet's
# own when Kueue's integration is on: sandbox/jobset.py), LeaderWorkerSets on both (the fast one
# plays the LWS and StatefulSet controllers as far as Kueue reads them, toolchain/go/whatif/lws.go;
# the sandbox runs LWS's own when Kueue's integration is on, sandbox/lws.py, for an LWS of one
# group), RayClusters on both (the fast one plays KubeRay as far as Kueue reads it,
# toolchain/go/whatif/ray.go; the sandbox runs KubeRay's own operator, sandbox/kuberay.py), the
# Kubeflow v1 jobs (PyTorchJobs, TFJobs, XGBoostJobs, PaddleJobs, JAXJobs) on both (the sandbox
# runs the training-operator, sandbox/training_operator.py), RayJobs, MPIJobs and
# TrainJobs on the fast one only (it plays their controllers as far as Kueue reads them; the
# sandbox has neither the mpi-operator nor Trainer, and its KubeRay cannot end a RayJob,
# whose status it asks the Ray head's dashboard for: sandbox/replay/engine.py refuses them
# there). Other kinds need controllers neither has (RayService, ...).
REPLAYABLE: Final = frozenset(
    {
        "batch/job",
        "pod",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/pytorchjob",
        "ray.io/rayjob",
        "kubeflow.org/mpijob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/jaxjob",
        "ray.io/raycluster",
        "trainer.kubeflow.org/trainjob",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "deployment",
    }
)
REPLAYED: Final = (
    "the what-if replays Jobs, Pods, JobSets, PyTorchJobs, RayJobs, MPIJobs, TFJobs, "
    "XGBoostJobs, PaddleJobs, JAXJobs, RayClusters, StatefulSets, Deployments, TrainJobs and "
    "LeaderWorkerSets"
)
# Kinds Kueue reads no end of (a RayCluster's Workload is never Finished by its own status; a
# StatefulSet, a Deployment or a LeaderWorkerSet serves until it is deleted): the replay has
# their user delete them when their duration is up, and Kueue finishes the Workload of an owner
# gone (OwnerNotFound), or, for a StatefulSet's group Workload and a Deployment's pods'
# Workloads, which have no controller, and an LWS's, which has no finalizer, the garbage
# collector deletes them; for them that is how they end, not a preemption.
DELETED_WHEN_DONE: Final = frozenset({"RayCluster", "StatefulSet", "Deployment", "LeaderWorkerSet"})
# What the Pods of a pod group must agree on, being one workload: its queue, when it is
# submitted and how long it runs (the field as written, the Entry's attribute).
GROUP_AGREES: Final = (
    (f"metadata.labels[{QUEUE_LABEL}]", "queue"),
    (f"metadata.annotations[{ANNOTATION_SUBMIT_AT}]", "submit_at"),
    (f"metadata.annotations[{ANNOTATION_DURATION}]", "duration"),
)


@dataclass(frozen=True)
class TeamQueue:
    """Where a team's workloads go: its namespace and LocalQueue, and the ClusterQueue."""

    team: str
    namespace: str
    local_queue: str
    cluster_queue: str


@dataclass(frozen=True)
class Catalog:
    """What the stack offers a workload: queues per namespace, priority classes, and the
    kinds Kueue manages (its integrations, as the running Kueue is configured)."""

    queues: tuple[TeamQueue, ...]
    priority_classes: frozenset[str] = frozenset()
    frameworks: frozenset[str] = frozenset({"batch/job"})
    owners: tuple[tuple[str, str], ...] = ()
    """(namespace, team) of every namespace a team owns, with a LocalQueue or not."""

    @classmethod
    def from_stack(cls, config: StackConfig, frameworks: Iterable[str]) -> Catalog:
        return cls(
            queues=tuple(
                TeamQueue(t.name, namespace, queue, t.cluster_queue)
                for t in config.teams
                for queue, namespace in t.queues
            ),
            priority_classes=frozenset(p.name for p in config.priority_classes),
            frameworks=frozenset(frameworks),
            owners=tuple((ns, t.name) for t in config.teams for ns in t.all_namespaces),
        )

    def teams_in(self, namespace: str) -> list[TeamQueue]:
        """The queues in `namespace` (of the one team that owns it)."""
        return list(self._queues_by_namespace.get(namespace, ()))

    def owner(self, namespace: str) -> str | None:
        """The team that owns `namespace`, with a LocalQueue there or not (the first of
        `owners` to name it)."""
        return self._owner_by_namespace.get(namespace)

    # Each document's check asks both of its namespace: a scan of every queue and owner per
    # document was 50,000 x 1,000 teams on Kueue's large-scale configuration (docs/what-if.md,
    # Speed). Computed once per catalog (frozen, so they cannot go stale).
    @cached_property
    def _queues_by_namespace(self) -> dict[str, tuple[TeamQueue, ...]]:
        grouped: dict[str, list[TeamQueue]] = {}
        for q in self.queues:
            grouped.setdefault(q.namespace, []).append(q)
        return {ns: tuple(qs) for ns, qs in grouped.items()}

    @cached_property
    def _owner_by_namespace(self) -> dict[str, str]:
        owners: dict[str, str] = {}
        for ns, team in self.owners:
            owners.setdefault(ns, team)
        return owners


@dataclass(frozen=True)
class Entry:
    """One manifest of the mix: what the report names it, and either what to submit or why
    it is not replayed."""

    index: int
    """Position in the mix (files in path order, documents in file order)."""
    source: str
    """`path#n`: the file and the document's number in it (from 1)."""
    kind: str
    name: str
    namespace: str
    queue: str | None
    status: Status = "ok"
    problem: str | None = None
    team: str | None = None
    cluster_queue: str | None = None
    submit_at: float = 0.0
    duration: float | None = None
    gpus: int = 0
    """GPUs the workload holds while it runs (every pod together)."""
    pods: int = 1
    """Pods that must run for the workload to run (over its pod sets: a Job's parallelism)."""
    manifest: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The object to create (empty when not replayed)."""
    runtime: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    """A TrainJob's runtime, as the engine creates it beside it (trainjob.py)."""
    members: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)
    """A pod group's Pods, all created at its time (gpu_queues.whatif.podgroups); manifest is
    the first of them. Empty for anything else."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


# --- checking --------------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _sanitised(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object as the replay creates it: no server-set fields, the namespace set, and the
    sandbox's completion lever removed (the replay pulls it when the job's time is up)."""
    obj: dict[str, Any] = tree_copy(body)
    obj.pop("status", None)
    meta = as_dict(obj.get("metadata"))
    obj["metadata"] = meta
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        meta.pop(key, None)
    meta["namespace"] = namespace
    for pod_set in pod_sets(str(obj.get("kind")), obj):
        if isinstance(pod_set.meta.get("annotations"), dict):
            pod_set.meta["annotations"].pop(COMPLETE_AFTER, None)
    return obj


class _Refused(Exception):
    """Why a document is not replayed (raised by the steps of `check`)."""

    def __init__(self, problem: str, status: Status = "invalid") -> None:
        super().__init__(problem)
        self.problem = problem
        self.status = status


@dataclass(frozen=True)
class _Head:
    """What `check` reads of a document's apiVersion, kind and metadata."""

    api_version: str
    kind: str
    meta: dict[str, Any]
    name: str
    namespace: str
    labels: dict[str, Any]
    annotations: dict[str, Any]
    queue: str | None

    @classmethod
    def of(cls, body: dict[str, Any], source: str) -> _Head:
        meta = as_dict(body.get("metadata"))
        labels = as_dict(meta.get("labels"))
        return cls(
            api_version=_str(body.get("apiVersion")) or "",
            kind=_str(body.get("kind")) or "?",
            meta=meta,
            name=_str(meta.get("name")) or _str(meta.get("generateName")) or source,
            namespace=_str(meta.get("namespace")) or DEFAULT_NAMESPACE,
            labels=labels,
            annotations=as_dict(meta.get("annotations")),
            queue=_str(labels.get(QUEUE_LABEL)),
        )


def check(
    doc: MixDocument, index: int, catalog: Catalog, runtimes: Runtimes | None = None
) -> Entry:
    """One document against the stack: an Entry ready to submit, or refused with the reason
    (a TrainJob's runtime among the mix's `runtimes`)."""
    body = doc.body
    if doc.error is not None:
        return Entry(index, doc.source, "?", doc.source, "", None, "invalid", doc.error)
    if not isinstance(body, dict):
        return Entry(
            index,
            doc.source,
            "?",
            doc.source,
            "",
            None,
            "invalid",
            "not a Kubernetes object (expected a mapping with apiVersion, kind and metadata)",
        )
    head = _Head.of(body, doc.source)
    try:
        shape = head_problem(body)
        if shape is not None:
            raise _Refused(shape)
        _framework(head, catalog)
        _names(head)
        shape = body_problem(body, head.kind) or kind_problem(head.kind, body)
        if shape is not None:
            raise _Refused(shape)
        sets, runtime = _pod_sets(head, body, runtimes or Runtimes())
        match = _local_queue(head, catalog)
        _priority(head, catalog)
        submit_at, duration = _timing(head.annotations)
    except _Refused as refused:
        return Entry(
            index,
            doc.source,
            head.kind,
            head.name,
            head.namespace,
            head.queue,
            refused.status,
            refused.problem,
        )
    gpus, pods = held(sets)
    return Entry(
        index,
        doc.source,
        head.kind,
        head.name,
        head.namespace,
        head.queue,
        team=match.team,
        cluster_queue=match.cluster_queue,
        submit_at=submit_at,
        duration=duration,
        gpus=gpus,
        pods=pods,
        manifest=_sanitised(body, head.namespace),
        runtime=runtime,
    )


def _pod_sets(
    head: _Head, body: dict[str, Any], runtimes: Runtimes
) -> tuple[list[PodSet], dict[str, Any] | None]:
    """The object's pod sets, and for a TrainJob the runtime they come from (refused, naming
    spec.runtimeRef, when the mix holds none)."""
    if head.kind != "TrainJob":
        return pod_sets(head.kind, body), None
    try:
        runtime = runtimes.named(body, head.namespace)
    except LookupError as exc:
        raise _Refused(str(exc)) from None
    return trainjob_pod_sets(body, runtime), runtime


def _framework(head: _Head, catalog: Catalog) -> str:
    """The Kueue integration that manages the object: enabled on the stack (else unsupported,
    naming the integration to enable) and replayable."""
    kind, api_version = head.kind, head.api_version
    if not api_version or kind == "?":
        raise _Refused("no apiVersion or kind: not a Kubernetes object")
    if not _str(head.meta.get("name")):
        raise _Refused("metadata.name is missing (the replay names each workload in its report)")
    framework = FRAMEWORKS.get((_group(api_version), kind))
    if framework is None:
        raise _Refused(
            f"{kind} ({api_version}) is not a workload Kueue manages; {REPLAYED}",
            "unsupported",
        )
    if framework not in catalog.frameworks:
        enabled = ", ".join(sorted(catalog.frameworks)) or "none"
        raise _Refused(
            f"Kueue does not manage {kind} on this stack: integration {framework} is not "
            f"enabled; add it to kueue.manager.integrations.frameworks (now: {enabled})",
            "unsupported",
        )
    if framework not in REPLAYABLE:
        why = f"neither engine plays a {kind} controller yet (issue 40)"
        raise _Refused(f"{kind} is not replayed: {why}; {REPLAYED}", "unsupported")
    return framework


def _names(head: _Head) -> None:
    """The names the API server checks before anything else: the object's (a Job's fits the
    label Kubernetes copies it into), its namespace's, its labels'. A mix comes from users and
    from clusters `record` reads, so a name no cluster would take is refused here, by field."""
    name = _str(head.meta.get("name")) or ""
    problem = name_problem(name, "job" if head.kind == "Job" else "object")
    if problem:
        raise _Refused(f"metadata.name: {problem}")
    namespace = _str(head.meta.get("namespace"))
    if namespace is not None and (problem := name_problem(namespace, "namespace")):
        raise _Refused(f"metadata.namespace: {problem}")
    problem = labels_problem(head.labels)
    if problem:
        raise _Refused(f"metadata.labels{problem}")


def _local_queue(head: _Head, catalog: Catalog) -> TeamQueue:
    """The team queue the object names: a LocalQueue of a team that owns its namespace."""
    namespace, queue = head.namespace, head.queue
    owners = catalog.teams_in(namespace)
    owner = catalog.owner(namespace)
    if not owners and owner is not None:
        queues = ", ".join(
            f"{q.local_queue} in {q.namespace}" for q in catalog.queues if q.team == owner
        )
        raise _Refused(
            f"namespace {namespace} (team {owner}) has no LocalQueue: {owner}'s queues: {queues}"
        )
    if not owners:
        known = ", ".join(f"{q.namespace} ({q.team})" for q in catalog.queues) or "none"
        given = "" if _str(head.meta.get("namespace")) else " (none given, so kubectl's default)"
        raise _Refused(f"namespace {namespace}{given}: no team owns it (team namespaces: {known})")
    if queue is None:
        offered = ", ".join(q.local_queue for q in owners)
        raise _Refused(
            f"no {QUEUE_LABEL} label: Kueue would not queue it; set it to the team's "
            f"LocalQueue ({offered})"
        )
    match = next((q for q in owners if q.local_queue == queue), None)
    if match is None:
        offered = ", ".join(q.local_queue for q in owners)
        raise _Refused(
            f"queue {queue} does not exist in namespace {namespace} (its LocalQueue: {offered})"
        )
    return match


def _priority(head: _Head, catalog: Catalog) -> None:
    priority = _str(head.labels.get(PRIORITY_LABEL))
    if priority is not None and priority not in catalog.priority_classes:
        declared = ", ".join(sorted(catalog.priority_classes)) or "none"
        raise _Refused(
            f"priority class {priority} is not declared by the stack (priorityClasses: {declared})"
        )


def _timing(annotations: dict[str, Any]) -> tuple[float, float | None]:
    """When the replay submits the object, and how long it runs (None: until it finishes)."""
    try:
        submit_at = parse_duration(annotations.get(ANNOTATION_SUBMIT_AT, "0s"))
    except DurationError as exc:
        raise _Refused(f"{ANNOTATION_SUBMIT_AT}: {exc}") from None
    duration: float | None = None
    if ANNOTATION_DURATION in annotations:
        try:
            duration = parse_duration(annotations[ANNOTATION_DURATION])
        except DurationError as exc:
            raise _Refused(f"{ANNOTATION_DURATION}: {exc}") from None
        if duration <= 0:
            raise _Refused(f"{ANNOTATION_DURATION}: must be longer than 0s")
        if submit_at + duration > GO_DURATION_MAX_SECONDS:
            raise _Refused(
                f"{ANNOTATION_SUBMIT_AT} and {ANNOTATION_DURATION}: the job would end beyond "
                "what Go's time.Duration holds (about 292 years from the start)"
            )
    return submit_at, duration


UNCHECKED: Final = "the what-if could not check it"


def _checked(doc: MixDocument, index: int, catalog: Catalog, runtimes: Runtimes) -> Entry:
    """`check`, with a last resort: a document that breaks the checks themselves is a row
    all the same (the mix tests fuzz every field so that this is never reached)."""
    try:
        return check(doc, index, catalog, runtimes)
    except Exception as exc:  # a bug here must not cost the replay of the rest
        return Entry(
            index, doc.source, "?", doc.source, "", None, "invalid",
            f"{UNCHECKED} ({type(exc).__name__}: {exc})",
        )  # fmt: skip


def load_mix(
    path: Path, catalog: Catalog, root: Path | None = None, limits: Limits | None = None
) -> list[Entry]:
    """Every manifest under `path`, checked; a duplicate (same kind, namespace and name) is
    refused after its first appearance; a pod group's Pods are one entry
    (gpu_queues.whatif.podgroups). MixTooLarge (before any file is read, for its bytes) when
    the mix is over `limits`."""
    entries: list[Entry] = []
    seen: dict[tuple[str, str, str], str] = {}
    docs = list(read_documents(path, root, limits))
    runtimes, refused = runtimes_of(docs)
    for index, doc in enumerate(docs):
        if is_runtime(doc.body):
            entries.extend(refused.get(index, ()))
            continue
        entry = _checked(doc, index, catalog, runtimes)
        if entry.status == "ok":
            first = seen.setdefault(entry.key, entry.source)
            if first != entry.source:
                entry = Entry(
                    index,
                    entry.source,
                    entry.kind,
                    entry.name,
                    entry.namespace,
                    entry.queue,
                    "invalid",
                    f"a {entry.kind} {entry.namespace}/{entry.name} comes earlier "
                    f"in the mix ({first}); names must be unique",
                )
        entries.append(entry)
    return grouped(entries, GROUP_AGREES)


def submission_order(entries: Iterable[Entry]) -> list[Entry]:
    """Replayable entries by submission time, then mix order."""
    return sorted((e for e in entries if e.status == "ok"), key=lambda e: (e.submit_at, e.index))


def runtimes_of(docs: list[MixDocument]) -> tuple[Runtimes, dict[int, list[Entry]]]:
    """The mix's Trainer runtimes (trainjob.py), and a row for each refused one: its shape, its
    names, a different one of an earlier one's name (an identical copy is the same runtime).
    A valid runtime is no row: it is no workload."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    sources: dict[tuple[str, str, str], str] = {}
    refused: dict[int, list[Entry]] = {}
    refused_keys: set[tuple[str, str, str]] = set()
    for index, doc in enumerate(docs):
        body = doc.body
        if doc.error is not None or not is_runtime(body):
            continue
        head = _Head.of(body, doc.source)
        problem = head_problem(body) or body_problem(body, head.kind)
        if problem is None and not _str(head.meta.get("name")):
            problem = "metadata.name is missing (TrainJobs name their runtime by it)"
        if problem is None:
            try:
                _names(head)
            except _Refused as names:
                problem = names.problem
        key = runtime_key(body, head.namespace)
        if problem is None and found.get(key) == runtime_object(body, head.namespace):
            continue  # the same runtime again: a recording's files each carry their TrainJobs'
        if problem is None and key in found:
            problem = (
                f"a {head.kind} {head.name} comes earlier in the mix ({sources[key]}); "
                "names must be unique"
            )
        if problem is not None:
            refused[index] = [
                Entry(index, doc.source, head.kind, head.name, head.namespace, None, "invalid",
                      problem)
            ]  # fmt: skip
            refused_keys.add(key)
            continue
        found[key], sources[key] = runtime_object(body, head.namespace), doc.source
    return Runtimes(found, frozenset(refused_keys - found.keys())), refused
