"""Benchmark of `gpuq status --eta` (not a test; docs/eta.md): how long the estimate takes for
a cluster with N pending workloads, without N real workloads on a cluster.

    python -m sandbox.bench.eta [100 300 1000] [--seed 1] [--horizon 24h]  the mix and replay
    python -m sandbox.bench.eta --live 100 [--stack local]           the snapshot read, on the
                                                                     sandbox (inside it)
    python -m sandbox.bench.eta --predict 1000                       the synthetic snapshot
                                                                     through --eta's predict and
                                                                     render, one process to time

Synthetic (the default): the committed prod stack (48 GPUs: three teams in a cohort, h100
and a100 nodes), its GPUs all held by 12 admitted 4-GPU jobs, 20 finished runs per team as
history, and N pending Jobs (1-8 GPUs, 30 minutes to 8 hours, 80% with a duration annotation,
the rest on their team's median), the teams in turn: a status snapshot in Kueue's v1beta2
shape, turned into the mix (gpu_queues.tools.eta_mix.plan) and replayed forward on the fast
engine, as `--eta` does after its reading. Each stage is timed.

Live (--live N): N Jobs submitted to the stack's teams in turn on the running sandbox (1-8
GPUs, 80% with a duration annotation; most of them wait), then the reading `--eta` makes
timed (the status snapshot: ClusterQueues, LocalQueues, Workloads, the visibility API; the
owners' Jobs and the nodes), then the whole command (`python -m gpu_queues.tools.eta --stack
STACK --json`, what `make status ARGS=--eta` runs) in a process of its own. The Jobs are
deleted afterwards. On a sandbox shaped like prod: `make rehearse STACK=prod`, then
`bash sandbox/sandbox.sh exec .venv/bin/python -m sandbox.bench.eta --live 1000 --stack prod`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from gpu_queues.config.model import StackConfig
from gpu_queues.config.stackfile import ROOT
from gpu_queues.kueue.client import file_client
from gpu_queues.tools import status
from gpu_queues.tools.eta import DEFAULT_HORIZON, live_nodes, parse_horizon, predict, render
from gpu_queues.tools.eta_mix import plan
from gpu_queues.tools.owners import Owners
from gpu_queues.tools.status import Snapshot
from gpu_queues.whatif.durations import DurationError
from gpu_queues.whatif.engine_input import frameworks, manager_configuration
from gpu_queues.whatif.fast import replay_entries
from gpu_queues.whatif.mix import Catalog
from gpu_queues.whatif.nodes import nodes
from gpu_queues.whatif.workloads import Rest
from sandbox.paths import KUBECONFIG
from sandbox.shape import load_stack

GPUS = (1, 2, 4, 8)
GPU_WEIGHTS = (4, 4, 3, 2)
HOURS = (0.5, 1, 2, 4, 8)
ADMITTED = {"research": ("h100",) * 4 + ("a100",), "vision": ("h100",) * 2 + ("a100",) * 2}
ADMITTED["nlp"] = ("h100",) * 2 + ("a100",)
BENCH_LABEL = "gpu-queues.dev/bench"
PROPAGATION = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _workload(
    name: str, ns: str, queue: str, gpus: int, created: float, conditions: list[Any]
) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "trainer",
        "resources": {
            "requests": {"cpu": "4", "memory": "32Gi"},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}
    return {
        "metadata": {
            "name": f"job-{name}",
            "namespace": ns,
            "creationTimestamp": iso(created),
            "ownerReferences": [{"kind": "Job", "name": name}],
        },
        "spec": {"queueName": queue, "podSets": [pod_set]},
        "status": {"conditions": conditions},
    }


def synthetic(
    config: StackConfig, pending: int, seed: int, now: float
) -> tuple[Snapshot, dict[tuple[str, str], dict[str, Any]]]:
    """A snapshot of the prod stack's cluster with `pending` workloads waiting, and the Jobs."""
    rng = random.Random(seed)
    workloads: list[tuple[dict[str, Any], str, str]] = []
    jobs: dict[tuple[str, str], dict[str, Any]] = {}

    def add(wl: dict[str, Any], team: Any, annotations: dict[str, str], started: float) -> None:
        workloads.append((wl, team.cluster_queue, team.name))
        name = wl["metadata"]["ownerReferences"][0]["name"]
        jobs[(team.namespace, name)] = {
            "metadata": {"name": name, "namespace": team.namespace, "annotations": annotations},
            "status": {"startTime": iso(started)},
        }

    def cond(kind: str, at: float) -> dict[str, Any]:
        return {"type": kind, "status": "True", "lastTransitionTime": iso(at)}

    teams = config.teams
    for team in teams:
        for i in range(20):  # the history: finished runs of 1-3 hours
            end = now - 3600 * (i + 1)
            run = rng.choice((3600, 5400, 7200, 10800))
            conditions = [cond("QuotaReserved", end - run), cond("Finished", end)]
            wl = _workload(f"{team.name}-done-{i}", team.namespace, team.local_queue, 2,
                           end - run - 60, conditions)  # fmt: skip
            add(wl, team, {}, end - run)
        for i, flavor in enumerate(ADMITTED.get(team.name, ())):
            since = now - rng.randrange(60, 3 * 3600, 60)
            wl = _workload(f"{team.name}-run-{i}", team.namespace, team.local_queue, 4,
                           since - 30, [cond("QuotaReserved", since)])  # fmt: skip
            wl["status"]["admission"] = {
                "clusterQueue": team.cluster_queue,
                "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": flavor}}],
            }
            add(wl, team, {"gpu-queues.dev/duration": f"{rng.choice(HOURS) * 3600 + 3600:.0f}s"},
                since)  # fmt: skip
    positions: dict[str, tuple[int, int]] = {}
    counts: dict[str, int] = {}
    for i in range(pending):
        team = teams[i % len(teams)]
        created = now - (pending - i) * 10
        held = {"type": "QuotaReserved", "status": "False", "lastTransitionTime": iso(created)}
        gpus = rng.choices(GPUS, GPU_WEIGHTS)[0]
        wl = _workload(f"{team.name}-wait-{i:05d}", team.namespace, team.local_queue, gpus,
                       created, [held])  # fmt: skip
        annotations = {}
        if rng.random() < 0.8:
            annotations["gpu-queues.dev/duration"] = f"{rng.choice(HOURS) * 3600:.0f}s"
        add(wl, team, annotations, created)
        jobs[(team.namespace, f"{team.name}-wait-{i:05d}")]["status"] = {}
        position = counts.get(team.cluster_queue, 0)
        counts[team.cluster_queue] = position + 1
        positions[f"{team.namespace}/{wl['metadata']['name']}"] = (position, position)
    workloads.sort(key=lambda w: w[0]["metadata"]["creationTimestamp"])
    pairs = [(t.name, t.cluster_queue) for t in teams]
    return Snapshot(now, pairs, {}, workloads, positions), jobs


