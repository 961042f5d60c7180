"""A MultiKueue manager's workers named by `stack`, checked against their own stack files in
the project folder: every dispatching team exists there with the same namespace and queue
names, and the worker exports the kubeconfig this manager takes from it. Apart from the other
MultiKueue checks because it reads stack files (gpu_queues.config.stackfile), which are parsed
with the config model those checks are part of."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.errors import Loc, Problem
from gpu_queues.config.multikueue_checks import (
    MK,
    SAME_ON_WORKERS,
    TEAMS,
    WORKERS,
    worker_stack_name,
)
from gpu_queues.config.stackfile import StackFileError, read_config
from gpu_queues.values import as_dict, as_list, as_str


def _teams_by_name(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        t["name"]: t
        for t in map(as_dict, as_list(config.get(keys.KEY_TEAMS)))
        if as_str(t.get("name"))
    }


def worker_stack_problems(
    raw: Mapping[str, Any], project_dir: Path, this_stack: str | None = None
) -> list[Problem]:
    """For each worker named by a stack whose Pulumi.<stack>.yaml is in `project_dir`: every
    team dispatching to it exists there with the same namespace and queue names, and the stack
    exports a kubeconfig (multiKueue.worker) when this manager takes it from there."""
    manager = as_dict(as_dict(raw.get(MK)).get("manager"))
    workers = as_list(manager.get("workers"))
    stack_teams = _teams_by_name(raw)
    problems: list[Problem] = []
    for i, raw_worker in enumerate(workers):
        worker = as_dict(raw_worker)
        reference, name = as_str(worker.get("stack")), as_str(worker.get("name"))
        if reference is None or name is None:
            continue
        loc: Loc = (*WORKERS, i, "stack")
        stack = worker_stack_name(reference)
        if stack is None:
            continue  # another project's stack: nothing of it is here to check
        if stack == this_stack:
            problems.append(
                Problem(loc, f"{reference!r} is this stack: a manager cannot be its own worker")
            )
            continue
        if not (project_dir / f"Pulumi.{stack}.yaml").is_file():
            continue
        try:
            other = read_config(stack, project_dir)
        except StackFileError as error:
            problems.append(Problem(loc, f"cannot read the worker's stack file: {error}"))
            continue
        other_mk = as_dict(other.get(MK))
        if worker.get("kubeconfig") is None and other_mk.get("worker") is None:
            problems.append(
                Problem(
                    loc,
                    f"stack {stack!r} does not set {keys.PROJECT}:{MK}.worker, so it exports no "
                    f"{keys.OUT_MULTI_KUEUE_KUBECONFIG} for this manager; add `worker: {{}}` "
                    "under its multiKueue (or give this worker a kubeconfig)",
                )
            )
        problems += _dispatching_teams(manager, name, stack, stack_teams, _teams_by_name(other))
    return problems


def _dispatching_teams(
    manager: dict[str, Any],
    name: str,
    stack: str,
    stack_teams: dict[str, dict[str, Any]],
    theirs: dict[str, dict[str, Any]],
) -> list[Problem]:
    """Every team dispatching to worker `name` exists in its stack, with the same names."""
    problems: list[Problem] = []
    for j, raw_team in enumerate(as_list(manager.get("teams"))):
        team_name = as_str(as_dict(raw_team).get("name"))
        if team_name is None or name not in render.dispatch_workers(manager, as_dict(raw_team)):
            continue
        mine = stack_teams.get(team_name, {})
        there = theirs.get(team_name)
        tloc: Loc = (*TEAMS, j, "name")
        if there is None:
            has = ", ".join(sorted(theirs)) or "none"
            problems.append(
                Problem(
                    tloc,
                    f"team {team_name!r} dispatches to worker {name!r}, but stack {stack!r} "
                    f"has no team {team_name!r} (it has: {has}); "
                    "its jobs would wait there for a LocalQueue that does not exist",
                )
            )
            continue
        for field, why in SAME_ON_WORKERS.items():
            if mine.get(field) is not None and mine.get(field) != there.get(field):
                problems.append(
                    Problem(
                        tloc,
                        f"team {team_name!r} has {field} {mine.get(field)!r} here but "
                        f"{there.get(field)!r} on worker {name!r} (stack {stack!r}); {why}",
                    )
                )
    return problems
