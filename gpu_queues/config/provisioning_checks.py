"""Capacity on demand in the stack config: what is checked before anything is registered
(run by config_checks.cross_check on the raw config; values of the wrong type are skipped, the
models report them).

- checks are named once, and not like a MultiKueue check (one namespace of AdmissionCheck
  names); every check is used by some team; the teams are declared ones, each listed once;
- Kueue's rules (gpu_queues/kueue/provisioning.py) on each rendered ProvisioningRequestConfig,
  mapped back to provisioning.checks[i];
- the team queues' side (a check listed twice, undeclared, on a flavor outside the team's
  quota, beside a MultiKueue check) runs with the other ClusterQueue rules in rendered.py,
  which maps those paths back here with `rule_locs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.errors import Loc, Problem, format_loc, key_path
from gpu_queues.kueue.admissioncheck import admission_check_errors
from gpu_queues.kueue.provisioning import (
    missing_provisioning_config,
    provisioning_check_errors,
    provisioning_request_config_errors,
)
from gpu_queues.values import as_dict, as_list, as_str

PROVISIONING: Final = (keys.KEY_PROVISIONING,)
CHECKS: Final = (*PROVISIONING, "checks")
TEAMS: Final = (*PROVISIONING, "teams")


def rule_locs(raw: Mapping[str, Any], team_name: object) -> list[Loc | None]:
    """Where each of a team's admissionChecksStrategy rules (render.admission_checks_of, in
    its order) comes from: None for a MultiKueue check, else the provisioning.teams[j].checks[k]
    entry that asked for it."""
    locs: list[Loc | None] = [
        None for rule in render.admission_checks_of(raw, team_name) if isinstance(rule, str)
    ]
    for j, raw_team in enumerate(as_list(render.provisioning(raw).get("teams"))):
        if as_dict(raw_team).get("name") != team_name:
            continue
        locs += [
            (*TEAMS, j, "checks", k) for k, _ in enumerate(as_list(as_dict(raw_team).get("checks")))
        ]
    return locs


def strategy_loc(raw: Mapping[str, Any], team_name: object, tail: tuple[str | int, ...]) -> Loc:
    """The stack config key behind a path under a team ClusterQueue's
    spec.admissionChecksStrategy.admissionChecks (`tail`: what follows it)."""
    locs = rule_locs(raw, team_name)
    multikueue: Loc = (keys.KEY_MULTI_KUEUE, "manager", "teams")
    if not tail or not isinstance(tail[0], int) or tail[0] >= len(locs):
        return TEAMS if any(loc is not None for loc in locs) else multikueue
    loc = locs[tail[0]]
    if loc is None:
        return multikueue
    rest = tail[1:]
    return (*loc, *rest) if rest else (*loc, "name")


def _duplicates(items: Sequence[tuple[Loc, str | None]], what: str, out: list[Problem]) -> None:
    first: dict[str, Loc] = {}
    for loc, value in items:
        if value is None:
            continue
        if value in first:
            out.append(Problem(loc, f"{what} {value!r} is already at {format_loc(first[value])}"))
        else:
            first[value] = loc


def _checks(raw: Mapping[str, Any], checks: list[Any], out: list[Problem]) -> None:
    names = [((*CHECKS, i, "name"), as_str(as_dict(c).get("name"))) for i, c in enumerate(checks)]
    _duplicates(names, "provisioning check", out)
    multikueue = {
        as_str(o["metadata"].get("name"))
        for o in render.multikueue_objects(raw)
        if o["kind"] == "AdmissionCheck"
    }
    configs = {n for _, n in names if n}
    for i, raw_check in enumerate(checks):
        check = as_dict(raw_check)
        name = as_str(check.get("name"))
        if name is not None and name in multikueue:
            out.append(
                Problem(
                    (*CHECKS, i, "name"),
                    f"AdmissionCheck {name!r} is already the MultiKueue check of a dispatching "
                    "team (multiKueue.manager.teams); AdmissionCheck names are cluster-wide: "
                    "pick another name",
                )
            )
        prc = render.provisioning_request_config(check)
        for error in provisioning_request_config_errors(prc):
            loc = (*CHECKS, i, *error.path[1:]) if error.path[:1] == ("spec",) else (*CHECKS, i)
            out.append(Problem(loc, f"{error.message}; {error.fix}"))
        ac = render.provisioning_admission_check(check)
        for error in [
            *admission_check_errors(ac),
            *provisioning_check_errors(ac),
            *missing_provisioning_config(ac, configs),
        ]:
            out.append(Problem((*CHECKS, i, "name"), f"{error.message}; {error.fix}"))


def _teams(raw: Mapping[str, Any], checks: list[Any], teams: list[Any], out: list[Problem]) -> None:
    declared = {
        n for t in as_list(raw.get(keys.KEY_TEAMS)) if (n := as_str(as_dict(t).get("name")))
    }
    _duplicates(
        [((*TEAMS, j, "name"), as_str(as_dict(t).get("name"))) for j, t in enumerate(teams)],
        "team",
        out,
    )
    used: set[str] = set()
    for j, raw_team in enumerate(teams):
        team = as_dict(raw_team)
        name = as_str(team.get("name"))
        if name is not None and name not in declared:
            out.append(
                Problem(
                    (*TEAMS, j, "name"),
                    f"team {name!r} is not declared under {keys.KEY_TEAMS} (declared: "
                    f"{', '.join(sorted(declared)) or 'none'})",
                )
            )
        used |= {n for u in as_list(team.get("checks")) if (n := as_str(as_dict(u).get("name")))}
    for i, raw_check in enumerate(checks):
        name = as_str(as_dict(raw_check).get("name"))
        if name is not None and name not in used:
            out.append(
                Problem(
                    (*CHECKS, i, "name"),
                    f"no team uses provisioning check {name!r}, so it would hold no workload: "
                    f"list it under {key_path(TEAMS)}[].checks, or remove it",
                )
            )


def config_problems(raw: Mapping[str, Any]) -> list[Problem]:
    """The provisioning part of the stack config, on the raw config."""
    settings = render.provisioning(raw)
    if not settings:
        return []
    problems: list[Problem] = []
    checks = as_list(settings.get("checks"))
    _checks(raw, checks, problems)
    _teams(raw, checks, as_list(settings.get("teams")), problems)
    return problems
