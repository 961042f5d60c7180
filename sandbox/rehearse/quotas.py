"""A team's quotas per flavor and resource, and the most each ClusterQueue may ever use
(`ceilings`: Kueue v0.18's potentialAvailable on an empty cluster)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gpu_queues.config import render
from gpu_queues.config.model import StackConfig, Team
from gpu_queues.kueue.capacity import quota_totals
from gpu_queues.kueue.quantity import parse_quantity

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
