"""The pod sets Kueue makes of a workload of the mix, counted as its integrations count them
(pkg/controller/jobs/<kind>: PodSets): a Job's one (its parallelism, at most its completions),
a plain Pod's one, a JobSet's one per replicated job (its replicas times its Job's pods), a
Kubeflow v1 job's one per replica type in Kueue's order, its replicas (a PyTorchJob's Master then
Worker; a TFJob's Chief, Master, PS, Worker, Evaluator; ...: KUBEFLOW_V1), a RayJob's head,
worker groups and submitter, a RayCluster's head and worker groups, an MPIJob's one per replica
type, Launcher then Worker (its replicas), a StatefulSet's one of its replicas, a Deployment's
one of its replicas (each a Workload of its own to Kueue, the report's one row), a
LeaderWorkerSet's leader (1 pod) and workers (its size - 1) in each of its groups (its
replicas). What a workload holds while it runs (its GPUs, its pods) is summed over them, one
rule for every kind.

What a kind's own webhook refuses that Kueue would count wrong is `kind_problem`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.kueue.fields import is_dns1035_label
from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.gpus import pod_gpus

MAIN = "main"
"""The name of the one pod set of a Job or a Pod (Kueue's kueue.DefaultPodSetName)."""


@dataclass(frozen=True)
class PodSet:
    """One pod set: its name, how many pods, and their template's metadata and spec (the
    manifest's own mappings, so a caller may edit them in place)."""

    name: str
    count: int
    meta: dict[str, Any]
    spec: dict[str, Any]
    copies: int = 1
    """How many Workloads have it: an LWS's groups (Kueue makes a Workload of each), else 1."""


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def job_pods(spec: Mapping[str, Any]) -> int:
    """Pods a Job runs at once: its parallelism (1 by default), at most its completions."""
    count = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, completions)
    return max(count, 0)


@dataclass(frozen=True)
class KubeflowKind:
    """A Kubeflow v1 job kind of the training operator (kubeflow.org/v1, v1.9): where its replica
    specs are, its replica types in the order Kueue makes its pod sets of them (its
    OrderedReplicaTypes), the container its pods run in, and what its webhook checks beyond the
    rules every such kind shares (kubeflow_problem)."""

    specs: str
    types: tuple[str, ...]
    container: str
    one: str | None = None
    """The replica type its webhook wants exactly one replica of, and present (XGBoostJob's)."""
    run_policy: bool = True
    """Whether its webhook checks spec.runPolicy.managedBy (every one's but JAXJob's)."""


KUBEFLOW_V1: Final[Mapping[str, KubeflowKind]] = {
    "PyTorchJob": KubeflowKind("pytorchReplicaSpecs", ("Master", "Worker"), "pytorch"),
    "TFJob": KubeflowKind(
        "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator"), "tensorflow"
    ),
    "XGBoostJob": KubeflowKind("xgbReplicaSpecs", ("Master", "Worker"), "xgboost", one="Master"),
    "PaddleJob": KubeflowKind("paddleReplicaSpecs", ("Master", "Worker"), "paddle"),
    "JAXJob": KubeflowKind("jaxReplicaSpecs", ("Worker",), "jax", run_policy=False),
}
"""The Kubeflow v1 kinds the what-if replays (Kueue's kubeflow/jobs/<kind> integrations)."""

PYTORCH_REPLICA_TYPES: Final = KUBEFLOW_V1["PyTorchJob"].types
"""A PyTorchJob's replica types, in the order Kueue makes its pod sets of them
(pytorchjob.OrderedReplicaTypes)."""


MPI_REPLICA_TYPES: Final = ("Launcher", "Worker")
"""An MPIJob's replica types, in the order Kueue makes its pod sets of them
(mpijob.orderedReplicaTypes). Unlike the training operator, the mpi-operator changes no case:
only these keys are replica types, to it and to Kueue."""


