"""Kubeflow Trainer v2 TrainJobs (trainer.kubeflow.org/v1alpha1) in a mix, and the runtimes
they name. A TrainJob holds no pod template: it names a runtime (spec.runtimeRef: a
ClusterTrainingRuntime, its default kind, or a TrainingRuntime of its namespace), objects the
Trainer's install puts on the cluster, whose spec.template is a JobSet template. Kueue's
trainjob integration reads the runtime through the API and counts the pod sets of the JobSet
the Trainer would make of it: one per replicated job, in the runtime's order. So a mix that
holds TrainJobs carries the runtime documents they use beside them (a runtime is no workload
and no row of the report; a malformed one is an invalid row naming its field), and a TrainJob
whose runtime the mix does not hold is an invalid row naming spec.runtimeRef.

How the Trainer (v2.2: its TrainingRuntime's newRuntimeInfo, its ML policy plugins and its JobSet
builder) makes each replicated job's pods, which Kueue then counts as a JobSet's (replicas x
pods at once):
- a replicated job's pods are its parallelism (1 when unset), its replicas as the runtime gives
  them (1 when unset), but for the trainer and initializer steps (the replicated jobs labelled
  trainer.kubeflow.org/trainjob-ancestor-step: trainer, dataset-initializer or
  model-initializer), which the builder makes one Job each whatever the runtime says;
- the trainer step runs numNodes pods: the TrainJob's spec.trainer.numNodes, else the
  runtime's mlPolicy.numNodes (1 when unset) when it has an mlPolicy, else its parallelism;
  with an MPI policy whose runLauncherAsNode is true, the replicated job named node runs the
  TrainJob's numNodes less one (at least 1);
- the trainer step's container named node gets the TrainJob's spec.trainer.resourcesPerNode in
  place of its own resources.
The fast engine does not use this: it asks Kueue's own code (toolchain/go/whatif/trainjob.go).
This is what the report says a TrainJob holds (its GPUs, its pods) before the replay.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.podsets import PodSet

GROUP: Final = "trainer.kubeflow.org"
CLUSTER_RUNTIME: Final = "ClusterTrainingRuntime"
NAMESPACED_RUNTIME: Final = "TrainingRuntime"
RUNTIME_KINDS: Final = frozenset({CLUSTER_RUNTIME, NAMESPACED_RUNTIME})
ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_STEP: Final = "trainer"
ONE_JOB_STEPS: Final = frozenset({TRAINER_STEP, "dataset-initializer", "model-initializer"})
"""The steps the Trainer's JobSet builder makes one Job of, whatever the runtime's replicas."""
NODE: Final = "node"
"""The trainer step's container (and, with MPI, its replicated job) the Trainer overrides."""

RuntimeKey = tuple[str, str, str]
"""A runtime's kind, namespace ("" for a ClusterTrainingRuntime) and name."""


def is_runtime(body: Any) -> bool:
    """Whether a mix's document is a Trainer runtime (not a workload)."""
    if not isinstance(body, dict):
        return False
    api_version = body.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    kind = body.get("kind")
    return group == GROUP and isinstance(kind, str) and kind in RUNTIME_KINDS


def runtime_key(body: Mapping[str, Any], default_namespace: str) -> RuntimeKey:
    """Where a runtime document is found by the TrainJobs that name it."""
    meta = as_dict(body.get("metadata"))
    kind = str(body.get("kind"))
    namespace = "" if kind == CLUSTER_RUNTIME else str(meta.get("namespace") or default_namespace)
    return (kind, namespace, str(meta.get("name") or ""))


def runtime_ref(trainjob: Mapping[str, Any], namespace: str) -> RuntimeKey:
    """The runtime a TrainJob's spec.runtimeRef names, as a RuntimeKey (the Trainer's CRD
    defaults the ref's apiGroup to trainer.kubeflow.org and its kind to
    ClusterTrainingRuntime); LookupError when it names no Trainer runtime."""
    ref = as_dict(as_dict(trainjob.get("spec")).get("runtimeRef"))
    group, kind = ref.get("apiGroup") or GROUP, ref.get("kind") or CLUSTER_RUNTIME
    if group != GROUP or not isinstance(kind, str) or kind not in RUNTIME_KINDS:
        raise LookupError(
            f"spec.runtimeRef: {kind} of apiGroup {group} is not a Trainer runtime (Kueue "
            f"reads a {CLUSTER_RUNTIME} or a {NAMESPACED_RUNTIME} of {GROUP})"
        )
    return (kind, "" if kind == CLUSTER_RUNTIME else namespace, str(ref.get("name")))


