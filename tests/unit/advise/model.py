"""A tiny queue model standing in for the fast engine in the search's unit tests, written
apart from the advisor: teams without a cohort, one flavor; each team's jobs are admitted in
mix order (BestEffortFIFO: a job that does not fit lets later ones that do pass) while its
nominal GPU quota holds them; a job runs for its duration once admitted. The toolchain test
(tests/toolchain/test_advise.py) judges with the real engine."""

from __future__ import annotations

from collections.abc import Sequence

from gpu_queues.config.model import StackConfig
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results

Job = tuple[str, str, int, float, float]  # name, team, GPUs, submit at, runs for


def quota(config: StackConfig, team: str) -> int:
    t = next(t for t in config.teams if t.name == team)
    return sum(
        int(q.nominal_quota)
        for g in t.resource_groups
        for f in g.flavors
        for r, q in f.resources.items()
        if r.endswith("/gpu")
    )


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
