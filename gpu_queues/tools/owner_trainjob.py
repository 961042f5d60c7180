"""A live TrainJob (Kubeflow Trainer v2) and the runtime it names, as the what-if mix carries
them (gpu_queues/whatif/trainjob.py): a TrainJob holds no pod template, Kueue counts its pods
from the runtime its spec.runtimeRef names, so a recorded TrainJob needs that runtime beside it.
Kept, as for every owner, only what admission depends on:
- of the TrainJob: its spec.runtimeRef, its trainer's numNodes and resourcesPerNode (requests
  and limits);
- of the runtime: its ML policy's numNodes, which policy it is and an MPI policy's
  runLauncherAsNode, and each replicated job's name, replicas, trainer-step label
  (trainer.kubeflow.org/trainjob-ancestor-step), Job parallelism and pod template (what
  owners.kept_pod_spec keeps of it).
The pod sets the mix counts of the two (trainjob_pod_sets, the mix's one rule) must be the
Workload's, name for name and count for count, or one of them changed since Kueue made it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from gpu_queues.tools.owners import (
    Unrecordable,
    checked_name,
    comment_text,
    kept_numbers,
    kept_pod_spec,
    kept_quantity,
    manifest_metadata,
    pod_set_count,
    workload_manifest,
)
from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.trainjob import (
    ANCESTOR_LABEL,
    GROUP,
    NAMESPACED_RUNTIME,
    runtime_ref,
    runtime_where,
    trainjob_pod_sets,
)

OwnerLookup = Callable[[str, str, str], dict[str, Any] | None]
"""(kind, namespace, name) -> the object as the API has it, None when it has none (Owners.get)."""

API_VERSION: Final = f"{GROUP}/v1alpha1"
_POLICIES: Final = ("torch", "mpi", "jax", "xgboost", "flux")


def manifest_and_runtime(
    wl: dict[str, Any],
    kind: str,
    namespace: str,
    name: str,
    found: Mapping[str, Any] | None,
    lookup: OwnerLookup,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The Workload's owner as the mix submits it (owners.workload_manifest), and beside a
    TrainJob the runtime it names (None for another kind); Unrecordable when it cannot be."""
    if kind != "TrainJob":
        return workload_manifest(wl, kind, namespace, name, found), None
    pod_sets = [as_dict(p) for p in as_list(as_dict(wl.get("spec")).get("podSets"))]
    metadata = manifest_metadata(wl, namespace, name, found)
    return trainjob_manifests(metadata, pod_sets, as_dict(found), namespace, lookup)


def trainjob_manifests(
    metadata: dict[str, Any],
    pod_sets: list[dict[str, Any]],
    found: Mapping[str, Any],
    namespace: str,
    lookup: OwnerLookup,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The TrainJob (`found`, as the API has it, under `metadata`) and its runtime (read through
    `lookup`) as the mix carries them; Unrecordable when the runtime is gone or either no
    longer makes the Workload's pod sets (`pod_sets`)."""
    try:
        key = runtime_ref(found, namespace)
    except LookupError as exc:
        raise Unrecordable(f"malformed: {exc}") from None
    kind, where = key[0], runtime_where(key)
    checked_name(key[2], "object", "its spec.runtimeRef's name")
    live = lookup(*key)
    if live is None:
        raise Unrecordable(f"its {kind} {where} (spec.runtimeRef) is no longer in the API")
    runtime = _runtime(kind, key[1], key[2], as_dict(live.get("spec")))
    spec = as_dict(found.get("spec"))
    ref = {k: v for k, v in as_dict(spec.get("runtimeRef")).items() if k in ("apiGroup", "kind")}
    kept: dict[str, Any] = {"runtimeRef": {"name": key[2], **ref}}
    trainer = _trainer(as_dict(spec.get("trainer")))
    if trainer:
        kept["trainer"] = trainer
    trainjob = {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": metadata, "spec": kept}
    counted = [(p.name, p.count) for p in trainjob_pod_sets(trainjob, runtime)]
    workload = [(str(p.get("name")), pod_set_count(p)) for p in pod_sets]
    if counted != workload:
        raise Unrecordable(
            f"its TrainJob on {kind} {where} no longer matches its Workload: pod sets "
            f"{comment_text(repr(counted))} against the Workload's {comment_text(repr(workload))}"
        )
    return trainjob, runtime


def _trainer(trainer: Mapping[str, Any]) -> dict[str, Any]:
    """A TrainJob's numNodes and resourcesPerNode's requests and limits."""
    out = kept_numbers(trainer, ("numNodes",), "its trainer's")
    given = as_dict(trainer.get("resourcesPerNode"))
    resources = {
        kind: {
            checked_name(r, "key", "a resourcesPerNode resource"): kept_quantity(q, "node")
            for r, q in sorted(as_dict(given.get(kind)).items(), key=lambda rq: str(rq[0]))
        }
        for kind in ("requests", "limits")
        if given.get(kind)
    }
    if resources:
        out["resourcesPerNode"] = resources
    return out


def _runtime(kind: str, namespace: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A runtime's ML policy and replicated jobs, what Kueue's count reads of them."""
    metadata = {"name": name, **({"namespace": namespace} if kind == NAMESPACED_RUNTIME else {})}
    kept: dict[str, Any] = {}
    policy = spec.get("mlPolicy")
    if isinstance(policy, dict):
        ml = kept_numbers(policy, ("numNodes",), "its runtime's mlPolicy")
        for which in _POLICIES:
            if isinstance(policy.get(which), dict):
                launcher = as_dict(policy[which]).get("runLauncherAsNode")
                ml[which] = {"runLauncherAsNode": launcher} if isinstance(launcher, bool) else {}
        kept["mlPolicy"] = ml
    jobs = []
    template = as_dict(as_dict(spec.get("template")).get("spec"))
    for raw in as_list(template.get("replicatedJobs")):
        rj = as_dict(raw)
        rj_name = checked_name(rj.get("name"), "label", "its runtime's replicated job's name")
        job_template = as_dict(rj.get("template"))
        job = as_dict(job_template.get("spec"))
        entry: dict[str, Any] = {"name": rj_name}
        entry.update(kept_numbers(rj, ("replicas",), f"replicated job {rj_name}'s"))
        job_spec = kept_numbers(job, ("parallelism",), f"replicated job {rj_name}'s")
        job_spec["template"] = {"spec": kept_pod_spec(as_dict(job.get("template")).get("spec"))}
        step = as_dict(as_dict(job_template.get("metadata")).get("labels")).get(ANCESTOR_LABEL)
        out_template: dict[str, Any] = {"spec": job_spec}
        if step is not None:
            label = checked_name(step, "value", f"replicated job {rj_name}'s {ANCESTOR_LABEL}")
            out_template = {"metadata": {"labels": {ANCESTOR_LABEL: label}}, "spec": job_spec}
        jobs.append({**entry, "template": out_template})
    kept["template"] = {"spec": {"replicatedJobs": jobs}}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": kept}
