"""A live Workload's owner as the what-if mix writes it: which owner kinds are read (Jobs,
plain Pods and pod groups, JobSets, MPIJobs, the Kubeflow v1 jobs, the Ray kinds, StatefulSets,
LeaderWorkerSets, TrainJobs (owner_trainjob.py, with their runtimes) and, through their pods,
Deployments), how they are read from the
API (`Owners`, once per namespace and kind), and the manifest made of an owner and its
Workload (`workload_manifest`; a pod group's Pods, `pod_group_manifests`), keeping only what
admission depends on. `gpuq record` (record.py) writes these manifests to files; `gpuq status
--eta` (eta_mix.py) replays them (a pod group's not yet: it is a row saying so).

The cluster's strings are not trusted: every name written is checked against Kubernetes' rules
(gpu_queues/kueue/fields.py), and what cannot be written is `Unrecordable` with the reason as
one line of ASCII.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gpu_queues.kueue.fields import name_rule_problem
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.values import as_dict, as_list, as_str
from gpu_queues.whatif.mix import PRIORITY_LABEL, QUEUE_LABEL
from gpu_queues.whatif.podgroups import GROUP_LABEL, TOTAL_COUNT
from gpu_queues.whatif.podsets import (
    KUBEFLOW_V1,
    LWS_LEADER,
    LWS_WORKER,
    MAIN,
    MPI_REPLICA_TYPES,
    SUBMITTER,
)
from gpu_queues.whatif.podsets import pod_sets as pod_sets_of
from gpu_queues.whatif.workloads import KubeError, Rest, owner

MIN_PARALLELISM: Final = "kueue.x-k8s.io/job-min-parallelism"  # Kueue's partial admission


# Kueue's pod webhook writes it on each Pod of a group: the name of the group Workload's pod
# set the pod counts in (its role: a hash of what admission reads of its spec).
ROLE_HASH: Final = "kueue.x-k8s.io/role-hash"


IMAGE_PLACEHOLDER: Final = "gpu-queues.invalid/recorded:image-dropped"


WORKLOAD_PRIORITY_GROUP: Final = "kueue.x-k8s.io"


# Of a pod spec, what Kueue's flavor assignment and quota, and the scheduler's fit, read.
_POD_KEPT: Final = ("restartPolicy", "priorityClassName", "nodeSelector", "tolerations")


KEPT_NOTE: Final = (
    "# Only what admission depends on is kept: each pod set's pods, its containers' and init\n"
    "# containers' names and resource requests and limits, a sidecar's restartPolicy, and the\n"
    "# pod's restartPolicy, nodeSelector, node affinity, tolerations and priorityClassName.\n"
    "# Dropped: env values, args, commands, volumes (their sources) and volume mounts, secrets,\n"
    "# image pull secrets, the service account, probes, ports, security contexts, labels and\n"
    f"# annotations; every image is the placeholder {IMAGE_PLACEHOLDER}\n"
    "# (images are not needed for admission).\n"
)


class Unrecordable(Exception):
    """Why a Workload is not recorded (or replayed: gpu_queues/tools/eta.py reads Workloads into
    manifests with `workload_manifest` and `Owners` too)."""


def comment_text(text: str) -> str:
    """What the cluster sent, as one line of ASCII for a comment of the mix or a line on
    stderr: a line break or control character cannot start a line or a document there."""
    flat = " ".join(text.split())
    return "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in flat)


def name_problem(value: Any, rule: str, what: str) -> str | None:
    """Why `value` cannot be written as `what` (one line of ASCII), or None when Kubernetes'
    `rule` for it holds (gpu_queues.kueue.fields.NAME_RULES)."""
    says = name_rule_problem(value, rule)
    if says is None:
        return None
    shown = comment_text(repr(value))
    shown = shown if len(shown) <= 80 else shown[:79] + "..."
    return f"malformed: {what} {shown} is not {says}"


def checked_name(value: Any, rule: str, what: str) -> str:
    """`value`, checked by `rule`; Unrecordable when it fails."""
    problem = name_problem(value, rule, what)
    if problem is not None:
        raise Unrecordable(problem)
    return str(value)


# The kinds whose shape is replica specs by replica type (the Kubeflow v1 jobs', the
# training operator's; an MPIJob's, the mpi-operator's): their apiVersion, where the specs are,
# and the replica types in Kueue's order (podsets.py's, the mix's one rule of their pod sets).
REPLICA_KINDS: Final[Mapping[str, tuple[str, str, tuple[str, ...]]]] = {
    **{kind: ("kubeflow.org/v1", k.specs, k.types) for kind, k in KUBEFLOW_V1.items()},
    "MPIJob": ("kubeflow.org/v2beta1", "mpiReplicaSpecs", MPI_REPLICA_TYPES),
}


# The Ray kinds (KubeRay's): a RayCluster's head and worker groups, a RayJob's cluster's and
# its submitter.
RAY_KINDS: Final = ("RayJob", "RayCluster")


# The owner kinds recorded, and where the API lists (or, for a Pod, gets) them: Kueue's
# integrations whose Workloads the what-if replays from a recording. Another owner (an
# AppWrapper, a RayService, ...) is a comment naming it.
OWNER_PATHS: Final[dict[str, str]] = {
    "Job": "/apis/batch/v1/namespaces/{namespace}/jobs",
    # Before Pod: a StatefulSet's Workload, and each of an LWS's groups', is owned by its pods
    # too (Kueue makes them a group).
    "StatefulSet": "/apis/apps/v1/namespaces/{namespace}/statefulsets",
    "LeaderWorkerSet": "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{namespace}/leaderworkersets",
    "Pod": "/api/v1/namespaces/{namespace}/pods/{name}",
    "JobSet": "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets",
    **{
        kind: f"/apis/{api}/namespaces/{{namespace}}/{kind.lower()}s"
        for kind, (api, _, _) in REPLICA_KINDS.items()
    },
    **{kind: f"/apis/ray.io/v1/namespaces/{{namespace}}/{kind.lower()}s" for kind in RAY_KINDS},
    # Its runtime is read too (RUNTIME_PATHS) and recorded beside it: owner_trainjob.py.
    "TrainJob": "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs",
}


# A Deployment owns no Workload: Kueue's pod integration makes one of each of its pods, owned
# by the Pod, which its ReplicaSet owns, which the Deployment owns. Read to find it from a Pod.
ANCESTOR_PATHS: Final[dict[str, str]] = {
    "ReplicaSet": "/apis/apps/v1/namespaces/{namespace}/replicasets",
    "Deployment": "/apis/apps/v1/namespaces/{namespace}/deployments",
}


# The Trainer's runtimes a TrainJob names (gpu_queues/whatif/trainjob.py): no owners of a
# Workload, but read as they are, so the mix can carry the runtime a TrainJob's pods come from
# (a recorded TrainJob's, or `gpuq status --eta --submit` of one whose runtime is on the cluster).
RUNTIME_PATHS: Final[dict[str, str]] = {
    "ClusterTrainingRuntime": "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
    "TrainingRuntime": (
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainingruntimes"
    ),
}


RECORDED_KINDS: Final = (
    "Jobs, Pods, JobSets, StatefulSets, Deployments, LeaderWorkerSets, TrainJobs, MPIJobs, "
    "RayJobs, RayClusters and the Kubeflow v1 jobs (" + ", ".join(KUBEFLOW_V1) + ")"
)


def recorded_owner(wl: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Workload's ownerReference of a kind recorded (OWNER_PATHS), if it has one."""
    return next((ref for kind in OWNER_PATHS if (ref := owner(wl, kind)) is not None), None)


