"""A team's quotas per flavor and resource, and the most each ClusterQueue may ever use
(`ceilings`: Kueue v0.18's potentialAvailable on an empty cluster, over the cohort tree)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from gpu_queues.config.model import ResourceGroup, StackConfig, Team
from gpu_queues.kueue.quantity import parse_quantity

FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class Quota:
    nominal: Fraction
    borrowing_limit: Fraction | None = None
    lending_limit: Fraction | None = None


def quotas_of(resource_groups: Iterable[ResourceGroup] | None) -> dict[FlavorResource, Quota]:
    """The quotas of a team's or a cohort's own resource groups, per flavor and resource."""
    quotas: dict[FlavorResource, Quota] = {}
    for group in resource_groups or []:
        for flavor in group.flavors:
            for resource, q in flavor.resources.items():
                quotas[flavor.name, resource] = Quota(
                    parse_quantity(q.nominal_quota),
                    None if q.borrowing_limit is None else parse_quantity(q.borrowing_limit),
                    None if q.lending_limit is None else parse_quantity(q.lending_limit),
                )
    return quotas


def team_quotas(team: Team) -> dict[FlavorResource, Quota]:
    return quotas_of(team.resource_groups)


@dataclass
class _Node:
    """A node of Kueue's resource tree: a Cohort, or a ClusterQueue (a leaf)."""

    parent: str | None
    quotas: dict[FlavorResource, Quota]
    children: list[str] = field(default_factory=list)


class _Tree:
    """Kueue's quota arithmetic on a cohort tree (pkg/cache, resource nodes), with nothing
    running: a node's subtree quota is its own nominal quota plus what each child stores in it
    (the child's subtree quota above what the child keeps, its local quota); a node keeps
    (`local`) its subtree quota above its lending limit, nothing without one; the most a node
    may use (`potential`) is what it keeps plus what its parent may use, capped at its subtree
    quota plus its borrowing limit; a root may use its whole subtree quota."""

    def __init__(self, nodes: dict[str, _Node]) -> None:
        self.nodes = nodes

    def subtree(self, node: str, key: FlavorResource) -> Fraction:
        n = self.nodes[node]
        own = n.quotas[key].nominal if key in n.quotas else Fraction(0)
        return own + sum(
            (self.subtree(c, key) - self.local(c, key) for c in n.children), Fraction(0)
        )

    def local(self, node: str, key: FlavorResource) -> Fraction:
        quota = self.nodes[node].quotas.get(key)
        if quota is None or quota.lending_limit is None:
            return Fraction(0)
        return max(Fraction(0), self.subtree(node, key) - quota.lending_limit)

    def potential(self, node: str, key: FlavorResource) -> Fraction:
        n = self.nodes[node]
        if n.parent is None:
            return self.subtree(node, key)
        available = self.local(node, key) + self.potential(n.parent, key)
        quota = n.quotas.get(key)
        if quota is not None and quota.borrowing_limit is not None:
            available = min(self.subtree(node, key) + quota.borrowing_limit, available)
        return available


def ceilings(config: StackConfig) -> dict[str, dict[FlavorResource, Fraction]]:
    """Per ClusterQueue: the most it may ever use of each resource in each flavor (Kueue's
    potentialAvailable with nothing running). Without a cohort, its nominal quota. In a cohort
    tree (the one-cohort form, `cohorts`, or both): what it keeps (nominal above its lending
    limit) plus what its cohort may use, which is what the cohort keeps plus what its parent
    may use, up to the root, which may use everything stored in the tree: the cohorts' own
    quota and what every member lends up; each step capped at its subtree's quota plus its
    borrowing limit."""
    nodes: dict[str, _Node] = {}
    if config.cohort is not None:
        nodes[f"cohort/{config.cohort.name}"] = _Node(None, {})
    for c in config.cohorts:
        parent = None if c.parent is None else f"cohort/{c.parent}"
        nodes[f"cohort/{c.name}"] = _Node(parent, quotas_of(c.resource_groups))
    for team in config.teams:
        parent = None if team.cohort is None else f"cohort/{team.cohort}"
        nodes[f"cq/{team.cluster_queue}"] = _Node(parent, team_quotas(team))
    for name, node in nodes.items():
        if node.parent is not None:
            nodes[node.parent].children.append(name)
    tree = _Tree(nodes)
    return {
        team.cluster_queue: {
            key: tree.potential(f"cq/{team.cluster_queue}", key) for key in team_quotas(team)
        }
        for team in config.teams
    }
