"""How a rehearsal sizes its jobs: a team's resource groups and the resource each is sized by,
a job's shape (pods and per-pod requests), what a flavor's nodes offer, quantities rounded to
what a pod can request, and where Kueue and the scheduler put a job on an empty cluster
(`first_fit`, `landing_nodes`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from gpu_queues.config.model import Flavor, Team, Toleration
from gpu_queues.kueue.capacity import encode_capacity
from gpu_queues.kueue.quantity import parse_quantity
from sandbox.rehearse.quotas import FlavorResource

# Requested by every pod, system pods included: a job's pods take at most half a node of
# these, so a system pod on the node (Kueue's controller here, DaemonSets on a cluster) never
# decides whether they fit. Extended resources (GPUs) are used by nobody else.
SHARED_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
POD_COUNT = "pods"  # Kueue counts a covered `pods` resource itself: one per pod
POD_SET = "main"  # the pod set name Kueue gives a batch/v1 Job
MEBI = 2**20
GIBI = 2**30


@dataclass(frozen=True)
class Group:
    """A resource group of a team: its covered resources, flavors in Kueue's order, and the
    resource the rehearsal sizes its jobs by (the first extended one, such as a GPU)."""

    index: int
    covered: tuple[str, ...]
    flavors: tuple[str, ...]
    key: str


def key_resource(covered: Iterable[str]) -> str:
    names = [r for r in covered if r != POD_COUNT]
    extended = [r for r in names if r not in SHARED_RESOURCES]
    if extended:
        return extended[0]
    return "cpu" if "cpu" in names else names[0]


def groups(team: Team) -> list[Group]:
    return [
        Group(
            i,
            tuple(g.covered_resources),
            tuple(f.name for f in g.flavors),
            key_resource(g.covered_resources),
        )
        for i, g in enumerate(team.resource_groups)
    ]


def is_extended(resource: str) -> bool:
    return resource not in SHARED_RESOURCES and resource != POD_COUNT


@dataclass(frozen=True)
class JobShape:
    pods: int
    requests: dict[str, Fraction]
    """Per pod, as the container requests it (extended resources as limits too)."""
    counts_pods: bool = False
    """The team covers `pods`: Kueue counts one per pod against it."""

    def totals(self) -> dict[str, Fraction]:
        out = {r: v * self.pods for r, v in self.requests.items()}
        if self.counts_pods:
            out[POD_COUNT] = Fraction(self.pods)
        return out

    def quantities(self) -> dict[str, str]:
        """The per-pod requests as exact Kubernetes quantities."""
        shown: dict[str, str] = json.loads(encode_capacity(self.requests))
        return shown

    def describe(self) -> str:
        per = ", ".join(f"{r} {q}" for r, q in self.quantities().items()) or "nothing"
        return f"{self.pods} pod{'s' if self.pods != 1 else ''} x ({per})"


def node_resources(flavor: Flavor | None) -> dict[str, Fraction]:
    """What one node of the flavor offers (nodes are identical; {} with no hardware)."""
    nodes = flavor.node_list() if flavor is not None else []
    if not nodes:
        return {}
    return {r: parse_quantity(v) for r, v in nodes[0].resources.items()}


def node_count(flavor: Flavor | None) -> int:
    return len(flavor.node_list()) if flavor is not None else 0


def smallest_node(flavors: Iterable[Flavor | None], resource: str) -> Fraction | None:
    """The smallest amount of the resource one node offers among flavors that have it."""
    sizes = [node_resources(f).get(resource, Fraction(0)) for f in flavors]
    present = [s for s in sizes if s > 0]
    return min(present) if present else None


def round_down(resource: str, amount: Fraction) -> Fraction:
    """To what a pod can request: whole units for extended resources, millicores for cpu,
    mebibytes for byte sizes (bytes below one mebibyte)."""
    if is_extended(resource):
        return Fraction(math.floor(amount))
    if resource == "cpu":
        return Fraction(math.floor(amount * 1000), 1000)
    if amount >= MEBI:
        return Fraction(math.floor(amount / MEBI) * MEBI)
    return Fraction(math.floor(amount))


def selects(flavor: Flavor | None, selector: Mapping[str, str]) -> bool:
    """Whether Kueue may assign the flavor to pods with this nodeSelector: only the selector's
    keys that are among the flavor's node label keys count, and those must match."""
    labels = (flavor.node_labels if flavor is not None else None) or {}
    return all(selector[k] == v for k, v in labels.items() if k in selector)


def first_fit(
    group: Group,
    totals: Mapping[str, Fraction],
    ceiling: Mapping[FlavorResource, Fraction],
    flavors: Mapping[str, Flavor] | None = None,
    selector: Mapping[str, str] | None = None,
) -> str | None:
    """The flavor Kueue assigns a job's resources of this group on an empty cluster: the first
    in order that the pods' nodeSelector allows and where every request fits what the queue
    may use (borrowing counts: the default flavorFungibility, whenCanBorrow MayStopSearch,
    stops at a flavor it can borrow in). Taints are not modelled: a flavor whose taints its
    tolerations do not cover is Kueue's to refuse, and the rehearsal reports what it said."""
    asked = {r: v for r, v in totals.items() if r in group.covered and v > 0}
    if not asked:
        return None
    for flavor in group.flavors:
        if selector and not selects((flavors or {}).get(flavor), selector):
            continue
        if all(v <= ceiling.get((flavor, r), Fraction(0)) for r, v in asked.items()):
            return flavor
    return None


def tolerates(tolerations: Iterable[Toleration], taint: Mapping[str, str]) -> bool:
    """Whether a pod with these tolerations may be placed on a node with this taint."""
    if taint.get("effect") == "PreferNoSchedule":
        return True
    for t in tolerations:
        if t.effect is not None and t.effect != taint.get("effect"):
            continue
        if t.key is None:
            if t.operator == "Exists":
                return True
            continue
        if t.key != taint.get("key"):
            continue
        if t.operator == "Exists" or (t.value or "") == taint.get("value", ""):
            return True
    return False


def landing_nodes(
    flavors: Mapping[str, Flavor], assigned: Iterable[str], selector: Mapping[str, str]
) -> list[dict[str, Fraction]]:
    """What each node offers on which a pod admitted to these flavors may run: Kueue gives
    the pod every assigned flavor's node labels (as nodeSelector) and tolerations."""
    labels = dict(selector)
    tolerations: list[Toleration] = []
    for name in assigned:
        flavor = flavors.get(name)
        if flavor is not None:
            labels.update(flavor.node_labels or {})
            tolerations += flavor.tolerations or []
    return [
        {r: parse_quantity(v) for r, v in n.resources.items()}
        for f in flavors.values()
        for n in f.node_list()
        if all(n.labels.get(k) == v for k, v in labels.items())
        and all(tolerates(tolerations, t) for t in n.taints)
    ]


def round_up(resource: str, amount: Fraction) -> Fraction:
    """The smallest requestable amount at least `amount` (see round_down)."""
    if is_extended(resource):
        return Fraction(math.ceil(amount))
    if resource == "cpu":
        return Fraction(math.ceil(amount * 1000), 1000)
    if amount >= MEBI:
        return Fraction(math.ceil(amount / MEBI) * MEBI)
    return Fraction(math.ceil(amount))
