"""Kueue's scheduler performance harness configurations as a what-if stack and mix, for
`make bench-kueue-harness` (sandbox/bench/kueue_harness.py): the same cohorts, ClusterQueues,
flavor, nodes and workloads, so that Kueue's own harness and the fast engine replay one thing.

The harness (test/performance/scheduler in Kueue's module) reads a generator.yaml; what its
runner's generator makes of it, which this follows:

- `cohorts`: each cohort set `count` cohorts named `<className>-<i>`; each queues set of a
  cohort `count` ClusterQueues named `<className>-<set>-<i>-<cohort>`, each in a namespace of
  that name with a LocalQueue of that name. One resource group, one flavor (`resourceFlavor.name`,
  default `rf`), one resource, cpu: `nominalQuota` and `borrowingLimit` in cores, preemption
  `reclaimWithinCohort` and `withinClusterQueue`. No Cohort objects: the cohorts exist by name.
- `workloadsSets`: in each ClusterQueue, each set on its own goroutine creates `count` times
  each of its `workloads`, waiting `creationIntervalMs` before each creation (so the k-th,
  from 0, at (k + 1) x interval), named `<className>-<set>-<k>-<template>`: a Workload of
  `podCount` pods (default 1) asking `request` cpu each, at `priority`, which the runner
  finishes `runtimeMs` after it was admitted.
- `topology` (tas): nodes, the product of the levels' counts, each with the node level's
  `capacity` (cpu, memory; default 96 and 256Gi) and labelled `tas-node-group: tas` and with
  each level's label; the flavor selects them by `resourceFlavor.nodeLabel: tas` and names the
  Topology. Without a topology the harness makes no nodes: minimalkueue admits by quota alone.

What the what-if cannot take as the harness gives it, and what stands in for it:

- Workloads are made by the harness directly; the what-if replays Jobs: each is a batch/v1
  Job of `podCount` pods (parallelism and completions), each pod asking `request` cpu, which
  Kueue's Job integration turns into the same Workload (one pod set, the same requests).
- A priority is a number on the Workload; the what-if names WorkloadPriorityClasses: one per
  distinct priority, `p<value>`, of that value.
- The harness's queues cover cpu alone; the project requires memory covered too (a pod that
  asks for memory would never be admitted), so each queue also has an equal share of the
  nodes' memory, which no job asks for.
- Times are milliseconds; the mix's annotations take seconds with decimals (`0.1s`).
- Without a topology the engine still places pods on nodes: enough identical nodes that they
  never stop an admitted job (twice the sum of the nominal quotas, each node at least twice
  the largest request, so a pod always finds one; 110 pods a node). With a topology, the
  harness's nodes, and its Topology as the stack's (`topologies`, the flavor's
  `topologyName`, `nodes.topology` with each level's count, per domain of the level above as
  the generator nests them); each Job's pod template asks what the generator's `tasConstraint`
  puts on its Workload's pod set, as the annotation Kueue's Job integration reads into the
  same request: `required` and `preferred` the podset-required- and -preferred-topology of
  `tasLevel`; `balanced` (no annotation of that name in the release: the generator gives it
  a slice request, `SliceRequiredTopologyRequest` and `SliceSizeTopologyRequest`, and no
  required or preferred one) podset-slice-required-topology of `tasLevel` with
  podset-slice-size `sliceSize`. `convert(..., topology=False)` leaves the topology out (the
  flavor, the nodes and the pods the same), to measure what it costs.
- The harness labels the hostname level `<level name>-<i>` (`node-0` in every rack); the
  stack's nodes carry their own names there, as on a cluster. Kueue keys a domain by the
  values of every level, so the domains are the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpu_queues.kueue.quantity import parse_quantity

DEFAULT_FLAVOR = "rf"  # the generator's flavor when resourceFlavor is not given
NODE_LABEL_VALUE = "tas"  # the value the harness's nodes and its flavor's nodeLabel carry
DEFAULT_NODE_CPU = "96"  # the harness's node capacity when the node level gives none
DEFAULT_NODE_MEMORY = "256Gi"
HOSTNAME = "kubernetes.io/hostname"  # a level Kueue and the stack count by node, not by number
# The annotations Kueue's Job integration reads into the pod set's topology request that the
# generator gives each tasConstraint (runner/generator: Required-, Preferred- and
# SliceRequiredTopologyRequest); "balanced" adds podset-slice-size from sliceSize.
TAS_ANNOTATIONS = {
    "required": "kueue.x-k8s.io/podset-required-topology",
    "preferred": "kueue.x-k8s.io/podset-preferred-topology",
    "balanced": "kueue.x-k8s.io/podset-slice-required-topology",
}
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
PODS_PER_NODE = 110  # gpu_queues.whatif.nodes: what every node the engine places pods on holds
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"  # the harness's own label


class HarnessConfigError(ValueError):
    """A generator.yaml this converter cannot read."""


@dataclass(frozen=True)
class Queue:
    """One ClusterQueue the harness makes (its namespace and LocalQueue share its name)."""

    name: str
    class_name: str
    cohort: str
    nominal_millis: int


@dataclass(frozen=True)
class Workload:
    """One workload the harness creates, as the mix's Job of the same name."""

    namespace: str
    name: str
    class_name: str
    submit_ms: int
    runtime_ms: int
    priority: int
    pods: int
    request: str
    """cpu per pod, as the generator gives it"""
    topology: tuple[tuple[str, str], ...] = ()
    """the pod template's topology annotations (TAS: the class's tasConstraint)"""

    @property
    def cpu_millis(self) -> int:
        return int(millis(self.request) * self.pods)


