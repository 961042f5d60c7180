"""The Kueue rules (gpu_queues/kueue/, one module per object kind) on the objects the program
is about to register (gpu_queues/config/render.py), their problems mapped back to the stack
config key the user wrote: `spec.resourceGroups[0].flavors[1].resources[2]` of team 0's
ClusterQueue is `teams[0].resourceGroups[0].flavors[1].resources['nvidia.com/gpu']`.
Run by gpu_queues/config/checks.py's cross_check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from gpu_queues import keys
from gpu_queues.config import provisioning_checks, render
from gpu_queues.config.errors import Loc, Problem, key_path
from gpu_queues.config.hardware import flavor_hardware
from gpu_queues.config.render import QUEUE_FIELDS
from gpu_queues.kueue.admissioncheck import (
    CHECK_UNDECLARED,
    MULTIKUEUE_CONTROLLER,
    multikueue_check_placement,
    undeclared_admission_checks,
)
from gpu_queues.kueue.capacity import QuotaHolder, over_capacity, quota_totals
from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.cohort import PARENT_UNDECLARED, cohort_errors, cohort_tree_errors
from gpu_queues.kueue.errors import FieldError, child
from gpu_queues.kueue.localqueue import local_queue_errors, unselected_local_queues
from gpu_queues.kueue.provisioning import provisioning_with_multikueue
from gpu_queues.kueue.quotas import LIMIT_WITHOUT_COHORT, LIMIT_WITHOUT_PARENT
from gpu_queues.kueue.resourceflavor import resource_flavor_errors
from gpu_queues.kueue.resourcegroups import (
    DEFAULT_REQUIRED_RESOURCES,
    FLAVOR_UNDECLARED,
    fractional_quotas,
    uncovered_resources,
    undeclared_flavors,
)
from gpu_queues.kueue.topology import topology_errors
from gpu_queues.values import as_dict, as_list, as_str

# Resources every ClusterQueue must cover (the pack's requiredResources default is the same).
REQUIRED_RESOURCES: Final = DEFAULT_REQUIRED_RESOURCES


def _team_loc(
    base: Loc, cq: Mapping[str, Any], path: tuple[str | int, ...], raw: Mapping[str, Any]
) -> Loc:
    """Where a path of a team's rendered ClusterQueue comes from in the stack config."""
    if path[:2] == ("metadata", "name"):
        return (*base, "clusterQueue")
    if len(path) < 2 or path[0] != "spec":
        return base
    key, tail = path[1], path[2:]
    if key == "cohortName":
        return (*base, "cohort")
    if key in ("namespaceSelector", "queueingStrategy"):
        return (*base, key)
    if key == "admissionChecksStrategy":
        # The program writes a team's admission checks from its multiKueue.manager entry and
        # its provisioning.teams entries.
        team_name = as_dict(as_list(raw.get(keys.KEY_TEAMS))[int(base[1])]).get("name")
        return provisioning_checks.strategy_loc(raw, team_name, tail[1:])
    if key == "preemption":
        return (*base, key, *tail)
    if key in QUEUE_FIELDS:
        return (*base, key, *tail)
    if key != "resourceGroups":
        return base
    return _groups_loc(base, cq, tail)


def _groups_loc(base: Loc, obj: Mapping[str, Any], tail: tuple[str | int, ...]) -> Loc:
    """spec.resourceGroups[g].flavors[f].resources[r] of a rendered object: the quota is keyed
    by its resource name in the stack config."""
    if len(tail) >= 5 and tail[1] == "flavors" and tail[3] == "resources":
        g, _, f, _, r = tail[:5]
        quota = child(obj, "spec", "resourceGroups")[g]["flavors"][f]["resources"][r]
        return (*base, "resourceGroups", g, "flavors", f, "resources", quota["name"], *tail[5:])
    return (*base, "resourceGroups", *tail)