def pod_sets(kind: str, body: Mapping[str, Any]) -> list[PodSet]:
    """The pod sets of a Job, Pod, JobSet, Kubeflow v1 job (KUBEFLOW_V1), RayJob, RayCluster,
    MPIJob or LeaderWorkerSet manifest (none for another kind)."""
    spec = as_dict(body.get("spec"))
    if kind in KUBEFLOW_V1:
        kubeflow = KUBEFLOW_V1[kind]
        return _replica_sets(as_dict(spec.get(kubeflow.specs)), kubeflow.types)
    if kind == "MPIJob":
        specs = as_dict(spec.get("mpiReplicaSpecs"))
        exact = {k: v for k, v in specs.items() if k in MPI_REPLICA_TYPES}
        return _replica_sets(exact, MPI_REPLICA_TYPES)
    if kind == "RayJob":
        return _ray_sets(spec)
    if kind == "RayCluster":
        return _ray_cluster_sets(spec)
    if kind == "LeaderWorkerSet":
        return _lws_sets(spec)
    if kind == "Pod":
        return [PodSet(MAIN, 1, as_dict(body.get("metadata")), spec)]
    # A StatefulSet's: Kueue's one group pod set of its replicas; a Deployment's: its replicas,
    # each a Workload of one pod to Kueue (1 when not given).
    if kind in ("StatefulSet", "Deployment"):
        template = as_dict(spec.get("template"))
        replicas = _int(spec.get("replicas"), 1)
        return [PodSet(MAIN, replicas, _meta(template), as_dict(template.get("spec")))]
    if kind == "Job":
        template = as_dict(spec.get("template"))
        return [PodSet(MAIN, job_pods(spec), _meta(template), as_dict(template.get("spec")))]
    if kind != "JobSet":
        return []
    out = []
    for replicated in as_list(spec.get("replicatedJobs")):
        job = as_dict(as_dict(as_dict(replicated).get("template")).get("spec"))
        template = as_dict(job.get("template"))
        replicas = max(_int(as_dict(replicated).get("replicas"), 1), 0)
        name = as_dict(replicated).get("name")
        out.append(
            PodSet(
                name if isinstance(name, str) else "",
                replicas * job_pods(job),
                _meta(template),
                as_dict(template.get("spec")),
            )
        )
    return out


def _replica_type(key: Any, types: tuple[str, ...]) -> str | None:
    """The replica type a Kubeflow job's key names: the training operator's defaulting webhook
    camel-cases them (master is Master)."""
    return next((t for t in types if isinstance(key, str) and key.lower() == t.lower()), None)


def _replica_sets(specs: dict[str, Any], types: tuple[str, ...]) -> list[PodSet]:
    """A Kubeflow v1 job's pod sets: one per replica type present, in Kueue's order, named as
    Kueue names it (lower case), its replicas (1 by default) its pods."""
    by_type = {_replica_type(k, types): as_dict(v) for k, v in specs.items()}
    out = []
    for replica_type in types:
        if replica_type not in by_type:
            continue
        replica = by_type[replica_type]
        template = as_dict(replica.get("template"))
        count = max(_int(replica.get("replicas"), 1), 0)
        out.append(
            PodSet(replica_type.lower(), count, _meta(template), as_dict(template.get("spec")))
        )
    return out


SUBMITTER: Final = "submitter"
"""The pod set of a RayJob's submitter in K8sJobMode (KubeRay's default submissionMode)."""
RAY_SUBMITTER_SPEC: Final = {
    "restartPolicy": "Never",
    "containers": [
        {
            "name": "ray-job-submitter",
            "resources": {
                "limits": {"cpu": "1", "memory": "1Gi"},
                "requests": {"cpu": "500m", "memory": "200Mi"},
            },
        }
    ],
}
"""A submitter's pod when the RayJob gives no template (KubeRay's and Kueue's default)."""


def _ray_sets(spec: dict[str, Any]) -> list[PodSet]:
    """A RayJob's pod sets as Kueue's rayjob integration makes them: its cluster's (below), and
    in K8sJobMode the submitter (1 pod)."""
    out = _ray_cluster_sets(as_dict(spec.get("rayClusterSpec")))
    if spec.get("submissionMode", "K8sJobMode") in ("K8sJobMode", None):
        submitter = spec.get("submitterPodTemplate")
        template = as_dict(submitter)
        pod = as_dict(template.get("spec")) if submitter is not None else RAY_SUBMITTER_SPEC
        out.append(PodSet(SUBMITTER, 1, _meta(template), pod))
    return out