@dataclass
class Converted:
    stack: dict[str, Any]
    """Pulumi.<stack>.yaml's content: {"config": {"gpu-queues:...": ...}}"""
    jobs: list[dict[str, Any]]
    """the mix: one batch/v1 Job per workload, in submission order"""
    queues: list[Queue]
    workloads: list[Workload]
    """in the order of `jobs`"""
    topology: bool
    """the stack has the configuration's Topology and the Jobs their topology requests (the
    configuration has a topology, converted with topology=True)"""


def millis(value: object) -> Fraction:
    """A cpu quantity (`20`, `"500m"`) in millicores."""
    try:
        return parse_quantity(str(value)) * 1000
    except ValueError as exc:
        raise HarnessConfigError(f"{value!r} is not a quantity: {exc}") from None


def seconds(ms: int) -> str:
    """Milliseconds as the mix's duration: `0.1s`, `35s`, `1.2s`."""
    whole, rest = divmod(ms, 1000)
    return f"{whole}s" if rest == 0 else f"{whole}.{rest:03d}".rstrip("0") + "s"


def _int(value: object, where: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise HarnessConfigError(f"{where}: {value!r} is not a whole number >= {minimum}")
    return value


def _list(value: object, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise HarnessConfigError(f"{where}: a list of mappings is expected")
    return value


def priority_class(value: int) -> str:
    return f"p{value}" if value >= 0 else f"m{-value}"


def _job(w: Workload, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "labels": {
                "kueue.x-k8s.io/queue-name": queue,
                "kueue.x-k8s.io/priority-class": priority_class(w.priority),
                CLASS_LABEL: w.class_name,
            },
            "annotations": {
                "gpu-queues.dev/submit-at": seconds(w.submit_ms),
                "gpu-queues.dev/duration": seconds(w.runtime_ms),
            },
        },
        "spec": {
            "parallelism": w.pods,
            "completions": w.pods,
            "template": {
                **({"metadata": {"annotations": dict(w.topology)}} if w.topology else {}),
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "runner",
                            "resources": {"requests": {"cpu": str(w.request)}},
                        }
                    ],
                },
            },
        },
    }


