"""What a rehearsal submits for each team and what Kueue and the scheduler must answer:
pure functions of the stack config, so they are unit-tested without a cluster.

Per team, from its own quotas and the flavors' node shapes:
- a job that fits the team's nominal quota, its pods each within one node of the flavor
  (several pods when the quota spans several nodes), with the flavor Kueue must pick;
- a job needing more than the team may ever use, with the ceiling Kueue must name
  (`ceilings`: Kueue v0.18's potentialAvailable on an empty cluster: nominal quota plus what
  the team may borrow from its cohort, within its borrowing limit);
- when the team's quota exceeds one node, a single pod of that size: Kueue admits it (the
  quota has room) but no node can hold it.

The quota sums come from gpu_queues.kueue.capacity.quota_totals, the validation core's one sum.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from gpu_queues.config import render
from gpu_queues.config.model import Flavor, StackConfig, Team, Toleration
from gpu_queues.kueue.capacity import encode_capacity, quota_totals
from gpu_queues.kueue.quantity import parse_quantity

# Requested by every pod, system pods included: a job's pods take at most half a node of
# these, so a system pod on the node (Kueue's controller here, DaemonSets on a cluster) never
# decides whether they fit. Extended resources (GPUs) are used by nobody else.
SHARED_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
POD_COUNT = "pods"  # Kueue counts a covered `pods` resource itself: one per pod
POD_SET = "main"  # the pod set name Kueue gives a batch/v1 Job
MEBI = 2**20
GIBI = 2**30

FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class Quota:
    nominal: Fraction
    borrowing_limit: Fraction | None = None
    lending_limit: Fraction | None = None

    def local(self) -> Fraction:
        """Kueue's localQuota: the part of nominal never lent to the cohort."""
        if self.lending_limit is None:
            return Fraction(0)
        return max(Fraction(0), self.nominal - self.lending_limit)


def team_quotas(team: Team) -> dict[FlavorResource, Quota]:
    quotas: dict[FlavorResource, Quota] = {}
    for group in team.resource_groups:
        for flavor in group.flavors:
            for resource, q in flavor.resources.items():
                quotas[flavor.name, resource] = Quota(
                    parse_quantity(q.nominal_quota),
                    None if q.borrowing_limit is None else parse_quantity(q.borrowing_limit),
                    None if q.lending_limit is None else parse_quantity(q.lending_limit),
                )
    return quotas


def ceilings(config: StackConfig) -> dict[str, dict[FlavorResource, Fraction]]:
    """Per ClusterQueue: the most it may ever use of each resource in each flavor (Kueue's
    potentialAvailable with nothing running). Without a cohort, its nominal quota. In a cohort:
    its local quota plus everything the cohort's members lend (nominal quota beyond their local
    quota; the cohort holds no quota of its own), capped at nominal + borrowingLimit."""
    members: dict[str, list[Team]] = {}
    for team in config.teams:
        if team.cohort is not None:
            members.setdefault(team.cohort, []).append(team)
    lent: dict[str, dict[FlavorResource, Fraction]] = {}
    for cohort, teams in members.items():
        totals = quota_totals(render.cluster_queue(t) for t in teams)
        pool = {key: totals.total(key) for key in totals.holders}
        for t in teams:
            for key, quota in team_quotas(t).items():
                pool[key] = pool.get(key, Fraction(0)) - quota.local()
        lent[cohort] = pool
    out: dict[str, dict[FlavorResource, Fraction]] = {}
    for team in config.teams:
        mine: dict[FlavorResource, Fraction] = {}
        for key, quota in team_quotas(team).items():
            if team.cohort is None:
                mine[key] = quota.nominal
                continue
            ceiling = quota.local() + lent[team.cohort].get(key, Fraction(0))
            if quota.borrowing_limit is not None:
                ceiling = min(quota.nominal + quota.borrowing_limit, ceiling)
            mine[key] = ceiling
        out[team.cluster_queue] = mine
    return out


# --- job shapes -------------------------------------------------------------------------


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


def _smallest_node(flavors: Iterable[Flavor | None], resource: str) -> Fraction | None:
    """The smallest amount of the resource one node offers among flavors that have it."""
    sizes = [node_resources(f).get(resource, Fraction(0)) for f in flavors]
    present = [s for s in sizes if s > 0]
    return min(present) if present else None


def _round_down(resource: str, amount: Fraction) -> Fraction:
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


@dataclass(frozen=True)
class FitsJob:
    shape: JobShape
    flavors: dict[int, str]
    """Group index -> the flavor Kueue must assign (groups the job asks nothing of: absent)."""
    targets: dict[int, str]
    """Group index -> the flavor the job was sized from (its first flavor with nominal quota,
    or the one the job selects)."""
    selector: dict[str, str] = field(default_factory=dict)
    """The pods' nodeSelector: a flavor's node labels, to reach a flavor that is not first."""


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


