"""Small chainable builders for the objects tests would otherwise write out as dict literals,
in the style of Kueue's own test wrappers (`MakeClusterQueue("cq").Cohort("c")...Obj()`).

Two families, each written by hand after its reference, never produced by the code under test:

* Kueue objects as the API server takes them (kueue.x-k8s.io/v1beta2): `ClusterQueue`,
  `Cohort`, `ResourceFlavor`, `Topology`, `LocalQueue`, and `FlavorQuotas` for a flavor's
  quotas inside a resource group. `.obj()` gives the object.
* The stack config `load_config` takes (the `gpu-queues:*` keys of a Pulumi.<stack>.yaml,
  without the prefix; docs/config-reference.md): `Stack`, `Team`, `Flavor`. `.raw()` gives
  the dict, `Stack.config()` the keys with their prefix, `Stack.yaml()` the stack file.

Every method changes the builder and returns it; `.obj()` / `.raw()` return a fresh deep copy,
so one builder can hand out several objects and a test may change what it gets.

* What runs on the cluster, as a user or the cluster writes it (testingjobs' `MakeJob("j",
  "ns").Queue("q").Parallelism(2).Request("nvidia.com/gpu", "4").Obj()`): `Job` and `Pod`
  (one container, `main`), Kueue's `Workload` with its admission and conditions, and `Node`;
  `Mix` is a what-if mix of them, each with its submit-at and duration annotations.

Resources are keyword arguments: `gpu` is nvidia.com/gpu, any other keyword is the resource's
own name (cpu, memory); a name that is not an identifier goes through `FlavorQuotas.resource`
or a mapping (`.quota("h100", **{"example.com/nic": 1})`). Quotas keep the order they are
written in, as coveredResources does: Kueue wants each flavor's resources in that order.
Quantities are kept as written (2 stays a number, "2" a string): the code under test reads
both, and some tests mean one of them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import yaml

GPU = "nvidia.com/gpu"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
# Written out here, not imported: a builder spells what the docs say, whatever the code says.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
SUBMIT_AT = "gpu-queues.dev/submit-at"  # docs/what-if.md, the mix
DURATION = "gpu-queues.dev/duration"
COMPLETE_AFTER = "sandbox.gpu-queues.dev/complete-after"  # sandbox/kwok-stages.yaml
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"


def resource_name(key: str) -> str:
    """The resource a keyword names: `gpu` is nvidia.com/gpu, the rest are as written."""
    return GPU if key == "gpu" else key


def _resources(given: Mapping[str, Any]) -> dict[str, Any]:
    return {resource_name(k): v for k, v in given.items()}


def _group_for(groups: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """The last resource group if it covers exactly `names`, else a new one (appended)."""
    if groups and groups[-1]["coveredResources"] == names:
        return groups[-1]
    group: dict[str, Any] = {"coveredResources": list(names), "flavors": []}
    groups.append(group)
    return group


def _flavor_in(groups: list[dict[str, Any]], flavor: str) -> dict[str, Any]:
    for group in groups:
        entries: list[dict[str, Any]] = group["flavors"]
        for entry in entries:
            if entry["name"] == flavor:
                return entry
    raise KeyError(f"no quota for flavor {flavor!r} yet: call quota({flavor!r}, ...) first")


# --- Kueue objects ---------------------------------------------------------------------------


class FlavorQuotas:
    """One entry of a resource group's `flavors`: `{"name", "resources": [{"name",
    "nominalQuota", "borrowingLimit"?, "lendingLimit"?}]}`."""

    def __init__(self, name: str) -> None:
        self._obj: dict[str, Any] = {"name": name, "resources": []}

    def resource(
        self, name: str, nominal: Any, *, borrowing: Any = None, lending: Any = None
    ) -> Self:
        quota: dict[str, Any] = {"name": name, "nominalQuota": nominal}
        if borrowing is not None:
            quota["borrowingLimit"] = borrowing
        if lending is not None:
            quota["lendingLimit"] = lending
        self._obj["resources"].append(quota)
        return self

    def entry(self, quota: Mapping[str, Any]) -> Self:
        """A resources entry as written: for the ones Kueue refuses (no nominalQuota, say)."""
        self._obj["resources"].append(copy.deepcopy(dict(quota)))
        return self

    def quotas(self, **nominal: Any) -> Self:
        for name, value in _resources(nominal).items():
            self.resource(name, value)
        return self

    def names(self) -> list[str]:
        return [r["name"] for r in self._obj["resources"]]

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


class _KueueObject:
    kind = ""

    def __init__(self, name: str, spec: dict[str, Any] | None = None) -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": KUEUE_API,
            "kind": self.kind,
            "metadata": {"name": name},
        }
        if spec is not None:
            self._obj["spec"] = spec

    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj.setdefault("spec", {})
        return spec

    def spec(self, **fields: Any) -> Self:
        """Spec fields as written (preemption, stopPolicy, ...), after the ones set so far."""
        self._spec().update(copy.deepcopy(fields))
        return self

    def annotations(self, given: Mapping[str, str]) -> Self:
        self._obj["metadata"].setdefault("annotations", {}).update(given)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


class _WithQuotas(_KueueObject):
    """`spec.resourceGroups`, as ClusterQueue and Cohort share it."""

    def _groups(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = self._spec().setdefault("resourceGroups", [])
        return groups

    def resource_group(self, *flavors: FlavorQuotas, covered: Iterable[str] | None = None) -> Self:
        """A resource group of these flavors; coveredResources are the first flavor's
        resources unless given (as Kueue's wrapper does)."""
        names = list(covered) if covered is not None else (flavors[0].names() if flavors else [])
        self._groups().append({"coveredResources": names, "flavors": [f.obj() for f in flavors]})
        return self

    def quota(self, flavor: str, **nominal: Any) -> Self:
        """The flavor's nominal quotas: in the last resource group if that covers the same
        resources, else in a new group covering them."""
        quotas = FlavorQuotas(flavor).quotas(**nominal)
        _group_for(self._groups(), quotas.names())["flavors"].append(quotas.obj())
        return self

    def _limit(self, field: str, flavor: str, limits: Mapping[str, Any]) -> Self:
        resources = {r["name"]: r for r in _flavor_in(self._groups(), flavor)["resources"]}
        for name, value in _resources(limits).items():
            resources[name][field] = value
        return self

    def borrowing(self, flavor: str, **limits: Any) -> Self:
        return self._limit("borrowingLimit", flavor, limits)

    def lending(self, flavor: str, **limits: Any) -> Self:
        return self._limit("lendingLimit", flavor, limits)


class ClusterQueue(_WithQuotas):
    """A ClusterQueue; like Kueue's MakeClusterQueue it starts with the empty
    namespaceSelector (every namespace), and with no resource group."""

    kind = "ClusterQueue"

    def __init__(self, name: str) -> None:
        super().__init__(name, {"namespaceSelector": {}, "resourceGroups": []})

    def cohort(self, name: Any) -> Self:
        self._spec()["cohortName"] = name
        return self

    def namespace_selector(self, selector: Any) -> Self:
        self._spec()["namespaceSelector"] = copy.deepcopy(selector)
        return self

    def preemption(self, **policy: Any) -> Self:
        self._spec()["preemption"] = copy.deepcopy(policy)
        return self


class Cohort(_WithQuotas):
    kind = "Cohort"

    def __init__(self, name: str) -> None:
        super().__init__(name, {})

    def parent(self, name: str) -> Self:
        self._spec()["parentName"] = name
        return self


class ResourceFlavor(_KueueObject):
    """A ResourceFlavor; it has no spec until something is set in one."""

    kind = "ResourceFlavor"

    def labels(self, given: Mapping[str, str]) -> Self:
        self._spec().setdefault("nodeLabels", {}).update(given)
        return self

    def taint(self, key: str, effect: str, value: str | None = None) -> Self:
        taint = {"key": key, "value": value, "effect": effect}
        self._spec().setdefault("nodeTaints", []).append(
            {k: v for k, v in taint.items() if v is not None}
        )
        return self

    def toleration(self, **fields: Any) -> Self:
        self._spec().setdefault("tolerations", []).append(dict(fields))
        return self

    def topology(self, name: str) -> Self:
        self._spec()["topologyName"] = name
        return self


class Topology(_KueueObject):
    """A Topology: its levels from the top (block) down, each a node label."""

    kind = "Topology"

    def __init__(self, name: str) -> None:
        super().__init__(name, {"levels": []})

    def levels(self, *node_labels: Any) -> Self:
        self._spec()["levels"].extend({"nodeLabel": label} for label in node_labels)
        return self


class LocalQueue(_KueueObject):
    kind = "LocalQueue"

    def __init__(self, name: str, namespace: str, cluster_queue: Any) -> None:
        super().__init__(name, {"clusterQueue": cluster_queue})
        self._obj["metadata"]["namespace"] = namespace


# --- What runs: Jobs, Pods, Workloads, Nodes, and the what-if's mixes --------------------------


def _seconds(value: int | float | str) -> str:
    """A duration as the annotations take it: text as written, a number as seconds."""
    return value if isinstance(value, str) else f"{value}s"


class _Runnable:
    """What Job and Pod share: the object's metadata and one pod spec with one container,
    `main`, restartPolicy Never (as Kueue's MakeJob); `_pod` says where that pod spec is."""

    def __init__(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        metadata: dict[str, Any] = {"name": name}
        if namespace is not None:
            metadata["namespace"] = namespace
        self._obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}

    def _pod(self) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def _new_pod_spec() -> dict[str, Any]:
        return {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "registry.example/train:1"}],
        }

    def _container(self) -> dict[str, Any]:
        containers: list[dict[str, Any]] = self._pod()["containers"]
        return containers[0]

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def uid(self, uid: str) -> Self:
        """As the API server gives it (for a test that plays the API)."""
        self._obj["metadata"]["uid"] = uid
        return self

    def created(self, timestamp: str) -> Self:
        self._obj["metadata"]["creationTimestamp"] = timestamp
        return self

    def queue(self, name: str) -> Self:
        """The LocalQueue Kueue queues it in (kueue.x-k8s.io/queue-name)."""
        return self.label(QUEUE_LABEL, name)

    def priority_class(self, name: str) -> Self:
        return self.label(PRIORITY_LABEL, name)

    def submit_at(self, when: int | float | str) -> Self:
        """When a what-if mix submits it (a number is seconds)."""
        return self.annotation(SUBMIT_AT, _seconds(when))

    def duration(self, runs: int | float | str) -> Self:
        """How long it runs in a what-if mix once admitted (a number is seconds)."""
        return self.annotation(DURATION, _seconds(runs))

    def image(self, image: str) -> Self:
        self._container()["image"] = image
        return self

    def container(self, name: str) -> Self:
        """The container's name (`main` until set)."""
        self._container()["name"] = name
        return self

    def _quantities(self, field: str, given: Mapping[str, Any]) -> Self:
        resources = self._container().setdefault("resources", {})
        resources.setdefault(field, {}).update(_resources(given))
        return self

    def requests(self, **quantities: Any) -> Self:
        return self._quantities("requests", quantities)

    def limits(self, **quantities: Any) -> Self:
        return self._quantities("limits", quantities)

    def request(self, name: str, quantity: Any) -> Self:
        """One request by the resource's full name (`nvidia.com/gpu`), as Kueue's wrapper."""
        return self._quantities("requests", {name: quantity})

    def limit(self, name: str, quantity: Any) -> Self:
        return self._quantities("limits", {name: quantity})

    def pod_spec(self, **fields: Any) -> Self:
        """Pod spec fields as written (nodeSelector, tolerations, initContainers, ...)."""
        self._pod().update(copy.deepcopy(fields))
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


class Job(_Runnable):
    """A batch/v1 Job; its pod template holds the one container."""

    def __init__(self, name: str, namespace: str | None) -> None:
        super().__init__("batch/v1", "Job", name, namespace)
        self._obj["spec"] = {"template": {"spec": self._new_pod_spec()}}

    def _pod(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj["spec"]["template"]["spec"]
        return spec

    def _template_meta(self) -> dict[str, Any]:
        template: dict[str, Any] = self._obj["spec"]["template"]
        meta: dict[str, Any] = template.setdefault("metadata", {})
        return meta

    def spec(self, **fields: Any) -> Self:
        """Job spec fields as written (backoffLimit, ...), after the ones set so far."""
        self._obj["spec"].update(copy.deepcopy(fields))
        return self

    def parallelism(self, pods: int) -> Self:
        return self.spec(parallelism=pods)

    def completions(self, pods: int) -> Self:
        return self.spec(completions=pods)

    def suspend(self, suspended: Any = True) -> Self:
        return self.spec(suspend=suspended)

    def pod_annotation(self, key: str, value: str) -> Self:
        self._template_meta().setdefault("annotations", {})[key] = value
        return self

    def pod_label(self, key: str, value: str) -> Self:
        self._template_meta().setdefault("labels", {})[key] = value
        return self

    def template(self, spec: Mapping[str, Any]) -> Self:
        """The whole pod spec, as written (the one container's setters then change it)."""
        self._obj["spec"]["template"]["spec"] = copy.deepcopy(dict(spec))
        return self

    def complete_after(self, runs: int | float | str) -> Self:
        """The sandbox's lever (kwok's complete-after stage): its pods end this long after
        they run."""
        return self.pod_annotation(COMPLETE_AFTER, _seconds(runs))

    def start_time(self, timestamp: str) -> Self:
        """status.startTime, as the Job controller sets it when the Job resumes."""
        self._obj.setdefault("status", {})["startTime"] = timestamp
        return self

    def required_topology(self, level: str) -> Self:
        """Its pods must share one domain of this node label (Kueue's TAS annotation)."""
        return self.pod_annotation(REQUIRED_TOPOLOGY, level)


class Pod(_Runnable):
    """A plain v1 Pod (Kueue's pod integration)."""

    def __init__(self, name: str, namespace: str | None) -> None:
        super().__init__("v1", "Pod", name, namespace)
        self._obj["spec"] = self._new_pod_spec()

    def _pod(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj["spec"]
        return spec

    def complete_after(self, runs: int | float | str) -> Self:
        """The sandbox's lever (kwok's complete-after stage) on the pod itself."""
        return self.annotation(COMPLETE_AFTER, _seconds(runs))


class JobSet(_Runnable):
    """A jobset.x-k8s.io/v1alpha2 JobSet as users write it: replicated jobs, each a Job
    builder's spec as its template. The metadata setters are Job's; a pod's (limits, image)
    are set on each replicated job's Job."""

    def __init__(self, name: str, namespace: str | None) -> None:
        super().__init__("jobset.x-k8s.io/v1alpha2", "JobSet", name, namespace)
        self._obj["spec"] = {"replicatedJobs": []}

    def replicated(self, name: str, job: Job, replicas: int = 1) -> Self:
        """A replicated job: `replicas` copies of the Job's spec (its parallelism, its pods)."""
        template = {"spec": job.obj()["spec"]}
        self._obj["spec"]["replicatedJobs"].append(
            {"name": name, "replicas": replicas, "template": template}
        )
        return self


class KubeflowJob(_Runnable):
    """A kubeflow.org/v1 job of a Kubeflow v1 kind (PyTorchJob, TFJob, XGBoostJob, PaddleJob,
    JAXJob) as users write it: its replica types, each a Job builder's pod template, its one
    container named as the training operator wants it (tensorflow, xgboost, ...). The metadata
    setters are Job's; a pod's (limits, image) are set on each replica's Job."""

    # Each kind's replica specs field and the container its pods run in (training operator v1.9).
    KINDS: ClassVar[dict[str, tuple[str, str]]] = {
        "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
        "TFJob": ("tfReplicaSpecs", "tensorflow"),
        "XGBoostJob": ("xgbReplicaSpecs", "xgboost"),
        "PaddleJob": ("paddleReplicaSpecs", "paddle"),
        "JAXJob": ("jaxReplicaSpecs", "jax"),
    }

    def __init__(self, kind: str, name: str, namespace: str | None) -> None:
        super().__init__("kubeflow.org/v1", kind, name, namespace)
        self._specs, self._container = self.KINDS[kind]
        self._obj["spec"] = {self._specs: {}}

    def replica(self, replica_type: str, job: Job, replicas: int | None = 1) -> Self:
        """`replicas` pods (none given: the operator's default, 1) of the Job's pod template."""
        template = job.obj()["spec"]["template"]
        template["spec"]["containers"][0]["name"] = self._container
        replica: dict[str, Any] = {"restartPolicy": "OnFailure", "template": template}
        if replicas is not None:
            replica["replicas"] = replicas
        self._obj["spec"][self._specs][replica_type] = replica
        return self

    def spec(self, **fields: Any) -> Self:
        """Spec fields as written (runPolicy, elasticPolicy, ...), after the ones set so far."""
        self._obj["spec"].update(copy.deepcopy(fields))
        return self


class PyTorchJob(KubeflowJob):
    """A kubeflow.org/v1 PyTorchJob as users write it: replica types (Master, Worker), each a Job
    builder's pod template, its one container named pytorch as the training operator wants."""

    def __init__(self, name: str, namespace: str | None) -> None:
        super().__init__("PyTorchJob", name, namespace)


class MPIJob(_Runnable):
    """A kubeflow.org/v2beta1 MPIJob as users write it: its Launcher and Worker replica types,
    each a Job builder's pod template. The metadata setters are Job's; a pod's (limits, image)
    are set on each replica's Job."""

    def __init__(self, name: str, namespace: str | None) -> None:
        super().__init__("kubeflow.org/v2beta1", "MPIJob", name, namespace)
        self._obj["spec"] = {"slotsPerWorker": 1, "mpiReplicaSpecs": {}}

    def replica(self, replica_type: str, job: Job, replicas: int | None = 1) -> Self:
        """`replicas` pods (none given: left out) of the Job's pod template."""
        replica: dict[str, Any] = {"template": job.obj()["spec"]["template"]}
        if replicas is not None:
            replica["replicas"] = replicas
        self._obj["spec"]["mpiReplicaSpecs"][replica_type] = replica
        return self


class RayJob(_Runnable):
    """A ray.io/v1 RayJob as users write it: an entrypoint, a cluster deleted when the job ends
    (as Kueue requires), its head and worker groups each a Job builder's pod template. The
    metadata setters are Job's; a pod's (limits, image) are set on each group's Job."""

    def __init__(self, name: str, namespace: str | None, head: Job) -> None:
        super().__init__("ray.io/v1", "RayJob", name, namespace)
        self._obj["spec"] = {
            "entrypoint": "python /app/train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "headGroupSpec": {"template": head.obj()["spec"]["template"]},
                "workerGroupSpecs": [],
            },
        }

    def workers(self, group: str, job: Job, replicas: int | None = 1) -> Self:
        """A worker group of `replicas` pods (none given: KubeRay's default, 0) of the Job's
        pod template."""
        spec: dict[str, Any] = {"groupName": group, "template": job.obj()["spec"]["template"]}
        if replicas is not None:
            spec["replicas"] = replicas
        self._obj["spec"]["rayClusterSpec"]["workerGroupSpecs"].append(spec)
        return self

    def spec(self, **fields: Any) -> Self:
        """RayJob spec fields as written (submissionMode, ...)."""
        self._obj["spec"].update(copy.deepcopy(fields))
        return self


class RayCluster(_Runnable):
    """A ray.io/v1 RayCluster as users write it: its head and worker groups, each a Job
    builder's pod template. The metadata setters are Job's; a pod's (limits, image) are set on
    each group's Job."""

    def __init__(self, name: str, namespace: str | None, head: Job) -> None:
        super().__init__("ray.io/v1", "RayCluster", name, namespace)
        self._obj["spec"] = {
            "headGroupSpec": {"template": head.obj()["spec"]["template"]},
            "workerGroupSpecs": [],
        }

    def workers(self, group: str, job: Job, replicas: int | None = 1) -> Self:
        """A worker group of `replicas` pods (none given: KubeRay's default, 0) of the Job's
        pod template."""
        spec: dict[str, Any] = {"groupName": group, "template": job.obj()["spec"]["template"]}
        if replicas is not None:
            spec["replicas"] = replicas
        self._obj["spec"]["workerGroupSpecs"].append(spec)
        return self

    def spec(self, **fields: Any) -> Self:
        """RayCluster spec fields as written (enableInTreeAutoscaling, ...)."""
        self._obj["spec"].update(copy.deepcopy(fields))
        return self


class Workload(_KueueObject):
    """Kueue's Workload, as Kueue writes one for a Job (MakeWorkload): spec.podSets, and in
    status the admission and the conditions, each set in the order called."""

    kind = "Workload"

    def __init__(self, name: str, namespace: str) -> None:
        super().__init__(name, {"podSets": []})
        self._obj["metadata"]["namespace"] = namespace

    def _status(self) -> dict[str, Any]:
        status: dict[str, Any] = self._obj.setdefault("status", {})
        return status

    def created(self, timestamp: str) -> Self:
        self._obj["metadata"]["creationTimestamp"] = timestamp
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def owner(self, kind: str, name: str, uid: str, api_version: str = "batch/v1") -> Self:
        """An owner, as Kueue's job reconciler writes it: the controller."""
        self._obj["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        )
        return self

    def queue(self, name: str) -> Self:
        self._spec()["queueName"] = name
        return self

    def pod_set(
        self, spec: Mapping[str, Any] | None = None, *, count: int = 1, name: str = "main"
    ) -> Self:
        """A pod set of `count` pods of this pod spec (a Pod's default spec unless given)."""
        template = copy.deepcopy(dict(spec)) if spec is not None else _Runnable._new_pod_spec()
        self._spec()["podSets"].append(
            {"name": name, "count": count, "template": {"spec": template}}
        )
        return self

    def priority(self, class_name: str, value: int) -> Self:
        """A WorkloadPriorityClass and the priority Kueue copied from it."""
        self._spec()["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": class_name,
        }
        self._spec()["priority"] = value
        return self

    def active(self, active: bool) -> Self:
        self._spec()["active"] = active
        return self

    def condition(
        self,
        kind: str,
        status: str,
        at: str,
        reason: str | None = None,
        message: str | None = None,
    ) -> Self:
        """A condition as written (reason and message only when given)."""
        condition = {"type": kind, "status": status, "lastTransitionTime": at}
        if reason is not None:
            condition["reason"] = reason
        if message is not None:
            condition["message"] = message
        self._status().setdefault("conditions", []).append(condition)
        return self

    def admission(self, cluster_queue: Any, *assignments: Mapping[str, Any]) -> Self:
        """status.admission: the ClusterQueue and each pod set's assignment, as written."""
        self._status()["admission"] = {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [copy.deepcopy(dict(a)) for a in assignments],
        }
        return self

    def reserve_quota(
        self, cluster_queue: str, flavors: Mapping[str, str], at: str, message: str = ""
    ) -> Self:
        """Quota reserved at `at` (pod set main's flavors by resource), as Kueue's
        ReserveQuota: the admission and QuotaReserved True."""
        self.admission(cluster_queue, {"name": "main", "flavors": dict(flavors)})
        return self.condition("QuotaReserved", "True", at, "QuotaReserved", message)

    def admitted(self, at: str, message: str = "") -> Self:
        return self.condition("Admitted", "True", at, "Admitted", message)

    def pending(self, at: str, message: str = "") -> Self:
        """Not admitted (yet): QuotaReserved False, reason Pending."""
        return self.condition("QuotaReserved", "False", at, "Pending", message)

    def finished(self, at: str, message: str = "") -> Self:
        return self.condition("Finished", "True", at, "Succeeded", message)


class Node:
    """A v1 Node as the API server serves one: its hostname label, allocatable the same as
    capacity (quantities as written; Kubernetes writes them as strings)."""

    def __init__(self, name: str) -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"capacity": {}, "allocatable": {}},
        }

    def labels(self, given: Mapping[str, str]) -> Self:
        self._obj["metadata"]["labels"].update(given)
        return self

    def taint(self, key: str, effect: str, value: str | None = None) -> Self:
        taint = {"key": key, "value": value, "effect": effect}
        self._obj["spec"].setdefault("taints", []).append(
            {k: v for k, v in taint.items() if v is not None}
        )
        return self

    def capacity(self, **resources: Any) -> Self:
        for field in ("capacity", "allocatable"):
            self._obj["status"][field].update(_resources(resources))
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


class Mix:
    """A what-if mix (docs/what-if.md): Jobs, Pods, or any document as written, in order, as
    one YAML stream. `write` puts it in a file and returns the path."""

    def __init__(self, *items: _Runnable | Mapping[str, Any]) -> None:
        self._docs: list[dict[str, Any]] = []
        self.add(*items)

    def add(self, *items: _Runnable | Mapping[str, Any]) -> Self:
        for item in items:
            self._docs.append(
                item.obj() if isinstance(item, _Runnable) else copy.deepcopy(dict(item))
            )
        return self

    def docs(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._docs)

    def yaml(self) -> str:
        return yaml.safe_dump_all(self._docs, sort_keys=False)

    def write(self, path: Path) -> Path:
        path.write_text(self.yaml())
        return path


# --- The stack config ------------------------------------------------------------------------


class Team:
    """A team of the stack config: by default namespace team-<name>, ClusterQueue <name>-cq
    and LocalQueue gpu-queue; quotas are `resources: {<resource>: {nominalQuota, ...}}`."""

    def __init__(self, name: str) -> None:
        self._raw: dict[str, Any] = {
            "name": name,
            "namespace": f"team-{name}",
            "clusterQueue": f"{name}-cq",
            "localQueue": "gpu-queue",
            "resourceGroups": [],
        }

    def namespace(self, name: str, *, adopt: bool = False) -> Self:
        self._raw["namespace"] = name
        if adopt:
            self._raw["adoptNamespace"] = True
        return self

    def cluster_queue(self, name: str) -> Self:
        self._raw["clusterQueue"] = name
        return self

    def local_queue(self, name: str) -> Self:
        self._raw["localQueue"] = name
        return self

    def cohort(self, name: str) -> Self:
        self._raw["cohort"] = name
        return self

    def set(self, **fields: Any) -> Self:
        """Other team keys as written (preemption, queueingStrategy, namespaceSelector...)."""
        self._raw.update(copy.deepcopy(fields))
        return self

    def quota(self, flavor: str, **nominal: Any) -> Self:
        """The flavor's nominal quotas: in the last resource group if that covers the same
        resources, else in a new group covering them."""
        resources = {name: {"nominalQuota": v} for name, v in _resources(nominal).items()}
        group = _group_for(self._raw["resourceGroups"], list(resources))
        group["flavors"].append({"name": flavor, "resources": resources})
        return self

    def _limit(self, field: str, flavor: str, limits: Mapping[str, Any]) -> Self:
        resources = _flavor_in(self._raw["resourceGroups"], flavor)["resources"]
        for name, value in _resources(limits).items():
            resources[name][field] = value
        return self

    def borrowing(self, flavor: str, **limits: Any) -> Self:
        return self._limit("borrowingLimit", flavor, limits)

    def lending(self, flavor: str, **limits: Any) -> Self:
        return self._limit("lendingLimit", flavor, limits)

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._raw)


class Flavor:
    """A flavor of the stack config: the ResourceFlavor's fields and the hardware behind it
    (nodes: count x resources, or a total capacity)."""

    def __init__(self, name: str) -> None:
        self._raw: dict[str, Any] = {"name": name}

    def labels(self, given: Mapping[str, str]) -> Self:
        self._raw.setdefault("nodeLabels", {}).update(given)
        return self

    def taint(self, key: str, effect: str, value: str | None = None) -> Self:
        taint = {"key": key, "value": value, "effect": effect}
        self._raw.setdefault("nodeTaints", []).append(
            {k: v for k, v in taint.items() if v is not None}
        )
        return self

    def toleration(self, **fields: Any) -> Self:
        self._raw.setdefault("tolerations", []).append(dict(fields))
        return self

    def nodes(self, count: int, **resources: Any) -> Self:
        self._raw["nodes"] = {"count": count, "resources": _resources(resources)}
        return self

    def node_topology(self, **per_level: int) -> Self:
        """How its nodes fill the topology's levels (`block=2, rack=4`); after `nodes`."""
        self._raw["nodes"]["topology"] = dict(per_level)
        return self

    def topology(self, name: str) -> Self:
        self._raw["topologyName"] = name
        return self

    def capacity(self, **resources: Any) -> Self:
        self._raw["capacity"] = _resources(resources)
        return self

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._raw)


class Stack:
    """The stack config: `raw()` is what load_config takes, `yaml()` the Pulumi.<stack>.yaml."""

    def __init__(self) -> None:
        self._raw: dict[str, Any] = {}

    def kueue(self, **fields: Any) -> Self:
        self._raw.setdefault("kueue", {}).update(copy.deepcopy(fields))
        return self

    def flavor(self, *flavors: Flavor | str) -> Self:
        for f in flavors:
            self._raw.setdefault("flavors", []).append(
                (Flavor(f) if isinstance(f, str) else f).raw()
            )
        return self

    def cohort(self, name: str) -> Self:
        self._raw["cohort"] = {"name": name}
        return self

    def team(self, *teams: Team | Mapping[str, Any]) -> Self:
        """Teams, built or as written (for the ones the Team builder would not write)."""
        self._raw.setdefault("teams", []).extend(
            t.raw() if isinstance(t, Team) else copy.deepcopy(dict(t)) for t in teams
        )
        return self

    def topology(self, name: str, **levels: str) -> Self:
        """A topology of levels from the top down, each its name and node label
        (`block="cloud.example.com/topology-block", ...`)."""
        self._raw.setdefault("topologies", []).append(
            {"name": name, "levels": [{"name": k, "nodeLabel": v} for k, v in levels.items()]}
        )
        return self

    def storage(self, **volume: Any) -> Self:
        self._raw.setdefault("sharedStorage", []).append(copy.deepcopy(volume))
        return self

    def set(self, key: str, value: Any) -> Self:
        """Another top-level key (kubernetes, multiKueue, priorityClasses...) as written."""
        self._raw[key] = copy.deepcopy(value)
        return self

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._raw)

    def config(self) -> dict[str, Any]:
        """The keys as a stack file's `config:` holds them, with the gpu-queues: prefix."""
        return {f"gpu-queues:{key}": value for key, value in self.raw().items()}

    def yaml(self) -> str:
        return yaml.safe_dump({"config": self.config()}, sort_keys=False)


# --- Shorthands for the tools' tests -----------------------------------------------------------


def gpu_flavor(name: str, gpus: int) -> Flavor:
    """A flavor of `gpus` GPUs in all, beside 256 cpu and 2Ti of memory."""
    return Flavor(name).capacity(cpu=256, memory="2Ti", gpu=gpus)


def gpu_team(name: str, gpus: Mapping[str, Mapping[str, Any]], cohort: str | None = "pool") -> Team:
    """A team with 8 cpu, 64Gi of memory and a GPU quota in each flavor of `gpus`, which maps
    a flavor to {"gpu": nominal, "borrow": borrowingLimit, "lend": lendingLimit} (limits
    optional); in `cohort` unless that is None."""
    team = Team(name)
    for flavor, quota in gpus.items():
        team.quota(flavor, cpu=8, memory="64Gi", gpu=quota["gpu"])
        if "borrow" in quota:
            team.borrowing(flavor, gpu=quota["borrow"])
        if "lend" in quota:
            team.lending(flavor, gpu=quota["lend"])
    if cohort:
        team.cohort(cohort)
    return team