def topology_request(template: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A workload template's topology annotations: none without a `tasLevel` (the generator
    then makes a pod set without a request, as for an empty `tasConstraint`)."""
    level, constraint = template.get("tasLevel"), template.get("tasConstraint")
    if not level or not constraint:
        return ()
    if constraint not in TAS_ANNOTATIONS:
        raise HarnessConfigError(
            f"workloads[].tasConstraint: {constraint!r} is not one of {', '.join(TAS_ANNOTATIONS)}"
        )
    request: tuple[tuple[str, str], ...] = ((TAS_ANNOTATIONS[constraint], str(level)),)
    if constraint == "balanced":  # Kueue refuses a slice request without its size
        size = _int(template.get("sliceSize"), "workloads[].sliceSize", minimum=1)
        request += ((SLICE_SIZE, str(size)),)
    return request


def _topology(topology: Mapping[str, Any], flavor: dict[str, Any]) -> dict[str, Any]:
    """The stack's Topology of the harness's, and the flavor naming it, its nodes split by
    each level's count (but a hostname level's: one domain a node)."""
    levels = _list(topology.get("levels"), "topology.levels")
    flavor["topologyName"] = str(topology.get("name"))
    flavor["nodes"]["topology"] = {
        str(lv["name"]): lv["count"] for lv in levels if lv.get("nodeLabel") != HOSTNAME
    }
    return {
        "name": flavor["topologyName"],
        "levels": [{"name": str(lv["name"]), "nodeLabel": str(lv["nodeLabel"])} for lv in levels],
    }


def _nodes(
    generator: Mapping[str, Any], queues: list[Queue], workloads: list[Workload]
) -> dict[str, Any]:
    """The flavor's nodes: the harness's with a topology, else enough never to matter."""
    topology = generator.get("topology")
    if topology is not None:
        levels = _list(topology.get("levels"), "topology.levels")
        if len(levels) < 2:
            raise HarnessConfigError("topology.levels: the harness needs at least 2 levels")
        count = math.prod(_int(lv.get("count"), "levels[].count", minimum=1) for lv in levels)
        capacity = levels[-1].get("capacity") or {}
        return {
            "count": count,
            "resources": {
                "cpu": str(capacity.get("cpu") or DEFAULT_NODE_CPU),
                "memory": str(capacity.get("memory") or DEFAULT_NODE_MEMORY),
            },
        }
    largest = max((millis(w.request) for w in workloads), default=Fraction(1000))
    node_millis = max(millis(DEFAULT_NODE_CPU), 2 * largest)
    total = 2 * sum(q.nominal_millis for q in queues)
    count = max(1, math.ceil(total / node_millis))
    smallest = min((w.cpu_millis / w.pods for w in workloads), default=1000)
    most_pods = sum(q.nominal_millis for q in queues) / smallest  # quota full of the smallest
    count = max(count, math.ceil(most_pods / PODS_PER_NODE) + 1)
    return {
        "count": count,
        "resources": {"cpu": str(math.ceil(node_millis / 1000)), "memory": DEFAULT_NODE_MEMORY},
    }


def convert(generator: Mapping[str, Any], topology: bool = True) -> Converted:
    """The stack and the mix of one generator.yaml (as YAML reads it); with `topology` False,
    without its topology (the same nodes, pods and times)."""
    if not isinstance(generator, Mapping):
        raise HarnessConfigError("a generator config is a mapping")
    flavor_cfg = generator.get("resourceFlavor") or {}
    flavor = str(flavor_cfg.get("name") or DEFAULT_FLAVOR)
    queues: list[Queue] = []
    workloads: list[Workload] = []
    teams: list[dict[str, Any]] = []
    cohorts: list[str] = []
    for cset in _list(generator.get("cohorts"), "cohorts"):
        for ci in range(_int(cset.get("count"), "cohorts[].count")):
            cohort = f"{cset['className']}-{ci}"
            cohorts.append(cohort)
            for qsi, qset in enumerate(_list(cset.get("queuesSets"), "queuesSets")):
                for qi in range(_int(qset.get("count"), "queuesSets[].count")):
                    name = f"{qset['className']}-{qsi}-{qi}-{cohort}"
                    nominal = millis(qset.get("nominalQuota", 0))
                    queues.append(Queue(name, str(qset["className"]), cohort, int(nominal)))
                    cpu: dict[str, Any] = {"nominalQuota": str(qset.get("nominalQuota", 0))}
                    if qset.get("borrowingLimit") is not None:
                        cpu["borrowingLimit"] = str(qset["borrowingLimit"])
                    preemption = {
                        k: qset[k]
                        for k in ("reclaimWithinCohort", "withinClusterQueue")
                        if qset.get(k)
                    }
                    team: dict[str, Any] = {
                        "name": name,
                        "namespace": name,
                        "clusterQueue": name,
                        "localQueue": name,
                        "cohort": cohort,
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [{"name": flavor, "resources": {"cpu": cpu}}],
                            }
                        ],
                    }
                    if preemption:
                        team["preemption"] = preemption
                    teams.append(team)
                    for wsi, wset in enumerate(_list(qset.get("workloadsSets"), "workloadsSets")):
                        interval = _int(wset.get("creationIntervalMs"), "creationIntervalMs")
                        templates = _list(wset.get("workloads"), "workloadsSets[].workloads")
                        step = 0
                        for si in range(_int(wset.get("count"), "workloadsSets[].count")):
                            for ti, t in enumerate(templates):
                                step += 1  # the generator waits the interval before each
                                workloads.append(
                                    Workload(
                                        namespace=name,
                                        name=f"{t['className']}-{wsi}-{si}-{ti}",
                                        class_name=str(t["className"]),
                                        submit_ms=step * interval,
                                        runtime_ms=_int(t.get("runtimeMs"), "runtimeMs"),
                                        priority=int(t.get("priority") or 0),
                                        pods=_int(t.get("podCount") or 1, "podCount", minimum=1),
                                        request=str(t.get("request")),
                                        topology=topology_request(t) if topology else (),
                                    )
                                )
    if not queues:
        raise HarnessConfigError("cohorts: no ClusterQueue")
    order = sorted(range(len(workloads)), key=lambda i: (workloads[i].submit_ms, i))
    workloads = [workloads[i] for i in order]
    jobs = [_job(w, w.namespace) for w in workloads]
    nodes = _nodes(generator, queues, workloads)
    flavor_entry: dict[str, Any] = {"name": flavor, "nodes": nodes}
    # Memory: covered because the project requires it of every queue (a pod that asks for
    # memory is otherwise never admitted); the jobs ask for none, so its quota, the nodes'
    # memory shared out, never decides anything.
    memory = parse_quantity(nodes["resources"]["memory"]) * nodes["count"] / len(queues)
    memory_gi = max(1, math.floor(memory / 2**30))
    for team in teams:
        team["resourceGroups"][0]["flavors"][0]["resources"]["memory"] = {
            "nominalQuota": f"{memory_gi}Gi"
        }
    harness_topology = generator.get("topology")
    if harness_topology is not None and flavor_cfg.get("nodeLabel"):
        flavor_entry["nodeLabels"] = {str(flavor_cfg["nodeLabel"]): NODE_LABEL_VALUE}
    kept = topology and harness_topology is not None
    config: dict[str, Any] = {}
    if topology and harness_topology is not None:
        config["gpu-queues:topologies"] = [_topology(harness_topology, flavor_entry)]
    config |= {
        "gpu-queues:flavors": [flavor_entry],
        "gpu-queues:cohorts": [{"name": c} for c in cohorts],
        "gpu-queues:priorityClasses": [
            {"name": priority_class(p), "value": p} for p in sorted({w.priority for w in workloads})
        ],
        "gpu-queues:teams": teams,
    }
    return Converted({"config": config}, jobs, queues, workloads, kept)
