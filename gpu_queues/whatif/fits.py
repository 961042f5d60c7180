"""Workloads that can never run on the stack, found before the replay: a pod set that asks
for more of a resource than its ClusterQueue could ever hold in any flavor that covers it
(Kueue's "maximum capacity"), or whose one pod is larger than every node of every such
flavor. The replay still runs them, as the cluster would hold them (a StrictFIFO queue stays
behind such a head); this says why they wait for ever, before the replay and in Kueue's terms.

The ceiling is Kueue's own (pkg/cache/scheduler/resource_node.go, `potentialAvailable`, of
the pinned releases), computed from the objects the stack renders:
- a node's subtree quota: its own nominal quota, plus each child's subtree quota up to that
  child's lendingLimit;
- a node's local quota: what its lendingLimit keeps from its parent (subtree quota minus
  lendingLimit, at least 0; none without a lendingLimit);
- a ClusterQueue's maximum capacity: at the root, its subtree quota; below, its local quota
  plus its parent's maximum capacity, and at most its subtree quota plus its borrowingLimit.

Only what must hold is said: a pod set is reported when no flavor its ClusterQueue lists for
a resource could ever take it, whatever else is running; flavors Kueue would pass over for
other reasons (node labels, taints) are still counted as open, so nothing is reported that
Kueue might admit. Node fit counts a node's allocatable, as kube-scheduler does, with nothing
else on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpu_queues.config.model import StackConfig
from gpu_queues.config.render import kueue_objects
from gpu_queues.kueue.quantity import QuantityError, format_quantity, parse_quantity
from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.gpus import pod_requests
from gpu_queues.whatif.mix import Entry
from gpu_queues.whatif.nodes import nodes as declared_nodes
from gpu_queues.whatif.podsets import PodSet, pod_sets

FLAVOR_ANNOTATION = "sandbox.gpu-queues.dev/flavor"
"""The annotation gpu_queues.whatif.nodes puts on each node it declares: its flavor."""

Quotas = dict[tuple[str, str], tuple[Fraction, Fraction | None, Fraction | None]]
"""(flavor, resource) -> (nominalQuota, borrowingLimit, lendingLimit)."""


def _amount(value: Any) -> Fraction | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _quotas(spec: Mapping[str, Any]) -> tuple[Quotas, dict[str, list[str]]]:
    """A ClusterQueue's or Cohort's quotas, and (ClusterQueues) the flavors that cover each
    resource, in order."""
    quotas: Quotas = {}
    covering: dict[str, list[str]] = {}
    for group in as_list(spec.get("resourceGroups")):
        for flavor in as_list(as_dict(group).get("flavors")):
            name = str(as_dict(flavor).get("name"))
            for r in as_list(as_dict(flavor).get("resources")):
                r = as_dict(r)
                resource = str(r.get("name"))
                nominal = _amount(r.get("nominalQuota")) or Fraction(0)
                borrowing = _amount(r["borrowingLimit"]) if "borrowingLimit" in r else None
                lending = _amount(r["lendingLimit"]) if "lendingLimit" in r else None
                quotas[(name, resource)] = (nominal, borrowing, lending)
                covering.setdefault(resource, []).append(name)
    return quotas, covering


@dataclass
class _Node:
    parent: str | None
    quotas: Quotas


class Ceilings:
    """Kueue's maximum capacity of each ClusterQueue per flavor and resource, and the largest
    node of each flavor, for a stack's rendered objects and declared nodes."""

    def __init__(self, objects: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]]):
        self._nodes: dict[str, _Node] = {}  # "cq/<name>" and "cohort/<name>"
        self._children: dict[str, list[str]] = {}
        self.covering: dict[str, dict[str, list[str]]] = {}
        for obj in objects:
            kind, name = obj.get("kind"), str(as_dict(obj.get("metadata")).get("name"))
            spec = as_dict(obj.get("spec"))
            if kind == "ClusterQueue":
                quotas, covering = _quotas(spec)
                parent = spec.get("cohortName")
                self._add(f"cq/{name}", parent, quotas)
                self.covering[name] = covering
            elif kind == "Cohort":
                self._add(f"cohort/{name}", spec.get("parentName"), _quotas(spec)[0])
        self.node_shapes: dict[str, list[dict[str, Fraction]]] = {}
        for node in nodes:
            meta = as_dict(node.get("metadata"))
            flavor = as_dict(meta.get("annotations")).get(FLAVOR_ANNOTATION)
            if isinstance(flavor, str):
                allocatable = as_dict(as_dict(node.get("status")).get("allocatable"))
                shape = {str(r): a for r, v in allocatable.items() if (a := _amount(v)) is not None}
                self.node_shapes.setdefault(flavor, []).append(shape)
        self._subtree: dict[tuple[str, tuple[str, str]], Fraction] = {}
        # Both asked again for every pod set of a mix, of the few ClusterQueues and pod shapes
        # it has: kept per Ceilings, which is the stack's and the nodes' at one time.
        self._potential: dict[tuple[str, tuple[str, str]], Fraction] = {}
        self._too_big_of: dict[tuple[str, frozenset[tuple[str, Fraction]]], bool] = {}

    def _add(self, key: str, parent: Any, quotas: Quotas) -> None:
        cohort = f"cohort/{parent}" if isinstance(parent, str) and parent else None
        self._nodes[key] = _Node(cohort, quotas)
        if cohort is not None:
            self._children.setdefault(cohort, []).append(key)
            # A Cohort only named by its children exists in Kueue all the same, without quota.
            self._nodes.setdefault(cohort, _Node(None, {}))

    def subtree(self, key: str, fr: tuple[str, str]) -> Fraction:
        """Kueue's SubtreeQuota: own nominal, plus each child's up to its lendingLimit."""
        if (key, fr) not in self._subtree:
            total = self._nodes[key].quotas.get(fr, (Fraction(0), None, None))[0]
            for child in self._children.get(key, []):
                below = self.subtree(child, fr)
                lending = self._nodes[child].quotas.get(fr, (0, None, None))[2]
                total += below if lending is None else min(below, lending)
            self._subtree[(key, fr)] = total
        return self._subtree[(key, fr)]

    def _local(self, key: str, fr: tuple[str, str]) -> Fraction:
        lending = self._nodes[key].quotas.get(fr, (0, None, None))[2]
        return Fraction(0) if lending is None else max(Fraction(0), self.subtree(key, fr) - lending)

    def potential(self, key: str, fr: tuple[str, str]) -> Fraction:
        """Kueue's potentialAvailable: the most the node could hold of fr with nothing used."""
        if (key, fr) in self._potential:
            return self._potential[(key, fr)]
        node = self._nodes[key]
        if node.parent is None or node.parent not in self._nodes:
            avail = self.subtree(key, fr)
        else:
            avail = self._local(key, fr) + self.potential(node.parent, fr)
            borrowing = node.quotas.get(fr, (0, None, None))[1]
            if borrowing is not None:
                avail = min(avail, self.subtree(key, fr) + borrowing)
        self._potential[(key, fr)] = avail
        return avail

    def never(self, entry: Entry) -> str | None:
        """Why the entry can never run on its ClusterQueue (None when it might)."""
        cq = entry.cluster_queue
        if entry.status != "ok" or cq is None or cq not in self.covering:
            return None
        for ps in pod_sets(entry.kind, entry.manifest):
            why = self._pod_set_never(cq, ps)
            if why:
                return f"{entry.namespace}/{entry.name} ({entry.kind}) can never run: {why}"
        return None

    def _pod_set_never(self, cq: str, ps: PodSet) -> str | None:
        one = {r: v for r, v in pod_requests(ps.spec).items() if v > 0}
        covering = self.covering[cq]
        if "pods" in covering:  # Kueue counts a pod as 1 `pods` when the ClusterQueue covers it
            one["pods"] = Fraction(1)
        for resource, per_pod in sorted(one.items()):
            flavors = covering.get(resource)
            if not flavors:
                return (
                    f"pod set {ps.name} asks for {resource}, which ClusterQueue {cq} does not cover"
                )
            total = per_pod * ps.count
            ceilings = {f: self.potential(f"cq/{cq}", (f, resource)) for f in flavors}
            if all(total > c for c in ceilings.values()):
                held = ", ".join(f"{f}: {format_quantity(c)}" for f, c in ceilings.items())
                return (
                    f"pod set {ps.name} asks for {format_quantity(total)} {resource} "
                    f"({ps.count} x {format_quantity(per_pod)}), more than ClusterQueue {cq} can "
                    f"ever hold in any flavor (Kueue's maximum capacity: {held})"
                )
        if one and all(self._too_big(f, one) for f in self._flavors_of(cq, one)):
            return (
                f"a pod of pod set {ps.name} ({_ask(one)}) fits no node of the flavors "
                f"ClusterQueue {cq} has for it ({', '.join(self._flavors_of(cq, one))})"
            )
        return None

    def _flavors_of(self, cq: str, one: Mapping[str, Fraction]) -> list[str]:
        covering = self.covering[cq]
        return list(dict.fromkeys(f for r in one for f in covering.get(r, [])))

    def _too_big(self, flavor: str, one: Mapping[str, Fraction]) -> bool:
        """The flavor declares nodes and none of them could hold the pod alone."""
        key = (flavor, frozenset(one.items()))
        if key not in self._too_big_of:
            # capacity without nodes: kube-scheduler's fit is not known here
            shapes = self.node_shapes.get(flavor) or []
            self._too_big_of[key] = bool(shapes) and all(
                any(v > shape.get(r, Fraction(0)) for r, v in one.items()) for shape in shapes
            )
        return self._too_big_of[key]


def _ask(one: Mapping[str, Fraction]) -> str:
    return ", ".join(f"{r} {format_quantity(v)}" for r, v in sorted(one.items()))


def never_fits(
    config: StackConfig,
    entries: Iterable[Entry],
    nodes: list[dict[str, Any]] | None = None,
    objects: Iterable[Mapping[str, Any]] | None = None,
) -> list[str]:
    """A line for each entry that can never run on the stack, in mix order; `nodes`: another
    cluster's nodes than the stack declares (the cross-check's); `objects`: the stack's objects
    when the caller has rendered them already (the fast engine's input, whose Namespaces
    Ceilings passes over), so they are not rendered twice."""
    ceilings = Ceilings(
        kueue_objects(config) if objects is None else objects,
        declared_nodes(config) if nodes is None else nodes,
    )
    return [why for e in entries if (why := ceilings.never(e))]