def runtime_where(key: RuntimeKey) -> str:
    """A runtime's name as a message gives it: namespace/name for a TrainingRuntime."""
    kind, namespace, name = key
    return name if kind == CLUSTER_RUNTIME else f"{namespace}/{name}"


@dataclass(frozen=True)
class Runtimes:
    """The mix's runtimes, by RuntimeKey, as the engine creates them."""

    by_key: Mapping[RuntimeKey, dict[str, Any]] = field(default_factory=dict)
    refused: frozenset[RuntimeKey] = frozenset()
    """Runtimes of the mix refused (their rows say why)."""

    def named(self, trainjob: Mapping[str, Any], namespace: str) -> dict[str, Any]:
        """The runtime a TrainJob's spec.runtimeRef names; LookupError saying why when the mix
        holds none."""
        key = runtime_ref(trainjob, namespace)
        kind, where = key[0], runtime_where(key)
        found = self.by_key.get(key)
        if found is None and key in self.refused:
            raise LookupError(
                f"spec.runtimeRef: the mix's {kind} {where} is invalid (its row says why)"
            )
        if found is None:
            held = ", ".join(
                sorted(f"{k} {n}" if not ns else f"{k} {ns}/{n}" for k, ns, n in self.by_key)
            )
            raise LookupError(
                f"spec.runtimeRef: {kind} {where} is not in the mix (Kueue counts a TrainJob's "
                f"pods from its runtime: put the runtime's document in the mix; it holds "
                f"{held or 'none'})"
            )
        return found


def runtime_object(body: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """A runtime document as the engine creates it: no status or server-set fields, a
    TrainingRuntime in its namespace."""
    obj = copy.deepcopy(dict(body))
    obj.pop("status", None)
    meta = as_dict(obj.get("metadata"))
    obj["metadata"] = meta
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        meta.pop(key, None)
    if obj.get("kind") == NAMESPACED_RUNTIME:
        meta["namespace"] = meta.get("namespace") or namespace
    return obj


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def trainjob_pod_sets(trainjob: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[PodSet]:
    """The pod sets Kueue counts for a TrainJob on its runtime (the module's rules), each with
    the template its pods run (a copy: the runtime's is not changed)."""
    spec = as_dict(runtime.get("spec"))
    policy = spec.get("mlPolicy")
    mpi = as_dict(as_dict(policy).get("mpi")) if isinstance(policy, dict) else {}
    trainer = as_dict(as_dict(trainjob.get("spec")).get("trainer"))
    wanted = trainer.get("numNodes")
    out = []
    for item in as_list(as_dict(as_dict(spec.get("template")).get("spec")).get("replicatedJobs")):
        replicated = as_dict(item)
        name = str(replicated.get("name") or "")
        job_template = as_dict(replicated.get("template"))
        job = as_dict(job_template.get("spec"))
        template = copy.deepcopy(as_dict(job.get("template")))
        pod_spec = as_dict(template.get("spec"))
        pods, replicas = _int(job.get("parallelism"), 1), _int(replicated.get("replicas"), 1)
        ancestor = as_dict(as_dict(job_template.get("metadata")).get("labels")).get(ANCESTOR_LABEL)
        if ancestor in ONE_JOB_STEPS:
            replicas = 1
        if ancestor == TRAINER_STEP:
            if isinstance(policy, dict):
                pods = _int(policy.get("numNodes"), 1)
            if isinstance(wanted, int):
                pods = wanted
            _resources_per_node(pod_spec, trainer.get("resourcesPerNode"))
        if (
            mpi
            and name == NODE
            and isinstance(wanted, int)
            and mpi.get("runLauncherAsNode") is True
        ):
            pods = max(wanted - 1, 1)
        out.append(
            PodSet(
                name, max(replicas, 0) * max(pods, 0), as_dict(template.get("metadata")), pod_spec
            )
        )
    return out


def _resources_per_node(pod_spec: dict[str, Any], resources: Any) -> None:
    """The TrainJob's resourcesPerNode in place of the node container's resources (the
    Trainer's builder: when it gives limits or requests)."""
    given = as_dict(resources)
    if given.get("limits") is None and given.get("requests") is None:
        return
    for container in as_list(pod_spec.get("containers")):
        if isinstance(container, dict) and container.get("name") == NODE:
            container["resources"] = {
                k: given[k] for k in ("limits", "requests") if given.get(k) is not None
            }
            return


def distinct(runtimes: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Each runtime once (the entries' TrainJobs may share one), in the order given."""
    seen: dict[RuntimeKey, dict[str, Any]] = {}
    for runtime in runtimes:
        if runtime:
            seen.setdefault(runtime_key(runtime, ""), runtime)
    return list(seen.values())