def _cohort_loc(base: Loc, obj: Mapping[str, Any], path: tuple[str | int, ...]) -> Loc:
    """Where a path of a rendered Cohort comes from (`cohorts[i]` or `cohort`)."""
    if path[:2] == ("metadata", "name"):
        return (*base, "name")
    if len(path) < 2 or path[0] != "spec":
        return base
    if path[1] == "parentName":
        return (*base, "parent")
    if path[1] == "resourceGroups":
        return _groups_loc(base, obj, path[2:])
    return (*base, *path[1:])


def _flavor_loc(base: Loc, path: tuple[str | int, ...]) -> Loc:
    if path[:2] == ("metadata", "name"):
        return (*base, "name")
    if path and path[0] == "spec":
        return (*base, *path[1:])
    return base


def _config_fix(error: FieldError, loc: Loc) -> str:
    """The fix in stack config terms, where Kueue's terms would mislead."""
    if error.code == LIMIT_WITHOUT_COHORT:
        return f"set {key_path((*loc[:2], 'cohort'))} or remove the limit"
    if error.code == LIMIT_WITHOUT_PARENT:
        return f"set {key_path((*loc[:2], 'parent'))} or remove the limit"
    if error.code == PARENT_UNDECLARED:
        return f"declare it under {keys.KEY_COHORTS}, or fix the name"
    if error.code == FLAVOR_UNDECLARED:
        return f"declare it under {keys.KEY_FLAVORS}, or fix the name"
    if error.code == CHECK_UNDECLARED and loc[:1] == (keys.KEY_PROVISIONING,):
        return f"declare it under {key_path(provisioning_checks.CHECKS)}, or fix the name"
    return error.fix


def _mapped(errors: Iterable[FieldError], to_loc: Any) -> list[Problem]:
    problems = []
    for error in errors:
        loc = to_loc(error.path)
        message = error.message
        if error.code == LIMIT_WITHOUT_COHORT:
            message = message.replace("the queue has no cohortName", "the team has no cohort")
        if error.code == LIMIT_WITHOUT_PARENT:
            message = message.replace("the cohort has no parentName", "the cohort has no parent")
        problems.append(Problem(loc, f"{message}; {_config_fix(error, loc)}"))
    return problems