def _ray_cluster_sets(cluster: dict[str, Any]) -> list[PodSet]:
    """A Ray cluster's pod sets as Kueue's raycluster code makes them (a RayCluster's, a
    RayJob's cluster's): the head (1 pod), each worker group (its replicas, 0 by KubeRay's CRD
    default, times its numOfHosts)."""
    head = as_dict(as_dict(cluster.get("headGroupSpec")).get("template"))
    out = [PodSet("head", 1, _meta(head), as_dict(head.get("spec")))]
    for group in as_list(cluster.get("workerGroupSpecs")):
        template = as_dict(as_dict(group).get("template"))
        count = max(_int(as_dict(group).get("replicas"), 0), 0)
        count *= max(_int(as_dict(group).get("numOfHosts"), 1), 1)
        name = as_dict(group).get("groupName")
        out.append(
            PodSet(
                name if isinstance(name, str) else "",
                count,
                _meta(template),
                as_dict(template.get("spec")),
            )
        )
    return out


LWS_LEADER: Final = "leader"
LWS_WORKER: Final = "worker"


def _lws_sets(spec: dict[str, Any]) -> list[PodSet]:
    """A LeaderWorkerSet's pod sets as Kueue's leaderworkerset integration makes them
    (podSets): with a leaderTemplate, the leader (1 pod) and the workers (size - 1, worker
    named); without, one `main` pod set of size pods of the worker template. Every group (its
    replicas, 1 by the CRD's default) is a Workload of these (copies)."""
    lwt = as_dict(spec.get("leaderWorkerTemplate"))
    groups = max(_int(spec.get("replicas"), 1), 0)
    size = _int(lwt.get("size"), 1)
    worker = as_dict(lwt.get("workerTemplate"))
    out = []
    leader = lwt.get("leaderTemplate")
    if isinstance(leader, dict):
        out.append(PodSet(LWS_LEADER, 1, _meta(leader), as_dict(leader.get("spec")), groups))
        size -= 1
    name = LWS_WORKER if out else MAIN
    out.append(PodSet(name, max(size, 0), _meta(worker), as_dict(worker.get("spec")), groups))
    return out


def _meta(template: dict[str, Any]) -> dict[str, Any]:
    """The template's metadata mapping (an empty one, not the manifest's, when it has none:
    there is nothing to edit then)."""
    meta = template.get("metadata")
    if not isinstance(meta, dict):
        return {}
    return meta


def held(sets: list[PodSet]) -> tuple[int, int]:
    """(GPUs, pods) the workload holds while all its pods run."""
    gpus = sum(pod_gpus(s.spec) * s.count * s.copies for s in sets)
    return gpus, sum(s.count * s.copies for s in sets)


def kind_problem(kind: str, body: Mapping[str, Any]) -> str | None:
    """What the kind's own webhook refuses that Kueue would count wrong (None for a kind
    without such rules, or a manifest that breaks none)."""
    if kind == "JobSet":
        return jobset_problem(body)
    if kind in KUBEFLOW_V1:
        return kubeflow_problem(kind, body)
    if kind == "RayJob":
        return rayjob_problem(body)
    if kind == "RayCluster":
        return raycluster_problem(body)
    if kind == "MPIJob":
        return mpijob_problem(body)
    if kind in ("StatefulSet", "Deployment"):
        return replicas_problem(kind, body)
    if kind == "LeaderWorkerSet":
        return lws_problem(body)
    return None


def replicas_problem(kind: str, body: Mapping[str, Any]) -> str | None:
    """A StatefulSet's or a Deployment's replicas below 1: the API server refuses a negative
    count, and of 0 Kueue makes no Workload (there is nothing to queue)."""
    replicas = as_dict(body.get("spec")).get("replicas", 1)
    if isinstance(replicas, int) and replicas < 1:
        return f"spec.replicas: {replicas}: a {kind} of no pods has no Workload to queue"
    return None


