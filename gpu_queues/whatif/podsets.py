"""The pod sets Kueue makes of a workload of the mix, counted as its integrations count them
(pkg/controller/jobs/<kind>: PodSets): a Job's one (its parallelism, at most its completions),
a plain Pod's one, a JobSet's one per replicated job (its replicas times its Job's pods). What
a workload holds while it runs (its GPUs, its pods) is summed over them, one rule for every
kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def job_pods(spec: Mapping[str, Any]) -> int:
    """Pods a Job runs at once: its parallelism (1 by default), at most its completions."""
    count = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        count = min(count, completions)
    return max(count, 0)


def pod_sets(kind: str, body: Mapping[str, Any]) -> list[PodSet]:
    """The pod sets of a Job, Pod or JobSet manifest (none for another kind)."""
    spec = as_dict(body.get("spec"))
    if kind == "Pod":
        return [PodSet(MAIN, 1, as_dict(body.get("metadata")), spec)]
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


def _meta(template: dict[str, Any]) -> dict[str, Any]:
    """The template's metadata mapping (an empty one, not the manifest's, when it has none:
    there is nothing to edit then)."""
    meta = template.get("metadata")
    if not isinstance(meta, dict):
        return {}
    return meta


def held(sets: list[PodSet]) -> tuple[int, int]:
    """(GPUs, pods) the workload holds while all its pods run."""
    return sum(pod_gpus(s.spec) * s.count for s in sets), sum(s.count for s in sets)


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