def owner_of(jobs: dict[tuple[str, str], dict[str, Any]]) -> Any:
    def lookup(kind: str, ns: str, name: str) -> dict[str, Any] | None:
        return jobs.get((ns, name))

    return lookup


def bench_synthetic(
    sizes: list[int], seed: int, replay: bool = True, horizon: float | None = DEFAULT_HORIZON
) -> list[dict[str, Any]]:
    config = load_stack(ROOT / "Pulumi.prod.yaml")
    configuration = manager_configuration(config)
    catalog = Catalog.from_stack(config, frameworks(configuration))
    rows = []
    for size in sizes:
        now = float(int(time.time()))  # whole seconds: the same input on every run
        snap, jobs = synthetic(config, size, seed, now)
        t0 = time.monotonic()
        mix = plan(snap, owner_of(jobs), config, catalog)
        t1 = time.monotonic()
        if not replay:
            print(f"| {size:,} | {t1 - t0:.2f}s | {len(mix.entries()):,} entries |", flush=True)
            continue
        before = _children_cpu()
        run = replay_entries(
            config, mix.entries(), configuration, stack="prod", label="bench",
            nodes=nodes(config), until=horizon,
        )  # fmt: skip
        t2 = time.monotonic()
        cpu = _children_cpu() - before
        admitted = sum(w.wait_seconds is not None for w in run.workloads)
        rows.append(
            {
                "pending": size,
                "mix": t1 - t0,
                "replay": t2 - t1,
                "engine_cpu": cpu,
                "total": t2 - t0,
                "admitted": admitted,
                "simulated": run.meta.simulated_seconds,
                "instants": run.meta.events,
                "loops": sum("in a loop" in n for n in run.meta.notes),
            }
        )
        print(row_text(rows[-1]), file=sys.stderr, flush=True)
    return rows


def predict_whole(pending: int, seed: int, horizon: float | None) -> str:
    """`status --eta` after its reading, whole: the committed prod stack read, the synthetic
    snapshot of `pending` (at a fixed instant: the same input on every run) through
    gpu_queues.tools.eta.predict and render, as the command runs them; a line of figures.
    Timed from outside as a process, it counts what every `--eta` pays before and around its
    replay: Python's start and imports, the stack, the release (its manifest and CRDs)."""
    config = load_stack(ROOT / "Pulumi.prod.yaml")
    snap, jobs = synthetic(config, pending, seed, 1_765_000_000.0)
    estimate = predict(config, snap, owner_of(jobs), nodes(config), source="bench", horizon=horizon)
    timed = sum(p.at is not None for p in estimate.predictions)
    shown = len(render(estimate))
    return f"{len(estimate.predictions)} predictions, {timed} with a time, {shown} characters"


