"""Benchmark of the fast what-if engine (not a test): for each size N, a generated stack and a
seeded mix of N Jobs over one simulated day, through the whole `make what-if` path
(`python -m sandbox.replay.cli`, fast engine, in a process of its own); prints wall time,
simulated time / wall time, time per workload and peak memory, and the ratio of each size's
time per workload to the smallest's.

    python -m sandbox.bench.whatif_fast [200 1000 5000] [--seed 1] [--out DIR]

The stack: four teams in one cohort, each with an equal share of the GPUs as nominal quota, a
borrowing limit of half of it and a lending limit of half of it, reclaim within the cohort
(Any) and preemption of lower priorities within each queue; three priority classes. The GPUs
grow with N (8-GPU nodes enough for the mix's GPU-hours at about 90% of the day), so every
size is a cluster about as busy, not a longer and longer backlog. The mix: 1 to 8 GPUs,
30 minutes to 8 hours, a priority in three, submitted across the day, to the teams in turn.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from gpu_queues.config.stackfile import ROOT
from gpu_queues.whatif.durations import format_duration

TEAMS = ("alpha", "beta", "gamma", "delta")
GPUS = (1, 2, 4, 8)
GPU_WEIGHTS = (4, 4, 3, 2)
HOURS = (0.5, 1, 2, 4, 8)
HOUR_WEIGHTS = (3, 4, 3, 2, 1)
PRIORITIES = ("low", "normal", "high")
DAY = 24 * 3600


def mix(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        team = TEAMS[i % len(TEAMS)]
        gpus = rng.choices(GPUS, GPU_WEIGHTS)[0]
        hours = rng.choices(HOURS, HOUR_WEIGHTS)[0]
        jobs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"job-{i:05d}",
                    "namespace": f"team-{team}",
                    "labels": {
                        "kueue.x-k8s.io/queue-name": "gpu-queue",
                        "kueue.x-k8s.io/priority-class": rng.choice(PRIORITIES),
                    },
                    "annotations": {
                        "gpu-queues.dev/submit-at": f"{rng.randrange(0, DAY, 60)}s",
                        "gpu-queues.dev/duration": f"{int(hours * 3600)}s",
                    },
                },
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "trainer",
                                    "resources": {
                                        "requests": {"cpu": "4", "memory": "32Gi"},
                                        "limits": {"nvidia.com/gpu": str(gpus)},
                                    },
                                }
                            ],
                        }
                    }
                },
            }
        )
    return jobs


def gpu_hours(jobs: list[dict[str, Any]]) -> float:
    total = 0.0
    for j in jobs:
        gpus = int(
            j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        )
        total += gpus * int(j["metadata"]["annotations"]["gpu-queues.dev/duration"][:-1]) / 3600
    return total


def stack(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    nodes = max(4, math.ceil(gpu_hours(jobs) / 24 / 0.9 / 8))
    nodes += (-nodes) % len(TEAMS)  # a whole number of nodes' GPUs per team
    share = nodes * 8 // len(TEAMS)
    teams = []
    for name in TEAMS:
        teams.append(
            {
                "name": name,
                "namespace": f"team-{name}",
                "clusterQueue": f"{name}-cq",
                "localQueue": "gpu-queue",
                "cohort": "pool",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "gpu",
                                "resources": {
                                    "cpu": {"nominalQuota": share * 8},
                                    "memory": {"nominalQuota": f"{share * 64}Gi"},
                                    "nvidia.com/gpu": {
                                        "nominalQuota": share,
                                        "borrowingLimit": share // 2,
                                        "lendingLimit": share // 2,
                                    },
                                },
                            }
                        ],
                    }
                ],
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            }
        )
    config = {
        "gpu-queues:flavors": [
            {
                "name": "gpu",
                "nodeLabels": {"node-pool": "gpu"},
                "nodes": {
                    "count": nodes,
                    "resources": {"cpu": 96, "memory": "1Ti", "nvidia.com/gpu": 8},
                },
            }
        ],
        "gpu-queues:cohort": {"name": "pool"},
        "gpu-queues:priorityClasses": [
            {"name": "low", "value": 10},
            {"name": "normal", "value": 100},
            {"name": "high", "value": 1000},
        ],
        "gpu-queues:teams": teams,
    }
    return {"config": config}


def run_size(count: int, seed: int, work: Path) -> dict[str, Any]:
    root = work / f"n{count}"
    (root / "toolchain").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "toolchain" / "pins.env", root / "toolchain" / "pins.env")
    jobs = mix(count, seed)
    (root / "Pulumi.bench.yaml").write_text(yaml.safe_dump(stack(jobs), sort_keys=False))
    (root / "mix.yaml").write_text(yaml.safe_dump_all(jobs, sort_keys=False))
    out = root / "out"
    # One process per size, so its peak memory (the CLI's and the engine's, the larger) is its
    # own: RUSAGE_CHILDREN of a wrapper that runs nothing else.
    probe = (
        "import resource, subprocess, sys; "
        "rc = subprocess.run(sys.argv[1:]).returncode; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(rc)"
    )
    command = [
        sys.executable, "-c", probe, sys.executable, "-m", "sandbox.replay.cli",
        "--stack", "bench", "--root", str(root), "--workloads", str(root / "mix.yaml"),
        "--out", str(out), "--engine", "fast",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"bench-what-if: N={count} failed:\n{done.stderr[-3000:]}")
    peak_kib = int(done.stderr.strip().splitlines()[-1])
    meta = json.loads((out / "replay.json").read_text())["new"]
    report = json.loads((out / "report.json").read_text())["new"]
    outcomes: dict[str, int] = {}
    for w in report["workloads"]:
        outcomes[w["outcome"]] = outcomes.get(w["outcome"], 0) + 1
    return {
        "n": count,
        "gpus": int(stack(jobs)["config"]["gpu-queues:flavors"][0]["nodes"]["count"]) * 8,
        "wall": wall,
        "engine": float(meta["wall_seconds"]),
        "simulated": float(meta["simulated_seconds"]),
        "peak_mib": peak_kib / 1024,
        "outcomes": outcomes,
        "preempted": sum(1 for w in report["workloads"] if "Preempted" in (w["message"] or "")),
    }


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["wall"] / rows[0]["n"]
    lines = [
        "| workloads | GPUs | wall (whole make what-if) | engine alone | simulated | "
        "simulated / wall | per workload | vs smallest | peak memory | evicted at least once |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        per = r["wall"] / r["n"]
        lines.append(
            f"| {r['n']:,} | {r['gpus']} | {r['wall']:.1f}s | {r['engine']:.1f}s | "
            f"{format_duration(r['simulated'])} | {r['simulated'] / r['wall']:,.0f}x | "
            f"{per * 1000:.1f} ms | {per / base:.2f}x | {r['peak_mib']:.0f} MiB | "
            f"{r['preempted']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.whatif_fast")
    parser.add_argument("sizes", nargs="*", type=int, default=[200, 1000, 5000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="keep the stacks, mixes and reports here")
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="gpuq-bench-whatif-"))
    rows = []
    for n in sorted(args.sizes):
        rows.append(run_size(n, args.seed, work))
        r = rows[-1]
        print(f"bench-what-if: N={n}: {r['wall']:.1f}s, {r['outcomes']}", file=sys.stderr)
    print(table(rows))
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
