"""A tiny queue model standing in for the fast engine in the search's unit tests, written
apart from the advisor: one flavor; each team's jobs are admitted in mix order
(BestEffortFIFO: a job that does not fit lets later ones that do pass) while its GPUs hold
them; a job runs for its duration once admitted. A team's GPUs are its nominal quota plus,
when it names a cohort of `gpu-queues:cohorts` that holds GPUs of its own, a fixed part of
them: split among the cohort's teams in proportion to their fair-sharing weights (1 when not
written, all 1 while the manager's fair sharing is off), rounded. No borrowing between teams.
The toolchain test (tests/toolchain/test_advise.py) judges with the real engine."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.quantity import parse_quantity
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results

Job = tuple[str, str, int, float, float]  # name, team, GPUs, submit at, runs for


def _gpus(groups: Sequence[Any]) -> int:
    return sum(
        int(q.nominal_quota)
        for g in groups
        for f in g.flavors
        for r, q in f.resources.items()
        if r.endswith("/gpu")
    )


def _weight(config: StackConfig, team: Any) -> Fraction:
    if config.kueue.manager.fair_sharing is None or team.fair_sharing is None:
        return Fraction(1)
    return parse_quantity(team.fair_sharing.weight)


def quota(config: StackConfig, team: str) -> int:
    t = next(t for t in config.teams if t.name == team)
    own = _gpus(t.resource_groups)
    cohort = next((c for c in config.cohorts if c.name == t.cohort), None)
    if cohort is None:
        return own
    members = [m for m in config.teams if m.cohort == t.cohort]
    total = sum(_weight(config, m) for m in members)
    if total == 0:
        return own
    return own + round(_gpus(cohort.resource_groups or []) * _weight(config, t) / total)


def replay(config: StackConfig, jobs: Sequence[Job]) -> Run:
    results = []
    end = 0.0
    for team in config.teams:
        mine = [j for j in jobs if j[1] == team.name]
        free = quota(config, team.name)
        running: list[tuple[float, int]] = []
        started: dict[str, float] = {}
        times = sorted({j[3] for j in mine})
        now = 0.0
        while True:
            free += sum(g for e, g in running if e <= now)
            running = [r for r in running if r[0] > now]
            for name, _, gpus, at, runs in mine:
                if name not in started and at <= now and gpus <= free:
                    started[name] = now
                    free -= gpus
                    running.append((now + runs, gpus))
            later = sorted({t for t in times if t > now} | {e for e, _ in running})
            if not later:
                break
            now = later[0]
        end = max([end, now])
        for name, _, gpus, at, runs in mine:
            start = started.get(name)
            results.append(
                WorkloadResult(
                    name,
                    team.namespace,
                    team.local_queue,
                    "finished" if start is not None else "pending",
                    flavor=config.flavors[0].name if start is not None else None,
                    wait_seconds=None if start is None else start - at,
                    team=team.name,
                    cluster_queue=team.cluster_queue,
                    gpus=gpus,
                    gpu_seconds=runs if start is not None else 0.0,
                    submit_at=at,
                    intervals=[] if start is None else [(start, start + runs)],
                )
            )
    teams = team_results(results, [(t.name, t.cluster_queue) for t in config.teams])
    meta = RunMeta(stack="t", source="model", simulated_seconds=end, engine="fast")
    return Run(results, teams, meta)