def _children_cpu() -> float:
    """User + system seconds of the finished child processes (the engine runs as one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def row_text(r: dict[str, Any]) -> str:
    per = r["total"] / r["pending"] * 1000
    return (
        f"| {r['pending']:,} | {r['mix']:.2f}s | {r['replay']:.1f}s | {r['engine_cpu']:.1f}s "
        f"| {r['total']:.1f}s | {per:.0f} ms | {r['simulated'] / 86400:.1f}d "
        f"| {r['admitted']:,} | {r['instants']:,} | {r['loops']} | {os.getloadavg()[0]:.1f} |"
    )


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| pending | snapshot to mix | replay (fast engine) | engine CPU | wall (mix + replay) "
        "| per pending workload | simulated | admitted in the replay | instants | preemption loops "
        "| load |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    return "\n".join([head, *map(row_text, rows)])


def bench_live(count: int, stack: str, seed: int = 1) -> str:
    """Submit `count` Jobs to the stack's teams in turn on the running sandbox (1-8 GPUs, 80%
    with a duration annotation, as the synthetic snapshot has them), time the reading `--eta`
    makes, then the whole command."""
    config, _ = status.stack_config(stack, ROOT)
    rng = random.Random(seed)
    rest = Rest(file_client(KUBECONFIG))
    paths = {t.namespace: f"/apis/batch/v1/namespaces/{t.namespace}/jobs" for t in config.teams}
    for i in range(count):
        team = config.teams[i % len(config.teams)]
        gpus = rng.choices(GPUS, GPU_WEIGHTS)[0]
        runs = f"{rng.choice(HOURS) * 3600:.0f}s" if rng.random() < 0.8 else None
        job = _job(f"eta-bench-{i:04d}", team.namespace, team.local_queue, gpus, runs)
        rest.create(paths[team.namespace], job)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            listed = sum(
                len(rest.get(f"{status.KUEUE}/namespaces/{ns}/workloads")["items"]) for ns in paths
            )
            if listed >= count:
                break
            time.sleep(2)
        time.sleep(5)  # Kueue decides them
        pairs = [(t.name, t.cluster_queue) for t in config.teams]
        t0 = time.monotonic()
        snap = status.take_snapshot(rest, pairs, time.time())
        owners = Owners(rest)
        for wl, _, _ in snap.workloads:
            ref = wl["metadata"]["ownerReferences"][0]
            owners.get(ref["kind"], wl["metadata"]["namespace"], ref["name"])
        live_nodes(rest)
        took = time.monotonic() - t0
        # The whole command as a user runs it (make status STACK=... ARGS=--eta): a process of
        # its own, Python's start, the kubeconfig secret through the Pulumi CLI, the reading,
        # the mix and the replay.
        t0 = time.monotonic()
        whole = subprocess.run(
            [sys.executable, "-m", "gpu_queues.tools.eta", "--stack", stack, "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        whole_took = time.monotonic() - t0
    finally:
        for path in paths.values():
            rest.request("DELETE", f"{path}?labelSelector={BENCH_LABEL}%3Deta", PROPAGATION)
    if whole.returncode != 0:
        raise SystemExit(f"status --eta failed ({whole.returncode}): {whole.stderr.strip()}")
    predictions = json.loads(whole.stdout)["predictions"]
    timed = sum(p["predictedAdmission"] is not None for p in predictions)
    n = len(snap.workloads)
    return (
        "| workloads read | pending (positions) | snapshot + owners + nodes | per workload "
        "| whole `status --eta` | predicted | with a time (24 h) | load |\n"
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
        f"| {n:,} | {len(snap.positions):,} | {took:.2f}s | {took / max(n, 1) * 1000:.1f} ms "
        f"| {whole_took:.1f}s | {len(predictions):,} | {timed:,} | {os.getloadavg()[0]:.1f} |"
    )


def _job(name: str, ns: str, queue: str, gpus: int, runs: str | None) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "trainer",
        "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    annotations = {"gpu-queues.dev/duration": runs} if runs else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": queue, BENCH_LABEL: "eta"},
            "annotations": annotations,
        },
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.eta", description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 300, 1000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--live", type=int, help="time the reading of N Jobs on the sandbox")
    parser.add_argument("--mix-only", action="store_true", help="time the mix, not the replay")
    parser.add_argument(
        "--predict",
        type=int,
        metavar="N",
        help="N pending through --eta's own predict and render in this process, for timing the "
        "whole process from outside",
    )
    parser.add_argument("--stack", default="local", help="with --live: the deployed stack")
    parser.add_argument(
        "--horizon", default="24h", help="how far the replay looks ahead (default 24h, or none)"
    )
    args = parser.parse_args(argv)
    try:
        horizon = parse_horizon(args.horizon)
    except DurationError as exc:
        parser.error(f"--horizon: {exc}")
    if args.live:
        print(bench_live(args.live, args.stack, args.seed))
        return 0
    if args.predict:
        print(predict_whole(args.predict, args.seed, horizon))
        return 0
    rows = bench_synthetic(args.sizes, args.seed, replay=not args.mix_only, horizon=horizon)
    if rows:
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