def _size(
    team_groups: list[Group],
    quotas: Mapping[FlavorResource, Quota],
    targets: Mapping[int, str],
    nodes: list[dict[str, Fraction]],
) -> JobShape:
    """Pods within the targets' nominal quotas, each within one of the nodes that hold every
    key resource the job asks for (extended keys: all of the quota, in as many pods as it
    takes; shared resources: at most half such a node per pod)."""
    keys = [g.key for g in team_groups if g.index in targets and is_extended(g.key)]
    # Nodes holding every key; when none does, the pods cannot run anyway (the row says why),
    # and the other resources are still sized for the nodes they would land on.
    useful = [n for n in nodes if all(n.get(k, Fraction(0)) > 0 for k in keys)] or nodes

    def cap(resource: str) -> Fraction | None:
        sizes = [n[resource] for n in useful if n.get(resource, Fraction(0)) > 0]
        if not sizes:
            return None  # no node has it: the pods stay unschedulable, which the row reports
        return min(sizes) if is_extended(resource) else min(sizes) / 2

    pods = 1
    for g in team_groups:
        limit = cap(g.key) if g.index in targets else None
        if limit is None:
            continue
        wanted = math.ceil(quotas[targets[g.index], g.key].nominal / limit)
        if not is_extended(g.key):
            # Half a node each: one pod per node, so a system pod on one never decides it.
            wanted = min(wanted, len(useful))
        pods = max(pods, wanted)
    counting = [g for g in team_groups if POD_COUNT in g.covered and g.index in targets]
    if counting:
        most = min(quotas[targets[g.index], POD_COUNT].nominal for g in counting)
        pods = max(1, min(pods, math.floor(most)))
    requests: dict[str, Fraction] = {}
    for g in team_groups:
        if g.index not in targets:
            continue
        for resource in g.covered:
            nominal = quotas[targets[g.index], resource].nominal
            if resource == POD_COUNT or nominal <= 0:
                continue
            amount = nominal / pods
            limit = cap(resource)
            amount = _round_down(resource, amount if limit is None else min(amount, limit))
            if amount > 0:
                requests[resource] = amount
    return JobShape(pods, requests, bool(counting))


def _fits_job(
    team: Team,
    flavors: Mapping[str, Flavor],
    ceiling: Mapping[FlavorResource, Fraction],
    chosen: Mapping[int, str],
    selector: Mapping[str, str],
) -> FitsJob:
    quotas = team_quotas(team)
    team_groups = groups(team)
    targets: dict[int, str] = {}
    for g in team_groups:
        target = chosen.get(g.index) or next(
            (f for f in g.flavors if quotas[f, g.key].nominal > 0), None
        )
        if target is not None:
            targets[g.index] = target
    # The pods must fit the nodes of the flavors Kueue assigns, which depend on their size
    # (an earlier flavor may have room to borrow): size, assign, resize until it settles.
    assigned = dict(targets)
    shape = _size(team_groups, quotas, targets, landing_nodes(flavors, assigned.values(), selector))
    for _ in range(len(flavors) + 1):
        found = {
            g.index: f
            for g in team_groups
            if (f := first_fit(g, shape.totals(), ceiling, flavors, selector)) is not None
        }
        if found == assigned:
            break
        assigned = found
        nodes = landing_nodes(flavors, assigned.values(), selector)
        shape = _size(team_groups, quotas, targets, nodes)
    return FitsJob(shape, assigned, targets, dict(selector))


def fits_jobs(
    team: Team, flavors: Mapping[str, Flavor], ceiling: Mapping[FlavorResource, Fraction]
) -> tuple[list[FitsJob], dict[str, str]]:
    """Jobs within the team's nominal quota, and the flavors no job can be sent to (why).

    The first job is sized, per group, from the first flavor with nominal quota of its key
    resource: all of that quota for an extended key (split into pods of at most one node), at
    most half a node per pod of shared resources. Kueue tries flavors in order, so each other
    flavor of the key resource's group gets a job of its own that selects it by its node
    labels, as users send jobs to a flavor, when that makes Kueue pick it."""
    first = _fits_job(team, flavors, ceiling, {}, {})
    jobs, unreachable = [first], {}
    g = held_group(team)
    quotas = team_quotas(team)
    for name in g.flavors:
        if name in (first.targets.get(g.index), first.flavors.get(g.index)):
            continue
        if quotas[name, g.key].nominal <= 0:
            continue
        labels = flavors[name].node_labels if name in flavors else None
        if not labels:
            unreachable[name] = (
                "it has no node labels to select it by, and Kueue tries the flavors before it first"
            )
            continue
        job = _fits_job(team, flavors, ceiling, {g.index: name}, dict(labels))
        taken = job.flavors.get(g.index)
        if taken != name:
            unreachable[name] = (
                f"a job selecting its node labels would be charged to {taken}, which Kueue "
                "tries first and whose node labels do not exclude it (Kueue only compares the "
                "label keys a flavor has)"
                if taken
                else "a job selecting its node labels fits no flavor"
            )
            continue
        jobs.append(job)
    return jobs, unreachable