RAY_SUBMISSION_MODES: Final = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
MAX_POD_SETS: Final = 8
"""Kueue's limit on a Workload's pod sets (jobframework.MaxPodSets)."""


def rayjob_problem(body: Mapping[str, Any]) -> str | None:
    """What Kueue's RayJob webhook refuses (the release's rayjob_webhook.go and raycluster's
    ValidateCreate): a cluster to make (no clusterSelector beside it, none without it), deleted
    when the job ends (shutdownAfterJobFinishes), no in-tree autoscaling (Kueue allows it only
    with elastic workloads, which the what-if does not replay), at most 8 pod sets, no worker
    group named head; and what KubeRay refuses or Kueue would count wrong: an unknown
    submissionMode, two worker groups of one name, negative replicas or numOfHosts."""
    spec = as_dict(body.get("spec"))
    cluster = spec.get("rayClusterSpec")
    if spec.get("clusterSelector"):
        return (
            "spec.clusterSelector: a Kueue-managed RayJob makes its own cluster; Kueue does "
            "not manage one that runs on an existing cluster"
        )
    if cluster is None:
        return "spec.rayClusterSpec: is required (Kueue admits the cluster the RayJob makes)"
    if spec.get("shutdownAfterJobFinishes") is not True:
        return (
            "spec.shutdownAfterJobFinishes: must be true (Kueue's webhook: a managed RayJob "
            "deletes its cluster when it ends, else the cluster holds the quota)"
        )
    mode = spec.get("submissionMode")
    if mode is not None and mode not in RAY_SUBMISSION_MODES:
        return f"spec.submissionMode: {mode!r} is not one of {', '.join(RAY_SUBMISSION_MODES)}"
    submitter = 1 if mode in (None, "K8sJobMode") else 0
    return _ray_cluster_problem(as_dict(cluster), "spec.rayClusterSpec", "RayJob", submitter)


def raycluster_problem(body: Mapping[str, Any]) -> str | None:
    """What Kueue's RayCluster webhook refuses (the release's raycluster ValidateCreate) and
    KubeRay refuses or Kueue would count wrong: the cluster rules of rayjob_problem, on the
    RayCluster's own spec."""
    return _ray_cluster_problem(as_dict(body.get("spec")), "spec", "RayCluster", 0)


def _ray_cluster_problem(cluster: dict[str, Any], at: str, kind: str, extra: int) -> str | None:
    """A Ray cluster's spec (at `at`) as Kueue's raycluster webhook and KubeRay take it: no
    in-tree autoscaling (Kueue allows it only with elastic workloads, which the what-if does
    not replay), at most 8 pod sets (the head, each worker group and `extra` more), no worker
    group named head, two of one name, negative replicas or numOfHosts."""
    if cluster.get("enableInTreeAutoscaling") is True:
        return (
            f"{at}.enableInTreeAutoscaling: Kueue admits an autoscaled {kind} only as an "
            "elastic workload, which the what-if does not replay"
        )
    groups = as_list(cluster.get("workerGroupSpecs"))
    pod_sets = 1 + len(groups) + extra
    if pod_sets > MAX_POD_SETS:
        return (
            f"{at}.workerGroupSpecs: {len(groups)} groups make {pod_sets} pod "
            f"sets; Kueue takes at most {MAX_POD_SETS}"
        )
    seen: set[str] = set()
    for i, group in enumerate(groups):
        where = f"{at}.workerGroupSpecs[{i}]"
        name = as_dict(group).get("groupName")
        if name == "head":
            return f"{where}.groupName: 'head' is the head group's"
        if name in seen:
            return f"{where}.groupName: {name!r} is the name of an earlier worker group"
        seen.add(str(name))
        for count in ("replicas", "numOfHosts"):
            value = as_dict(group).get(count)
            if isinstance(value, int) and value < 0:
                return f"{where}.{count}: {value} must not be negative"
    return None


MPI_RESTART_POLICIES: Final = ("Never", "OnFailure")
MPI_IMPLEMENTATIONS: Final = ("OpenMPI", "Intel", "MPICH")
MPI_CLEAN_POD_POLICIES: Final = ("None", "Running", "All")
MPI_MANAGERS: Final = ("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue")


