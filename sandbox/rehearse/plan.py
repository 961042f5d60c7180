"""What a rehearsal submits for each team and what Kueue and the scheduler must answer:
pure functions of the stack config, so they are unit-tested without a cluster.

Per team, from its own quotas and the flavors' node shapes:
- a job that fits the team's nominal quota, its pods each within one node of the flavor
  (several pods when the quota spans several nodes), with the flavor Kueue must pick;
- a job needing more than the team may ever use, with the ceiling Kueue must name
  (`ceilings`: Kueue v0.18's potentialAvailable on an empty cluster: what the team keeps plus
  what it may borrow up its cohort tree, within each borrowing limit on the way);
- when the team's quota exceeds one node, a single pod of that size: Kueue admits it (the
  quota has room) but no node can hold it.

The quotas and ceilings are sandbox/rehearse/quotas.py's (Kueue's arithmetic over the cohort
tree: the cohorts' own quota, what each member lends up and keeps, the borrowing limits on the
way up); job shapes, node sizes and where Kueue puts a job are sandbox/rehearse/sizing.py's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from gpu_queues.config.model import Flavor, StackConfig, Team
from sandbox.rehearse.quotas import FlavorResource, Quota, ceilings, team_quotas
from sandbox.rehearse.sizing import (
    GIBI,
    POD_COUNT,
    Group,
    JobShape,
    first_fit,
    groups,
    is_extended,
    landing_nodes,
    round_down,
    round_up,
    smallest_node,
)


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
            amount = round_down(resource, amount if limit is None else min(amount, limit))
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


def held_job(
    team: Team, flavors: Mapping[str, Flavor], ceiling: Mapping[FlavorResource, Fraction]
) -> HeldJob:
    """A job asking only for the key resource, a step more than the team may use in any
    flavor of its group, in pods of at most one node: Kueue must hold it, naming each
    flavor's ceiling. Asking for nothing else keeps Kueue's message to that one resource."""
    g = held_group(team)
    limits = {f: ceiling[f, g.key] for f in g.flavors}
    wanted = max(limits.values()) + UNIT.get(g.key, Fraction(1))
    node = smallest_node((flavors.get(f) for f in g.flavors), g.key)
    pods = 1 if node is None else math.ceil(wanted / node)
    return HeldJob(JobShape(pods, {g.key: round_up(g.key, wanted / pods)}), g, limits)


@dataclass(frozen=True)
class TooBigJob:
    shape: JobShape
    flavor: str
    """Where Kueue admits it."""
    largest_node: Fraction
    topology: str | None = None
    """The flavor's topology: then Kueue places the pod before it admits, so it holds the job
    ("doesn't allow to fit") where a flavor without one admits what no node can run."""


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
    flavor = flavors.get(admitted_in)
    topology = flavor.topology_name if flavor is not None else None
    return TooBigJob(shape, admitted_in, max(sizes), topology)


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
    other_queues: list[tuple[str, str]] = field(default_factory=list)
    """The team's LocalQueues besides its default, as (name, namespace): a job within quota
    is sent through each, in its namespace."""


def plan(config: StackConfig) -> list[TeamPlan]:
    flavors = {f.name: f for f in config.flavors}
    limits = ceilings(config)
    plans = []
    for team in config.teams:
        ceiling = limits[team.cluster_queue]
        mine = set(team.all_namespaces)
        others = sorted({n for t in config.teams for n in t.all_namespaces} - mine)
        default = (team.local_queue, team.namespace)
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
                [q for q in team.queues if q != default],
            )
        )
    return plans