def held_group(team: Team) -> Group:
    """The group the over-quota job asks of: the first with an extended resource, else the first."""
    team_groups = groups(team)
    return next((g for g in team_groups if is_extended(g.key)), team_groups[0])


UNIT = {"cpu": Fraction(1), "memory": Fraction(GIBI), "ephemeral-storage": Fraction(GIBI)}


@dataclass(frozen=True)
class HeldJob:
    shape: JobShape
    group: Group
    ceilings: dict[str, Fraction]
    """Flavor -> the most of the group's key resource the team may use there."""

    @property
    def request(self) -> Fraction:
        return self.shape.totals()[self.group.key]

    @property
    def excess(self) -> Fraction:
        """How much more it asks than the team may use in its roomiest flavor."""
        return self.request - max(self.ceilings.values())


def _round_up(resource: str, amount: Fraction) -> Fraction:
    """The smallest requestable amount at least `amount` (see _round_down)."""
    if is_extended(resource):
        return Fraction(math.ceil(amount))
    if resource == "cpu":
        return Fraction(math.ceil(amount * 1000), 1000)
    if amount >= MEBI:
        return Fraction(math.ceil(amount / MEBI) * MEBI)
    return Fraction(math.ceil(amount))


def held_job(
    team: Team, flavors: Mapping[str, Flavor], ceiling: Mapping[FlavorResource, Fraction]
) -> HeldJob:
    """A job asking only for the key resource, a step more than the team may use in any
    flavor of its group, in pods of at most one node: Kueue must hold it, naming each
    flavor's ceiling. Asking for nothing else keeps Kueue's message to that one resource."""
    g = held_group(team)
    limits = {f: ceiling[f, g.key] for f in g.flavors}
    wanted = max(limits.values()) + UNIT.get(g.key, Fraction(1))
    node = _smallest_node((flavors.get(f) for f in g.flavors), g.key)
    pods = 1 if node is None else math.ceil(wanted / node)
    return HeldJob(JobShape(pods, {g.key: _round_up(g.key, wanted / pods)}), g, limits)


@dataclass(frozen=True)
class TooBigJob:
    shape: JobShape
    flavor: str
    """Where Kueue admits it."""
    largest_node: Fraction


def too_big_job(
    team: Team, flavors: Mapping[str, Flavor], ceiling: Mapping[FlavorResource, Fraction]
) -> TooBigJob | None:
    """When the team's nominal quota of its key resource in a flavor is more than any node the
    pod may land on holds: one pod asking for all of it. The quota has room, so Kueue admits
    it; no node can hold it, so the scheduler never places it. None when a node could."""
    g = held_group(team)
    quotas = team_quotas(team)
    target = next((f for f in g.flavors if quotas[f, g.key].nominal > 0), None)
    if target is None:
        return None
    shape = JobShape(1, {g.key: quotas[target, g.key].nominal})
    admitted_in = first_fit(g, shape.totals(), ceiling)
    if admitted_in is None:
        return None
    sizes = [
        n[g.key] for n in landing_nodes(flavors, [admitted_in], {}) if n.get(g.key, Fraction(0)) > 0
    ]
    if not sizes or shape.requests[g.key] <= max(sizes):
        return None
    return TooBigJob(shape, admitted_in, max(sizes))


@dataclass(frozen=True)
class TeamPlan:
    team: Team
    groups: list[Group]
    quotas: dict[FlavorResource, Quota]
    ceilings: dict[FlavorResource, Fraction]
    fits: list[FitsJob]
    unreachable: dict[str, str]
    """Flavors with nominal quota that no job can be sent to, and why."""
    held: HeldJob
    too_big: TooBigJob | None
    other_namespaces: list[str] = field(default_factory=list)
    """Namespaces of the other teams (where this team's submitters may not create Jobs)."""


def plan(config: StackConfig) -> list[TeamPlan]:
    flavors = {f.name: f for f in config.flavors}
    limits = ceilings(config)
    plans = []
    for team in config.teams:
        ceiling = limits[team.cluster_queue]
        others = sorted({t.namespace for t in config.teams if t.namespace != team.namespace})
        fits, unreachable = fits_jobs(team, flavors, ceiling)
        plans.append(
            TeamPlan(
                team,
                groups(team),
                team_quotas(team),
                ceiling,
                fits,
                unreachable,
                held_job(team, flavors, ceiling),
                too_big_job(team, flavors, ceiling),
                others,
            )
        )
    return plans