def mpijob_problem(body: Mapping[str, Any]) -> str | None:
    """What the mpi-operator (v0.8, its CRD's enum and its controller's ValidateMPIJob after its
    defaulter) refuses: a Launcher exactly (its replicas 1), Workers' replicas given and at least 1
    (its defaulter makes none 0, which it refuses, where Kueue would count 1), a restartPolicy of
    Never or OnFailure, a known mpiImplementation, cleanPodPolicy and managedBy, no negative
    slotsPerWorker or run limits, a name its workers' hostnames can take; and a replica type
    other than Launcher and Worker, which neither it nor Kueue runs. A refused MPIJob is admitted
    by Kueue all the same and holds its quota with nothing running: invalid, not replayed."""
    spec = as_dict(body.get("spec"))
    specs = as_dict(spec.get("mpiReplicaSpecs"))
    where = "spec.mpiReplicaSpecs"
    for key, value in specs.items():
        if key not in MPI_REPLICA_TYPES:
            return (
                f"{where}[{key}]: {key!r} is not an MPIJob replica type (Launcher or Worker, "
                "in that case); neither the mpi-operator nor Kueue would run its pods"
            )
        problem = _mpi_replica_problem(key, as_dict(value), f"{where}[{key}]")
        if problem:
            return problem
    if "Launcher" not in specs:
        return f"{where}[Launcher]: is required (the mpi-operator runs the job from it)"
    return _mpi_spec_problem(spec) or _mpi_name_problem(body, specs)


def _mpi_replica_problem(key: str, replica: dict[str, Any], at: str) -> str | None:
    replicas = replica.get("replicas")
    if key == "Launcher" and replicas not in (None, 1):
        return f"{at}.replicas: {replicas} must be 1 (one Launcher)"
    if key == "Worker" and replicas is None:
        return (
            f"{at}.replicas: is required (the mpi-operator makes none 0 and refuses it; Kueue "
            "would count 1)"
        )
    if key == "Worker" and _int(replicas, 1) < 1:
        return f"{at}.replicas: {replicas} must be at least 1"
    policy = replica.get("restartPolicy")
    if policy is not None and policy not in MPI_RESTART_POLICIES:
        return f"{at}.restartPolicy: {policy!r} is not one of {', '.join(MPI_RESTART_POLICIES)}"
    containers = as_list(as_dict(as_dict(replica.get("template")).get("spec")).get("containers"))
    for i, container in enumerate(containers):
        if not as_dict(container).get("image"):
            return (
                f"{at}.template.spec.containers[{i}].image: is required (the mpi-operator's "
                "pods would be refused without one)"
            )
    return None


def _mpi_spec_problem(spec: dict[str, Any]) -> str | None:
    run = as_dict(spec.get("runPolicy"))
    for at, value, allowed in (
        ("spec.mpiImplementation", spec.get("mpiImplementation"), MPI_IMPLEMENTATIONS),
        ("spec.runPolicy.cleanPodPolicy", run.get("cleanPodPolicy"), MPI_CLEAN_POD_POLICIES),
        ("spec.runPolicy.managedBy", run.get("managedBy"), MPI_MANAGERS),
    ):
        if value is not None and value not in allowed:
            return f"{at}: {value!r} is not one of {', '.join(allowed)}"
    for at, value in (
        ("spec.slotsPerWorker", spec.get("slotsPerWorker")),
        *((f"spec.runPolicy.{k}", run.get(k)) for k in MPI_RUN_LIMITS),
    ):
        if isinstance(value, int) and value < 0:
            return f"{at}: {value} must not be negative"
    return None


MPI_RUN_LIMITS: Final = ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit")