class Owners:
    """The owners of the Workloads (and a Pod's ReplicaSet and Deployment, the Trainer
    runtimes), read once per namespace and kind (a Pod: one by one)."""

    def __init__(self, rest: Rest) -> None:
        self.rest = rest
        self.listed: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        path = OWNER_PATHS.get(kind) or ANCESTOR_PATHS.get(kind) or RUNTIME_PATHS.get(kind)
        if path is None:
            return None
        if "{name}" in path:
            try:
                return as_dict(self.rest.get(path.format(namespace=namespace, name=name)))
            except KubeError as exc:
                if exc.status == 404:
                    return None
                raise
        if (kind, namespace) not in self.listed:
            try:
                listed = self.rest.get(path.format(namespace=namespace))
            except KubeError as exc:
                if exc.status != 404:  # 404: the kind's CRD is not installed: none of it
                    raise
                listed = {}
            self.listed[kind, namespace] = {
                str(as_dict(o.get("metadata")).get("name")): o
                for o in map(as_dict, as_list(as_dict(listed).get("items")))
            }
        return self.listed[kind, namespace].get(name)


def workload_manifest(
    wl: dict[str, Any], kind: str, namespace: str, name: str, found: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The Workload's owner (`found`, as the API has it) as the mix submits it: its pod sets'
    pods and pod templates (what admission reads, from the Workload), its queue and priority;
    Unrecordable when it cannot be."""
    pod_sets = [as_dict(p) for p in as_list(as_dict(wl.get("spec")).get("podSets"))]
    metadata = manifest_metadata(wl, namespace, name, found)
    if kind == "TrainJob":  # its pods come from its runtime: owner_trainjob.py reads both
        raise Unrecordable("a TrainJob is read with its runtime (owner_trainjob.py)")
    if kind in ("StatefulSet", "Deployment"):
        return _replicated(kind, metadata, pod_sets, as_dict(as_dict(found).get("spec")))
    if kind in ("JobSet", "LeaderWorkerSet") or kind in REPLICA_KINDS or kind in RAY_KINDS:
        return _multi_pod_set(kind, metadata, pod_sets, as_dict(as_dict(found).get("spec")))
    if len(pod_sets) != 1:
        raise Unrecordable(f"malformed: a {kind}'s Workload has {len(pod_sets)} pod sets, not one")
    pod_set = pod_sets[0]
    pod_spec = kept_pod_spec(as_dict(pod_set.get("template")).get("spec"))
    if kind == "Pod":
        if len(pod_owners(wl)) != 1 or pod_set.get("count", 1) != 1:
            raise Unrecordable("a group of pods (one Workload of several Pods): not read here")
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
    count = pod_set_count(pod_set)
    min_count = pod_set.get("minCount")
    if isinstance(min_count, int) and not isinstance(min_count, bool) and min_count < count:
        metadata["annotations"][MIN_PARALLELISM] = str(min_count)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        # One wave of the pod set's pods: the duration is the whole run's.
        "spec": {"parallelism": count, "completions": count, "template": {"spec": pod_spec}},
    }


def manifest_metadata(
    wl: Mapping[str, Any], namespace: str, name: str, found: Mapping[str, Any] | None
) -> dict[str, Any]:
    """An owner's metadata in the mix: its name, and the Workload's queue and priority (else
    the owner's priority label); no annotations yet."""
    spec = as_dict(wl.get("spec"))
    owner_meta = as_dict(as_dict(found).get("metadata"))
    labels = {QUEUE_LABEL: checked_name(spec.get("queueName"), "label", "its queue")}
    ref = as_dict(spec.get("priorityClassRef"))
    priority = (
        as_str(ref.get("name")) if ref.get("group") == WORKLOAD_PRIORITY_GROUP else None
    ) or as_str(as_dict(owner_meta.get("labels")).get(PRIORITY_LABEL))
    if priority:
        labels[PRIORITY_LABEL] = checked_name(priority, "label", "its priority class")
    return {"name": name, "namespace": namespace, "labels": labels, "annotations": {}}


def pod_owners(wl: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Workload's ownerReferences to Pods: one for a plain Pod, every member's for a pod
    group (Kueue adds each Pod of the group as an owner of its one Workload)."""
    refs = as_list(as_dict(wl.get("metadata")).get("ownerReferences"))
    return [as_dict(r) for r in refs if as_dict(r).get("kind") == "Pod"]


def group_of(pod: Mapping[str, Any] | None) -> str | None:
    """The pod group a Pod belongs to, by the label Kueue reads (None: a single Pod)."""
    name = as_dict(as_dict(as_dict(pod).get("metadata")).get("labels")).get(GROUP_LABEL)
    return name if isinstance(name, str) and name else None


def pod_group_manifests(
    wl: dict[str, Any], namespace: str, pods: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """A pod group's Workload and its Pods (`pods`, as the API has them) as the mix submits
    the group: one Pod document per member (by name), named as it,
    its template from the Workload's pod set of its role (the pod's ROLE_HASH; a Workload of
    one pod set needs none), its group label and total count kept, the queue and priority
    the Workload's. Each role's pods must be its pod set's count and the total count the
    number of pods, or the group changed since Kueue made its Workload: Unrecordable."""
    listed = as_list(as_dict(wl.get("spec")).get("podSets"))
    pod_sets = {str(as_dict(p).get("name")): as_dict(p) for p in listed}
    group = checked_name(group_of(pods[0]), "object", "its pod group's name")
    out: list[dict[str, Any]] = []
    roles: dict[str, int] = {}
    totals: set[str] = set()
    # By name: the Workload's owners are in the order Kueue's cache listed the pods.
    for pod in sorted(pods, key=lambda p: str(as_dict(p.get("metadata")).get("name"))):
        meta = as_dict(pod.get("metadata"))
        name = checked_name(meta.get("name"), "object", "a pod's name")
        annotations = as_dict(meta.get("annotations"))
        if group_of(pod) != group:
            raise Unrecordable(f"its Pod {name} is not of pod group {group}")
        role = annotations.get(ROLE_HASH) if len(pod_sets) != 1 else next(iter(pod_sets))
        if not isinstance(role, str) or role not in pod_sets:
            raise Unrecordable(
                f"malformed: its Pod {name}'s {ROLE_HASH} {comment_text(repr(role))} names none "
                f"of its Workload's pod sets"
            )
        roles[role] = roles.get(role, 0) + 1
        total = annotations.get(TOTAL_COUNT)
        totals.add(total if isinstance(total, str) else comment_text(repr(total)))
        metadata = manifest_metadata(wl, namespace, name, pod)
        metadata["labels"][GROUP_LABEL] = group
        metadata["annotations"][TOTAL_COUNT] = str(len(pods))
        spec = kept_pod_spec(as_dict(pod_sets[role].get("template")).get("spec"))
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    kept = sorted((n, pod_set_count(p)) for n, p in pod_sets.items())
    if sorted(roles.items()) != kept or totals != {str(len(pods))}:
        raise Unrecordable(
            f"its pod group {group} no longer matches its Workload: {len(pods)} pods of total "
            f"count {comment_text(repr(sorted(map(str, totals))))}, roles "
            f"{comment_text(repr(sorted(roles.items())))} against the Workload's "
            f"{comment_text(repr(kept))}"
        )
    return out


def pod_set_count(pod_set: Mapping[str, Any]) -> int:
    count = pod_set.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise Unrecordable(f"malformed: pod set count {count!r}")
    return count


def _number(value: Any, what: str) -> int | None:
    """A replica count or a Job's parallelism or completions as the owner has it (None: unset,
    its API's default applies)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Unrecordable(f"malformed: {what} {comment_text(repr(value))}")
    return value


def _multi_pod_set(
    kind: str, metadata: dict[str, Any], pod_sets: list[dict[str, Any]], owner: Mapping[str, Any]
) -> dict[str, Any]:
    """A JobSet, a kind of replica specs (REPLICA_KINDS) or a Ray kind (RAY_KINDS): its shape
    (replicated jobs, replica types or worker groups, their replicas, a Job's parallelism and
    completions) from the owner, each pod set's template from the Workload; the pod sets the
    mix counts of it (podsets.py's one rule) must be the Workload's, name for name and count
    for count, or the owner changed since Kueue made its Workload."""
    templates = {}
    for p in pod_sets:
        templates[str(p.get("name"))] = kept_pod_spec(as_dict(p.get("template")).get("spec"))
    if kind == "JobSet":
        api, spec = "jobset.x-k8s.io/v1alpha2", _jobset_spec(owner, templates)
    elif kind == "LeaderWorkerSet":
        api, spec = "leaderworkerset.x-k8s.io/v1", _lws_spec(owner, templates)
    elif kind in RAY_KINDS:
        api, spec = "ray.io/v1", _ray_spec(kind, owner, templates)
    else:
        api, specs, types = REPLICA_KINDS[kind]
        spec = {specs: _replica_specs(kind, as_dict(owner.get(specs)), types, templates)}
    manifest = {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}
    counted = [(p.name, p.count) for p in pod_sets_of(kind, manifest)]
    kept = [(str(p.get("name")), pod_set_count(p)) for p in pod_sets]
    if counted != kept:
        raise Unrecordable(
            f"its {kind} no longer matches its Workload: pod sets {comment_text(repr(counted))} "
            f"against the Workload's {comment_text(repr(kept))}"
        )
    return manifest


def _replicated(
    kind: str, metadata: dict[str, Any], pod_sets: list[dict[str, Any]], owner: Mapping[str, Any]
) -> dict[str, Any]:
    """A StatefulSet or a Deployment: its replicas and selector from the owner, of its pods'
    labels only those the selector reads (the API wants the template to match it), the pod
    template from the Workload's one pod set (a StatefulSet's: Kueue's group of its replicas,
    named by their role hash, whose count must be the replicas, or it was scaled since Kueue
    made its Workload; a Deployment's: one of its pods, the Workload of one pod Kueue's pod
    integration makes of each, counted against its replicas by owner_sets.py)."""
    if len(pod_sets) != 1:
        raise Unrecordable(f"malformed: a {kind}'s Workload has {len(pod_sets)} pod sets")
    selector = as_dict(owner.get("selector"))
    read = set(map(str, as_dict(selector.get("matchLabels"))))
    read |= {str(as_dict(e).get("key")) for e in as_list(selector.get("matchExpressions"))}
    template = as_dict(owner.get("template"))
    labels = {
        checked_name(k, "key", "a pod label key"): checked_name(v, "value", "a pod label value")
        for k, v in sorted(as_dict(as_dict(template.get("metadata")).get("labels")).items())
        if k in read
    }
    pod = kept_pod_spec(as_dict(pod_sets[0].get("template")).get("spec"))
    spec = kept_numbers(owner, ("replicas",), "its")
    spec["selector"] = _plain(selector)
    spec["template"] = {"metadata": {"labels": labels}, "spec": pod}
    manifest = {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": spec}
    if kind == "Deployment":
        if pod_set_count(pod_sets[0]) != 1:
            raise Unrecordable(
                f"malformed: a Deployment's pod's Workload of {pod_set_count(pod_sets[0])} pods"
            )
        return manifest
    (counted,) = [p.count for p in pod_sets_of("StatefulSet", manifest)]
    if counted != pod_set_count(pod_sets[0]):
        raise Unrecordable(
            f"its StatefulSet no longer matches its Workload: {counted} replicas against the "
            f"Workload's {pod_set_count(pod_sets[0])} pods"
        )
    return manifest


def _jobset_spec(owner: Mapping[str, Any], templates: Mapping[str, Any]) -> dict[str, Any]:
    """A JobSet's replicated jobs: names, replicas, their Job's parallelism and completions."""
    replicated = []
    for raw in as_list(owner.get("replicatedJobs")):
        rj = as_dict(raw)
        rj_name = checked_name(rj.get("name"), "label", "a replicated job's name")
        job = as_dict(as_dict(rj.get("template")).get("spec"))
        job_spec = kept_numbers(job, ("parallelism", "completions"), f"replicated job {rj_name}'s")
        job_spec["template"] = {"spec": templates.get(rj_name, {})}
        entry: dict[str, Any] = {"name": rj_name}
        entry.update(kept_numbers(rj, ("replicas",), f"replicated job {rj_name}'s"))
        replicated.append({**entry, "template": {"spec": job_spec}})
    return {"replicatedJobs": replicated}


def _lws_spec(owner: Mapping[str, Any], templates: Mapping[str, Any]) -> dict[str, Any]:
    """A LeaderWorkerSet's groups (replicas) and their size, its leader template when it has
    one: the pod sets Kueue makes of each group are then leader and worker, else main."""
    lwt = as_dict(owner.get("leaderWorkerTemplate"))
    kept = kept_numbers(lwt, ("size",), "its leaderWorkerTemplate's")
    if isinstance(lwt.get("leaderTemplate"), dict):
        kept["leaderTemplate"] = {"spec": templates.get(LWS_LEADER, {})}
        kept["workerTemplate"] = {"spec": templates.get(LWS_WORKER, {})}
    else:
        kept["workerTemplate"] = {"spec": templates.get(MAIN, {})}
    spec = kept_numbers(owner, ("replicas",), "its")
    spec["leaderWorkerTemplate"] = kept
    return spec


def _replica_specs(
    kind: str, specs: Mapping[str, Any], types: tuple[str, ...], templates: Mapping[str, Any]
) -> dict[str, Any]:
    """A Kubeflow v1 job's or MPIJob's replica specs: each type's replicas."""
    out = {}
    for replica_type, raw in specs.items():
        entry = kept_numbers(as_dict(raw), ("replicas",), f"replica type {replica_type}'s")
        pod_set = str(replica_type).lower()
        entry["template"] = {"spec": templates.get(pod_set, {})}
        # The training operator camel-cases a replica type; the mpi-operator takes only its own.
        known = [
            t for t in types if t == replica_type or (kind != "MPIJob" and t.lower() == pod_set)
        ]
        if not known:
            raise Unrecordable(
                f"malformed: replica type {comment_text(repr(replica_type))} is not one of "
                f"{', '.join(types)}"
            )
        out[known[0]] = entry
    return out


def _ray_spec(kind: str, owner: Mapping[str, Any], templates: Mapping[str, Any]) -> dict[str, Any]:
    """A RayCluster's spec, or a RayJob's: its cluster's head and worker groups (each group's
    name, replicas and numOfHosts), and a RayJob's submission mode, its submitter's template
    from the Workload's and the cluster deleted when it ends (Kueue's webhook wants it so)."""
    cluster = as_dict(owner.get("rayClusterSpec")) if kind == "RayJob" else as_dict(owner)
    groups = []
    for raw in as_list(cluster.get("workerGroupSpecs")):
        group = as_dict(raw)
        name = checked_name(group.get("groupName"), "label", "a worker group's name")
        entry: dict[str, Any] = {"groupName": name}
        entry.update(kept_numbers(group, ("replicas", "numOfHosts"), f"worker group {name}'s"))
        groups.append({**entry, "template": {"spec": templates.get(name, {})}})
    ray: dict[str, Any] = {"headGroupSpec": {"template": {"spec": templates.get("head", {})}}}
    if groups:
        ray["workerGroupSpecs"] = groups
    if kind == "RayCluster":
        return ray
    spec: dict[str, Any] = {"shutdownAfterJobFinishes": True, "rayClusterSpec": ray}
    mode = owner.get("submissionMode")
    if mode is not None:
        spec["submissionMode"] = checked_name(mode, "label", "its submissionMode")
    if SUBMITTER in templates:
        spec["submitterPodTemplate"] = {"spec": templates[SUBMITTER]}
    return spec


def kept_numbers(owner: Mapping[str, Any], keys: tuple[str, ...], whose: str) -> dict[str, Any]:
    """The counts of `keys` the owner sets (unset: its API's default applies)."""
    out = {}
    for key in keys:
        number = _number(owner.get(key), f"{whose} {key}")
        if number is not None:
            out[key] = number
    return out


def kept_pod_spec(raw: Any) -> dict[str, Any]:
    """What admission and the scheduler's fit read of a pod spec; nothing else."""
    spec = as_dict(raw)
    out: dict[str, Any] = {}
    for key in _POD_KEPT:
        value = spec.get(key)
        if value in (None, "", {}, []):
            continue
        if key == "nodeSelector":
            value = {
                checked_name(k, "key", "a node selector key"): checked_name(
                    v, "value", "a node selector value"
                )
                for k, v in sorted(as_dict(value).items(), key=lambda kv: str(kv[0]))
            }
        elif key == "tolerations":
            value = [_plain(t) for t in as_list(value)]
        elif not isinstance(value, str):
            raise Unrecordable(f"malformed: the pod's {key} {value!r}")
        out[key] = value
    node_affinity = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity"))
    if node_affinity:
        out["affinity"] = {"nodeAffinity": _plain(node_affinity)}
    for key in ("initContainers", "containers"):
        containers = [_container(c, key == "initContainers") for c in as_list(spec.get(key))]
        if containers:
            out[key] = containers
    if "containers" not in out:
        raise Unrecordable("malformed: its pod set's template has no containers")
    return out


def _container(raw: Any, init: bool) -> dict[str, Any]:
    c = as_dict(raw)
    name = as_str(c.get("name"))
    if not name:
        raise Unrecordable("malformed: a container without a name")
    checked_name(name, "container", "a container's name")
    out: dict[str, Any] = {"name": name, "image": IMAGE_PLACEHOLDER}
    if init and c.get("restartPolicy") == "Always":  # a sidecar: it counts with the containers
        out["restartPolicy"] = "Always"
    resources = as_dict(c.get("resources"))
    kept = {}
    for kind in ("requests", "limits"):
        values = as_dict(resources.get(kind))
        if values:
            kept[kind] = {
                checked_name(r, "key", f"container {name}'s resource"): kept_quantity(q, name)
                for r, q in sorted(values.items(), key=lambda rq: str(rq[0]))
            }
    if kept:
        out["resources"] = kept
    return out


def kept_quantity(value: Any, container: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Unrecordable(f"malformed: container {container}'s resource quantity {value!r}")
    try:
        parse_quantity(value)
    except QuantityError as exc:
        raise Unrecordable(
            f"malformed: container {container}'s resource quantity: {comment_text(str(exc))}"
        ) from None
    return str(value)


def _plain(value: Any) -> Any:
    """A copy of plain data (tolerations, node affinity): mappings, lists, scalars."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise Unrecordable(f"malformed: {value!r}")
