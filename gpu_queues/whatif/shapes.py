"""The shape of a manifest in a what-if mix, checked before anything reads it: each field the
replay, Kueue or the API server's decoding depends on has the type Kubernetes gives it (a
mapping, a list, a string, an integer, a boolean, a quantity; a whole number of an extended
resource such as nvidia.com/gpu, which Kubernetes never splits). `problem` names the first
field that does not, by its path (`spec.template.spec.containers[0].resources.limits[cpu]`),
so a malformed manifest is an `invalid` row of the report and the rest of the mix replays.

A null is an absent field, as in the API server's decoding; a field the replay cannot do
without that is absent (a Job's `spec.template`, a pod's `containers`, a JobSet's
`spec.replicatedJobs[i].template`, a StatefulSet's or a Deployment's `spec.template` and
`spec.selector`, a PyTorchJob's `spec.pytorchReplicaSpecs[Worker].template` and each other
Kubeflow v1 job's replica's, an MPIJob's `spec.mpiReplicaSpecs[Launcher].template`, a
LeaderWorkerSet's `spec.leaderWorkerTemplate.workerTemplate`) is refused. The rest (fields not
listed here, a container without an image, ...) is left to the API server, which refuses what it
cannot take when the replay submits the object (its message is the row's reason then).

What a container runs with (its command, args and env) may hold a secret: a problem there
names the field and the type it has, never its value (`Hidden`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.kueue.fields import whole_number_problem
from gpu_queues.kueue.quantity import QuantityError, parse_quantity


@dataclass(frozen=True)
class Scalar:
    """A string, integer, boolean or quantity (a string like 500m or 2Gi, or a number)."""

    kind: str
    bits: int | None = None
    """For an integer: the width of the API's field (int32, int64); a value outside its range
    is refused as the API server refuses it."""

    @property
    def named(self) -> str:
        return ("an " if self.kind[0] in "aeiou" else "a ") + self.kind


@dataclass(frozen=True)
class Struct:
    """A mapping with known fields (others are the API server's to judge)."""

    fields: Mapping[str, Any]
    required: tuple[str, ...] = ()


@dataclass(frozen=True)
class MapOf:
    """A mapping of string keys to values of one shape (labels, limits, nodeSelector)."""

    value: Any


@dataclass(frozen=True)
class ListOf:
    item: Any
    non_empty: bool = False


@dataclass(frozen=True)
class Hidden:
    """A field whose value a problem never shows (command, args, env: they may hold a token);
    it is checked as `shape`."""

    shape: Any


@dataclass(frozen=True)
class Anything:
    """Any value (a field whose shape the what-if does not depend on)."""

    note: str = ""


MAX_MILLI: Final = 2**63 - 1
"""The largest quantity in thousandths that Kueue's and the scheduler's int64 arithmetic hold
(MilliValue): a request above it overflows there, and a replay would call it admitted."""
STR: Final = Scalar("string")
INT: Final = Scalar("integer", bits=64)
INT32: Final = Scalar("integer", bits=32)
BOOL: Final = Scalar("boolean")
QUANTITY: Final = Scalar("quantity")

OBJECT_META: Final = Struct(
    {
        "name": STR,
        "generateName": STR,
        "namespace": STR,
        "labels": MapOf(STR),
        "annotations": MapOf(STR),
        "finalizers": ListOf(STR),
        "ownerReferences": ListOf(Struct({"kind": STR, "name": STR, "uid": STR})),
    }
)
RESOURCES: Final = Struct({"limits": MapOf(QUANTITY), "requests": MapOf(QUANTITY)})
CONTAINER: Final = Struct(
    {
        "name": STR,
        "image": STR,
        "imagePullPolicy": STR,
        "command": Hidden(ListOf(STR)),
        "args": Hidden(ListOf(STR)),
        "workingDir": STR,
        "env": Hidden(ListOf(Struct({"name": STR, "value": STR}, required=("name",)))),
        "ports": ListOf(Struct({"containerPort": INT32, "name": STR, "protocol": STR})),
        "resources": RESOURCES,
        "volumeMounts": ListOf(Struct({"name": STR, "mountPath": STR, "readOnly": BOOL})),
    },
)
TOLERATION: Final = Struct(
    {"key": STR, "operator": STR, "value": STR, "effect": STR, "tolerationSeconds": INT}
)
POD_SPEC: Final = Struct(
    {
        "containers": ListOf(CONTAINER, non_empty=True),
        "initContainers": ListOf(CONTAINER),
        "restartPolicy": STR,
        "nodeSelector": MapOf(STR),
        "nodeName": STR,
        "tolerations": ListOf(TOLERATION),
        "affinity": Struct({}),
        "schedulerName": STR,
        "serviceAccountName": STR,
        "priorityClassName": STR,
        "priority": INT32,
        "terminationGracePeriodSeconds": INT,
        "activeDeadlineSeconds": INT,
        "volumes": ListOf(Struct({"name": STR}, required=("name",))),
        "overhead": MapOf(QUANTITY),
    },
    required=("containers",),
)
POD_TEMPLATE: Final = Struct({"metadata": OBJECT_META, "spec": POD_SPEC}, required=("spec",))
JOB_SPEC: Final = Struct(
    {
        "template": POD_TEMPLATE,
        "parallelism": INT32,
        "completions": INT32,
        "backoffLimit": INT32,
        "activeDeadlineSeconds": INT,
        "ttlSecondsAfterFinished": INT32,
        "suspend": BOOL,
        "manualSelector": BOOL,
        "completionMode": STR,
        "selector": Struct({}),
    },
    required=("template",),
)
JOB_TEMPLATE: Final = Struct({"metadata": OBJECT_META, "spec": JOB_SPEC}, required=("spec",))
JOBSET_SPEC: Final = Struct(
    {
        "replicatedJobs": ListOf(
            Struct(
                {"name": STR, "replicas": INT32, "template": JOB_TEMPLATE},
                required=("name", "template"),
            ),
            non_empty=True,
        ),
        "suspend": BOOL,
        "managedBy": STR,
        "ttlSecondsAfterFinished": INT32,
        "network": Struct({}),
        "successPolicy": Struct({}),
        "failurePolicy": Struct({}),
        "startupPolicy": Struct({}),
    },
    required=("replicatedJobs",),
)
LABEL_SELECTOR: Final = Struct(
    {"matchLabels": MapOf(STR), "matchExpressions": ListOf(Struct({"key": STR}))}
)
STATEFULSET_SPEC: Final = Struct(
    {
        "replicas": INT32,
        "selector": LABEL_SELECTOR,
        "template": POD_TEMPLATE,
        "serviceName": STR,
        "podManagementPolicy": STR,
    },
    required=("selector", "template"),
)
DEPLOYMENT_SPEC: Final = Struct(
    {
        "replicas": INT32,
        "selector": LABEL_SELECTOR,
        "template": POD_TEMPLATE,
        "minReadySeconds": INT32,
        "revisionHistoryLimit": INT32,
        "progressDeadlineSeconds": INT32,
    },
    required=("selector", "template"),
)
KUBEFLOW_REPLICA_SPECS: Final = MapOf(
    Struct(
        {"replicas": INT32, "restartPolicy": STR, "template": POD_TEMPLATE},
        required=("template",),
    )
)
"""A Kubeflow v1 job's replica specs (the training operator's ReplicaSpec), by replica type."""
KUBEFLOW_RUN_POLICY: Final = Struct(
    {
        "suspend": BOOL,
        "managedBy": STR,
        "cleanPodPolicy": STR,
        "backoffLimit": INT32,
        "activeDeadlineSeconds": INT,
        "ttlSecondsAfterFinished": INT32,
        "schedulingPolicy": Struct(
            {
                "minAvailable": INT32,
                "queue": STR,
                "minResources": MapOf(QUANTITY),
                "priorityClass": STR,
                "scheduleTimeoutSeconds": INT32,
            }
        ),
    }
)
"""A Kubeflow v1 job's run policy (the training operator's RunPolicy)."""
PYTORCHJOB_SPEC: Final = Struct(
    {
        "pytorchReplicaSpecs": KUBEFLOW_REPLICA_SPECS,
        "runPolicy": KUBEFLOW_RUN_POLICY,
        "elasticPolicy": Struct(
            {
                "minReplicas": INT32,
                "maxReplicas": INT32,
                "rdzvBackend": STR,
                "rdzvPort": INT32,
                "rdzvHost": STR,
                "rdzvId": STR,
                "rdzvConf": ListOf(Struct({"key": STR, "value": STR})),
                "standalone": BOOL,
                "nProcPerNode": INT32,
                "maxRestarts": INT32,
                "metrics": ListOf(Struct({"type": STR})),
            }
        ),
        "nprocPerNode": STR,
    },
    required=("pytorchReplicaSpecs",),
)
TFJOB_SPEC: Final = Struct(
    {
        "tfReplicaSpecs": KUBEFLOW_REPLICA_SPECS,
        "runPolicy": KUBEFLOW_RUN_POLICY,
        "successPolicy": STR,
        "enableDynamicWorker": BOOL,
    },
    required=("tfReplicaSpecs",),
)
XGBOOSTJOB_SPEC: Final = Struct(
    {"xgbReplicaSpecs": KUBEFLOW_REPLICA_SPECS, "runPolicy": KUBEFLOW_RUN_POLICY},
    required=("xgbReplicaSpecs",),
)
PADDLEJOB_SPEC: Final = Struct(
    {
        "paddleReplicaSpecs": KUBEFLOW_REPLICA_SPECS,
        "runPolicy": KUBEFLOW_RUN_POLICY,
        "elasticPolicy": Struct(
            {
                "minReplicas": INT32,
                "maxReplicas": INT32,
                "maxRestarts": INT32,
                "metrics": ListOf(Struct({"type": STR})),
            }
        ),
    },
    required=("paddleReplicaSpecs",),
)
JAXJOB_SPEC: Final = Struct(
    {"jaxReplicaSpecs": KUBEFLOW_REPLICA_SPECS, "runPolicy": KUBEFLOW_RUN_POLICY},
    required=("jaxReplicaSpecs",),
)
MPIJOB_SPEC: Final = Struct(
    {
        "mpiReplicaSpecs": MapOf(
            Struct(
                {"replicas": INT32, "restartPolicy": STR, "template": POD_TEMPLATE},
                required=("template",),
            )
        ),
        "slotsPerWorker": INT32,
        "runLauncherAsWorker": BOOL,
        "runPolicy": Struct(
            {
                "suspend": BOOL,
                "managedBy": STR,
                "cleanPodPolicy": STR,
                "backoffLimit": INT32,
                "activeDeadlineSeconds": INT,
                "ttlSecondsAfterFinished": INT32,
                "schedulingPolicy": Struct(
                    {
                        "minAvailable": INT32,
                        "queue": STR,
                        "minResources": MapOf(QUANTITY),
                        "priorityClass": STR,
                        "scheduleTimeoutSeconds": INT32,
                    }
                ),
            }
        ),
        "sshAuthMountPath": STR,
        "launcherCreationPolicy": STR,
        "mpiImplementation": STR,
    },
    required=("mpiReplicaSpecs",),
)
RAY_CLUSTER_SPEC: Final = Struct(
    {
        "headGroupSpec": Struct(
            {
                "template": POD_TEMPLATE,
                "rayStartParams": MapOf(STR),
                "serviceType": STR,
                "enableIngress": BOOL,
                "headService": Struct({}),
            },
            required=("template",),
        ),
        "workerGroupSpecs": ListOf(
            Struct(
                {
                    "groupName": STR,
                    "replicas": INT32,
                    "minReplicas": INT32,
                    "maxReplicas": INT32,
                    "numOfHosts": INT32,
                    "idleTimeoutSeconds": INT32,
                    "suspend": BOOL,
                    "rayStartParams": MapOf(STR),
                    "template": POD_TEMPLATE,
                    "scaleStrategy": Struct({"workersToDelete": ListOf(STR)}),
                },
                required=("groupName", "template"),
            )
        ),
        "rayVersion": STR,
        "enableInTreeAutoscaling": BOOL,
        "autoscalerOptions": Struct({}),
        "headServiceAnnotations": MapOf(STR),
        "suspend": BOOL,
        "managedBy": STR,
        "gcsFaultToleranceOptions": Struct({}),
    },
    required=("headGroupSpec",),
)
RAYJOB_SPEC: Final = Struct(
    {
        "entrypoint": STR,
        "submissionMode": STR,
        "shutdownAfterJobFinishes": BOOL,
        "ttlSecondsAfterFinished": INT32,
        "activeDeadlineSeconds": INT32,
        "backoffLimit": INT32,
        "suspend": BOOL,
        "clusterSelector": MapOf(STR),
        "rayClusterSpec": RAY_CLUSTER_SPEC,
        "submitterPodTemplate": POD_TEMPLATE,
        "submitterConfig": Struct({"backoffLimit": INT32}),
        "runtimeEnvYAML": STR,
        "jobId": STR,
        "managedBy": STR,
        "metadata": MapOf(STR),
        "entrypointResources": STR,
        "deletionStrategy": Struct({}),
    },
)
TRAINJOB_SPEC: Final = Struct(
    {
        "runtimeRef": Struct({"name": STR, "apiGroup": STR, "kind": STR}, required=("name",)),
        "initializer": Struct({}),
        "trainer": Struct(
            {
                "image": STR,
                "command": Hidden(ListOf(STR)),
                "args": Hidden(ListOf(STR)),
                "env": Hidden(ListOf(Struct({"name": STR, "value": STR}, required=("name",)))),
                "numNodes": INT32,
                "resourcesPerNode": RESOURCES,
                "numProcPerNode": INT32,
            }
        ),
        "runtimePatches": ListOf(Struct({"manager": STR})),
        "suspend": BOOL,
        "activeDeadlineSeconds": INT,
        "managedBy": STR,
    },
    required=("runtimeRef",),
)
"""A Kubeflow Trainer v2 TrainJob's spec (trainer.kubeflow.org/v1alpha1, Trainer v2.2)."""
TRAINING_RUNTIME_SPEC: Final = Struct(
    {
        "mlPolicy": Struct(
            {
                "numNodes": INT32,
                "torch": Struct({}),
                "mpi": Struct({"numProcPerNode": INT32, "runLauncherAsNode": BOOL}),
                "jax": Struct({}),
                "xgboost": Struct({}),
                "flux": Struct({"numProcPerNode": INT32}),
            }
        ),
        "podGroupPolicy": Struct({}),
        "template": Struct({"metadata": OBJECT_META, "spec": JOBSET_SPEC}, required=("spec",)),
    },
    required=("template",),
)
"""A ClusterTrainingRuntime's or TrainingRuntime's spec: a JobSet template and its ML policy."""
LWS_SPEC: Final = Struct(
    {
        "replicas": INT32,
        "leaderWorkerTemplate": Struct(
            {
                "leaderTemplate": POD_TEMPLATE,
                "workerTemplate": POD_TEMPLATE,
                "size": INT32,
                "restartPolicy": STR,
                "subGroupPolicy": Struct({"subGroupSize": INT32}),
                "volumeClaimTemplates": ListOf(Struct({})),
            },
            required=("workerTemplate",),
        ),
        "rolloutStrategy": Struct({}),
        "startupPolicy": STR,
        "networkConfig": Struct({"subdomainPolicy": STR}),
    },
    required=("leaderWorkerTemplate",),
)
HEAD: Final = Struct({"apiVersion": STR, "kind": STR, "metadata": OBJECT_META})
"""What every document of a mix must have the shape of, whatever its kind."""
BODIES: Final[Mapping[str, Struct]] = {
    "Job": Struct({"spec": JOB_SPEC, "status": Anything()}, required=("spec",)),
    "Pod": Struct({"spec": POD_SPEC, "status": Anything()}, required=("spec",)),
    "JobSet": Struct({"spec": JOBSET_SPEC, "status": Anything()}, required=("spec",)),
    "PyTorchJob": Struct({"spec": PYTORCHJOB_SPEC, "status": Anything()}, required=("spec",)),
    "RayJob": Struct({"spec": RAYJOB_SPEC, "status": Anything()}, required=("spec",)),
    "MPIJob": Struct({"spec": MPIJOB_SPEC, "status": Anything()}, required=("spec",)),
    "RayCluster": Struct({"spec": RAY_CLUSTER_SPEC, "status": Anything()}, required=("spec",)),
    "TFJob": Struct({"spec": TFJOB_SPEC, "status": Anything()}, required=("spec",)),
    "XGBoostJob": Struct({"spec": XGBOOSTJOB_SPEC, "status": Anything()}, required=("spec",)),
    "PaddleJob": Struct({"spec": PADDLEJOB_SPEC, "status": Anything()}, required=("spec",)),
    "JAXJob": Struct({"spec": JAXJOB_SPEC, "status": Anything()}, required=("spec",)),
    "TrainJob": Struct({"spec": TRAINJOB_SPEC, "status": Anything()}, required=("spec",)),
    "ClusterTrainingRuntime": Struct({"spec": TRAINING_RUNTIME_SPEC}, required=("spec",)),
    "TrainingRuntime": Struct({"spec": TRAINING_RUNTIME_SPEC}, required=("spec",)),
    "StatefulSet": Struct({"spec": STATEFULSET_SPEC, "status": Anything()}, required=("spec",)),
    "LeaderWorkerSet": Struct({"spec": LWS_SPEC, "status": Anything()}, required=("spec",)),
    "Deployment": Struct({"spec": DEPLOYMENT_SPEC, "status": Anything()}, required=("spec",)),
}
"""The rest of the kinds the replay submits (gpu_queues.whatif.mix.REPLAYABLE), and the Trainer
runtimes a mix carries for its TrainJobs (gpu_queues.whatif.trainjob)."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _what(value: Any, hidden: bool) -> str:
    """`a number (5)`; only `a number` where the value is not shown."""
    return _type_name(value) if hidden else f"{_type_name(value)} ({_show(value)})"


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _key(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def problem(value: Any, shape: Any, path: str = "", hidden: bool = False) -> str | None:
    """The first field of `value` (None counting as absent) that does not have its `shape`,
    and why, by its path; None when every known field has its shape. Within a `Hidden`
    field (`hidden`), no value is shown."""
    if value is None or isinstance(shape, Anything):
        return None
    if isinstance(shape, Hidden):
        return problem(value, shape.shape, path, hidden=True)
    where = path or "the document"
    if isinstance(shape, Scalar):
        return _scalar(value, shape, where, hidden)
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return f"{where}: must be a list, not {_what(value, hidden)}"
        if shape.non_empty and not value:
            return f"{where}: must not be empty"
        for i, item in enumerate(value):
            if item is None:
                return f"{path}[{i}]: must not be null"
            found = problem(item, shape.item, f"{path}[{i}]", hidden)
            if found:
                return found
        return None
    if not isinstance(value, Mapping):
        return f"{where}: must be a mapping, not {_what(value, hidden)}"
    if isinstance(shape, MapOf):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{where}: key {_show(k)} must be a string"  # keys: names, not values
            if v is None and shape.value in (STR, QUANTITY):
                return f"{path}[{k}]: must be {shape.value.named}, not null"
            found = problem(v, shape.value, f"{path}[{k}]", hidden)
            if found:
                return found
            if shape.value is QUANTITY and (whole := whole_number_problem(k, v)):
                return f"{path}[{k}]: {whole}"
        return None
    for name in shape.required:
        if value.get(name) is None:
            return f"{_key(path, name)}: is required"
    for name, inner in shape.fields.items():
        field = value.get(name)
        if field is None:  # absent: no path to build (most of a manifest's known fields)
            continue
        found = problem(field, inner, _key(path, name), hidden)
        if found:
            return found
    return None


def _scalar(value: Any, shape: Scalar, where: str, hidden: bool = False) -> str | None:
    if shape is QUANTITY:
        try:
            amount = parse_quantity(value)
        except QuantityError as exc:
            return f"{where}: {exc}"
        if abs(amount) * 1000 > MAX_MILLI:
            return (
                f"{where}: {_show(value)} is more than Kubernetes' resource arithmetic holds "
                f"(an int64 of thousandths: at most {MAX_MILLI // 1000:,}); Kueue and the "
                "scheduler would overflow on it"
            )
        return None
    fits = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }[shape.kind]
    if (
        fits
        and shape.bits is not None
        and not -(2 ** (shape.bits - 1)) <= value < 2 ** (shape.bits - 1)
    ):
        return f"{where}: {_show(value)} is out of range for an int{shape.bits}"
    if fits:
        return None
    hint = " (quote it)" if shape is STR and isinstance(value, int | float | bool) else ""
    return f"{where}: must be {shape.named}, not {_what(value, hidden)}{hint}"


def head_problem(body: Mapping[str, Any]) -> str | None:
    """apiVersion, kind and metadata of any document."""
    return problem(body, HEAD)


def body_problem(body: Mapping[str, Any], kind: str) -> str | None:
    """The rest of an object the replay submits (a Job's spec, a Pod's, a JobSet's, a
    PyTorchJob's, a RayJob's, a RayCluster's, an MPIJob's, a TFJob's, an XGBoostJob's, a
    PaddleJob's, a JAXJob's, a TrainJob's, a Trainer runtime's, a LeaderWorkerSet's)."""
    shape = BODIES.get(kind)
    return problem(body, shape) if shape is not None else None