def _mpi_name_problem(body: Mapping[str, Any], specs: dict[str, Any]) -> str | None:
    """The mpi-operator names its last worker's pod and service <name>-worker-<replicas - 1>,
    which must be a DNS-1035 label."""
    name = as_dict(body.get("metadata")).get("name")
    workers = _int(as_dict(specs.get("Worker")).get("replicas"), 1)
    host = f"{name}-worker-{max(workers, 1) - 1}"
    if isinstance(name, str) and not is_dns1035_label(host):
        return (
            f"metadata.name: the mpi-operator's last worker would be {host!r}, not a DNS-1035 "
            "label (a letter first, at most 63 characters)"
        )
    return None


KUBEFLOW_MANAGERS: Final = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")


def _or(types: tuple[str, ...]) -> str:
    return types[0] if len(types) == 1 else f"{', '.join(types[:-1])} or {types[-1]}"


def kubeflow_problem(kind: str, body: Mapping[str, Any]) -> str | None:
    """What the training operator's webhooks (v1.9) refuse for a Kubeflow v1 job, after its
    defaulter (replica types camel-cased, so two keys may name one type; replicas 1 where none
    is given), and Kueue would count wrong: a name that is no DNS-1035 label; an unknown
    runPolicy.managedBy (JAXJob's webhook does not check it); a replica type the kind does not
    have (Kueue makes no pod set of it: a TFJob's webhook lets one through and its pods would
    run uncounted); a container without an image, and none named as the kind wants it; both a
    Chief and a Master (TFJob); a Master of other than one replica, and fewer than one of
    another type (PyTorchJob); no Master, or one of other than one replica (XGBoostJob); an
    elasticPolicy without a Worker (PaddleJob: its defaulter fails on it); a negative replica
    count (Kueue's Workload cannot hold it); and no replica type at all, of which Kueue would
    make a Workload without pod sets."""
    kubeflow = KUBEFLOW_V1[kind]
    spec = as_dict(body.get("spec"))
    specs = as_dict(spec.get(kubeflow.specs))
    where = f"spec.{kubeflow.specs}"
    if not specs:
        named = tuple(f"{'an' if t[0] in 'AEIOU' else 'a'} {t}" for t in kubeflow.types)
        return f"{where}: must name {_or(named)}"
    seen: dict[str, str] = {}
    for key, value in specs.items():
        at = f"{where}[{key}]"
        replica_type = _replica_type(key, kubeflow.types)
        if replica_type is None:
            return f"{at}: {key!r} is not a {kind} replica type ({_or(kubeflow.types)})"
        if replica_type in seen:
            return f"{at}: names the replica type of {where}[{seen[replica_type]}] again"
        seen[replica_type] = key
        problem = _kubeflow_replica_problem(kind, replica_type, as_dict(value), at)
        if problem:
            return problem
    if kubeflow.one and kubeflow.one not in seen:
        return (
            f"{where}[{kubeflow.one}]: is required (the training operator refuses a {kind} "
            "without one)"
        )
    if kind == "TFJob" and {"Chief", "Master"} <= seen.keys():
        return f"{where}: must not have both a Chief and a Master"
    if kind == "PaddleJob" and spec.get("elasticPolicy") is not None and "Worker" not in seen:
        return (
            "spec.elasticPolicy: needs a Worker (the training operator's defaulting reads its "
            "replicas)"
        )
    return _kubeflow_meta_problem(kubeflow, body)


def _kubeflow_replica_problem(
    kind: str, replica_type: str, replica: dict[str, Any], at: str
) -> str | None:
    replicas = replica.get("replicas")
    one = "Master" if kind == "PyTorchJob" else KUBEFLOW_V1[kind].one
    if replica_type == one and replicas not in (None, 1):
        return f"{at}.replicas: {replicas} must be 1 (one {one})"
    if kind == "PyTorchJob" and isinstance(replicas, int) and replicas < 1:
        return f"{at}.replicas: {replicas} must be at least 1"
    if isinstance(replicas, int) and replicas < 0:
        return f"{at}.replicas: {replicas} must not be negative (Kueue's Workload cannot count it)"
    containers = as_list(as_dict(as_dict(replica.get("template")).get("spec")).get("containers"))
    for i, container in enumerate(containers):
        if not as_dict(container).get("image"):
            return f"{at}.template.spec.containers[{i}].image: is required"
    name = KUBEFLOW_V1[kind].container
    if not any(as_dict(c).get("name") == name for c in containers):
        return (
            f"{at}.template.spec.containers: must have a container named {name} (the "
            "training operator runs the job in it)"
        )
    return None