def kueue_rule_problems(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    flavors = as_list(raw.get(keys.KEY_FLAVORS))
    teams = as_list(raw.get(keys.KEY_TEAMS))
    declared = {n for n in (as_str(as_dict(f).get("name")) for f in flavors) if n}

    capacity: dict[tuple[str, str], Fraction] = {}
    capacity_at: dict[tuple[str, str], tuple[Loc, str]] = {}
    for j, raw_flavor in enumerate(flavors):
        flavor = as_dict(raw_flavor)
        base: Loc = (keys.KEY_FLAVORS, j)
        rf = render.resource_flavor(flavor)
        problems += _mapped(resource_flavor_errors(rf), lambda p, b=base: _flavor_loc(b, p))
        hardware = flavor_hardware(flavor)
        problems += [Problem((*base, *loc), message) for loc, message in hardware.problems]
        name = as_str(flavor.get("name"))
        for resource, amount in hardware.capacity.items():
            if name and (name, resource) not in capacity:
                capacity[name, resource] = amount
                detail = hardware.detail.get(resource)
                capacity_at[name, resource] = (
                    (*base, *hardware.source[resource]),
                    f" ({detail})" if detail else "",
                )

    for t, raw_topology in enumerate(as_list(raw.get(keys.KEY_TOPOLOGIES))):
        obj = render.topology(as_dict(raw_topology))
        problems += _mapped(
            topology_errors(obj), lambda p, b=(keys.KEY_TOPOLOGIES, t): (*b, *p[1:])
        )

    queues = []
    team_of: dict[str, str] = {}
    mk_objects = render.multikueue_objects(raw)
    provisioning = {
        o["metadata"]["name"]
        for o in render.provisioning_objects(raw)
        if o["kind"] == "AdmissionCheck"
    }
    checks = {
        o["metadata"]["name"] for o in mk_objects if o["kind"] == "AdmissionCheck"
    } | provisioning
    multikueue = {
        o["metadata"]["name"]
        for o in mk_objects
        if o["kind"] == "AdmissionCheck" and o["spec"]["controllerName"] == MULTIKUEUE_CONTROLLER
    }
    for i, raw_team in enumerate(teams):
        team = as_dict(raw_team)
        base = (keys.KEY_TEAMS, i)
        cq = render.cluster_queue(team, render.admission_checks_of(raw, team.get("name")))
        queues.append(cq)
        cq_name, team_name = as_str(team.get("clusterQueue")), as_str(team.get("name"))
        if cq_name and team_name:
            team_of.setdefault(cq_name, team_name)
        errors = [
            *cluster_queue_errors(cq),
            *uncovered_resources(cq, REQUIRED_RESOURCES),
            *fractional_quotas(cq),
            *undeclared_flavors(cq, declared),
            *undeclared_admission_checks(cq, checks),
            *multikueue_check_placement(cq, multikueue),
            *provisioning_with_multikueue(cq, multikueue, provisioning),
        ]
        problems += _mapped(errors, lambda p, b=base, q=cq: _team_loc(b, q, p, raw))

    _local_queue_problems(raw, queues, problems)
    cohorts = _cohort_problems(raw, declared, problems)

    def label(holder: QuotaHolder) -> str:
        if holder.kind == "Cohort":
            return f"cohort {holder.name}"
        return team_of.get(holder.name, f"{holder.kind} {holder.name}")

    totals = quota_totals([*queues, *cohorts])
    for overrun in over_capacity(totals, capacity):
        loc, detail = capacity_at[overrun.flavor, overrun.resource]
        problems.append(Problem(loc, overrun.describe(label) + detail))


def _cohort_problems(
    raw: Mapping[str, Any], declared: set[str], problems: list[Problem]
) -> list[dict[str, Any]]:
    """Each Cohort's own rules (Kueue's webhook, whole numbers, declared flavors) and the
    tree's (gpu_queues/kueue/cohort.py), mapped to `cohort` or `cohorts[i]`; returns the
    Cohorts, whose own quota counts against the hardware."""
    objects = render.cohorts(raw)
    bases: list[Loc] = (
        [(keys.KEY_COHORT,)] if len(objects) > len(as_list(raw.get(keys.KEY_COHORTS))) else []
    )
    bases += [(keys.KEY_COHORTS, i) for i in range(len(as_list(raw.get(keys.KEY_COHORTS))))]
    loc_of: dict[str, Loc] = {}
    for base, obj in zip(bases, objects, strict=True):
        name = obj["metadata"]["name"]
        if isinstance(name, str):
            loc_of.setdefault(name, base)
        errors = [*cohort_errors(obj), *fractional_quotas(obj), *undeclared_flavors(obj, declared)]
        problems += _mapped(errors, lambda p, b=base, o=obj: _cohort_loc(b, o, p))
    for name, error in cohort_tree_errors(objects):
        base = loc_of[name]
        problems += _mapped([error], lambda p, b=base: _cohort_loc(b, {}, p))
    return objects


def _local_queue_problems(
    raw: Mapping[str, Any], queues: list[dict[str, Any]], problems: list[Problem]
) -> None:
    """Each team's LocalQueues: Kueue's rules on them, and one its ClusterQueue does not select
    (gpu_queues/kueue/localqueue.py; a namespace the team does not own is said in the team's
    terms by checks.py, so the same place is not reported twice)."""
    objects: list[dict[str, Any]] = []
    loc_of: dict[int, Loc] = {}
    for i, raw_team in enumerate(as_list(raw.get(keys.KEY_TEAMS))):
        team = as_dict(raw_team)
        listed = team.get("localQueues") is not None
        for j, lq in enumerate(render.local_queues(team)):
            base: Loc = (keys.KEY_TEAMS, i, "localQueues", j) if listed else (keys.KEY_TEAMS, i)
            loc_of[id(lq)] = base
            objects.append(lq)
            errors = local_queue_errors(lq)
            problems += _mapped(errors, lambda p, b=base: (*b, *p[1:]))
    said = {p.loc for p in problems}
    for found, error in unselected_local_queues([*queues, *objects]):
        base = loc_of[id(found)]
        loc = (*base, "namespace")
        if loc not in said:
            problems += _mapped([error], lambda p, at=loc: at)