def _kubeflow_meta_problem(kubeflow: KubeflowKind, body: Mapping[str, Any]) -> str | None:
    name = as_dict(body.get("metadata")).get("name")
    if isinstance(name, str) and not is_dns1035_label(name):
        return (
            f"metadata.name: {name!r} is not a DNS-1035 label (a letter first, at most 63 "
            "characters), as the training operator wants it"
        )
    manager = as_dict(as_dict(body.get("spec")).get("runPolicy")).get("managedBy")
    if kubeflow.run_policy and manager is not None and manager not in KUBEFLOW_MANAGERS:
        return f"spec.runPolicy.managedBy: {manager!r} is not one of {', '.join(KUBEFLOW_MANAGERS)}"
    return None


def jobset_problem(body: Mapping[str, Any]) -> str | None:
    """What JobSet's own webhook refuses that Kueue would count wrong: a negative replica
    count, and two replicated jobs of one name (Kueue names a pod set after each)."""
    seen: set[str] = set()
    for i, replicated in enumerate(as_list(as_dict(body.get("spec")).get("replicatedJobs"))):
        where = f"spec.replicatedJobs[{i}]"
        replicas = as_dict(replicated).get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            return f"{where}.replicas: {replicas} must not be negative"
        name = as_dict(replicated).get("name")
        if name in seen:
            return f"{where}.name: {name!r} is the name of an earlier replicated job"
        seen.add(str(name))
    return None


LWS_MAX_REPLICAS: Final = 1_000_000
"""Kueue's bound on an LWS's replicas (maxLeaderWorkerSetReplicas: a Workload per group)."""
INT32_MAX: Final = 2**31 - 1
LWS_RESTARTS: Final = ("Default", "RecreateGroupOnPodRestart", "None")
LWS_STARTUPS: Final = ("LeaderCreated", "LeaderReady")
"""The enums of LWS's CRD (v0.8) the what-if checks: leaderWorkerTemplate's restartPolicy,
the spec's startupPolicy."""


def lws_problem(body: Mapping[str, Any]) -> str | None:
    """What LWS's own webhook (v0.8, generalValidate) and CRD refuse and Kueue's leaderworkerset
    webhook refuses, which a replay would count wrong: negative replicas, more than Kueue's
    1,000,000 (a Workload per group), a size below 1 (a group of no pods), replicas x size over
    int32 (LWS's bound), a restartPolicy or startupPolicy outside the CRD's enums, a name that is
    no DNS-1035 label (LWS names its headless Service after it)."""
    name = as_dict(body.get("metadata")).get("name")
    if isinstance(name, str) and not is_dns1035_label(name):
        return (
            f"metadata.name: {name!r} is not a DNS-1035 label (a letter first, at most 63 "
            "characters): LWS names its headless Service after it"
        )
    spec = as_dict(body.get("spec"))
    lwt = as_dict(spec.get("leaderWorkerTemplate"))
    replicas, size = _int(spec.get("replicas"), 1), _int(lwt.get("size"), 1)
    if replicas < 0:
        return f"spec.replicas: {replicas} must be equal or greater than 0"
    if replicas > LWS_MAX_REPLICAS:
        return f"spec.replicas: {replicas} must be at most {LWS_MAX_REPLICAS:,} (Kueue's bound)"
    if size < 1:
        return f"spec.leaderWorkerTemplate.size: {size} must be equal or greater than 1"
    if replicas * size > INT32_MAX:
        return f"spec.replicas: {replicas} groups of {size} pods exceed {INT32_MAX} pods"
    for at, value, allowed in (
        ("spec.leaderWorkerTemplate.restartPolicy", lwt.get("restartPolicy"), LWS_RESTARTS),
        ("spec.startupPolicy", spec.get("startupPolicy"), LWS_STARTUPS),
    ):
        if value is not None and value not in allowed:
            return f"{at}: {value!r} is not one of {', '.join(allowed)}"
    return None
