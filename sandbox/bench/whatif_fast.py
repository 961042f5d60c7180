"""Benchmark of the fast what-if engine (not a test): for each size N, a generated stack shaped
like a fleet of N workloads a day and a seeded mix of N Jobs over one simulated day, through the
whole `make what-if` path (`python -m sandbox.replay.cli`, fast engine, in a process of its
own); prints wall time, time per workload, Kueue's scheduling cycles per workload and the time
per cycle, and peak memory. With `--against DIR` each size also runs the engines in DIR (another
build: `GPUQ_WHATIF_BIN`) on the same input, in turn (A B A B), and prints the paired ratios of
wall and CPU time: this machine's speed drifts by a third within an hour, a ratio of two runs
side by side does not.

    python -m sandbox.bench.whatif_fast [1000 5000 20000 50000] [--seed 1] [--out DIR]
        [--against DIR] [--pairs 1]

The stack grows with N as fleets do: one team (a ClusterQueue) per 250 workloads a day, at
least four, in cohorts of at most 8; each team an equal share of the GPUs as nominal quota, a
borrowing limit of half of it and a lending limit of half of it, reclaim within the cohort (Any)
and preemption of lower priorities within each queue; three priority classes. The GPUs are
8-GPU nodes enough for the mix's GPU-hours at about 90% of the day, so every size is a cluster
as busy per team, not a longer backlog per team. The mix: 1 to 8 GPUs, 30 minutes to 8 hours,
a priority in three, submitted across the day, to the teams in turn.
"""

from __future__ import annotations

import argparse
import json
import math
import os
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
from gpu_queues.whatif.fast import ENGINE_DIR_ENV

WORKLOADS_PER_TEAM = 250
MIN_TEAMS = 4
COHORT_SIZE = 8
GPUS = (1, 2, 4, 8)
GPU_WEIGHTS = (4, 4, 3, 2)
HOURS = (0.5, 1, 2, 4, 8)
HOUR_WEIGHTS = (3, 4, 3, 2, 1)
PRIORITIES = ("low", "normal", "high")
DAY = 24 * 3600


def teams(count: int) -> list[str]:
    """One team per WORKLOADS_PER_TEAM workloads a day, at least MIN_TEAMS."""
    n = max(MIN_TEAMS, math.ceil(count / WORKLOADS_PER_TEAM))
    return [f"t{i:04d}" for i in range(n)]


def mix(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    names = teams(count)
    jobs = []
    for i in range(count):
        team = names[i % len(names)]
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
    names = teams(len(jobs))
    cohorts = math.ceil(len(names) / COHORT_SIZE)
    nodes = max(4, math.ceil(gpu_hours(jobs) / 24 / 0.9 / 8))
    nodes += (-nodes) % len(names)  # a whole number of nodes' GPUs per team
    share = nodes * 8 // len(names)
    members = []
    for i, name in enumerate(names):
        members.append(
            {
                "name": name,
                "namespace": f"team-{name}",
                "clusterQueue": f"{name}-cq",
                "localQueue": "gpu-queue",
                "cohort": f"pool-{i % cohorts}",
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
        "gpu-queues:cohorts": [{"name": f"pool-{k}"} for k in range(cohorts)],
        "gpu-queues:priorityClasses": [
            {"name": "low", "value": 10},
            {"name": "normal", "value": 100},
            {"name": "high", "value": 1000},
        ],
        "gpu-queues:teams": members,
    }
    return {"config": config}


def prepare(count: int, seed: int, work: Path) -> tuple[Path, dict[str, Any]]:
    """The size's stack and mix, written once under work/n<count> (every run reads the same);
    the folder and the stack's config."""
    root = work / f"n{count}"
    (root / "toolchain").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "toolchain" / "pins.env", root / "toolchain" / "pins.env")
    jobs = mix(count, seed)
    made = stack(jobs)
    (root / "Pulumi.bench.yaml").write_text(yaml.safe_dump(made, sort_keys=False))
    with (root / "mix.yaml").open("w") as out:
        yaml.dump_all(jobs, out, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))
    return root, made["config"]


def run_once(root: Path, engines: Path | None = None) -> dict[str, Any]:
    """One whole `make what-if` of the size in root, with the engines in `engines` (else the
    checkout's): wall and CPU time, peak memory, Kueue's scheduling cycles, outcomes."""
    out = root / ("out" if engines is None else "out-against")
    # One process per run, so its peak memory (the CLI's and the engine's, the larger) and CPU
    # time are its own: RUSAGE_CHILDREN of a wrapper that runs nothing else.
    probe = (
        "import resource, subprocess, sys; "
        "rc = subprocess.run(sys.argv[1:]).returncode; "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(u.ru_maxrss, u.ru_utime + u.ru_stime, file=sys.stderr); "
        "sys.exit(rc)"
    )
    command = [
        sys.executable, "-c", probe, sys.executable, "-m", "sandbox.replay.cli",
        "--stack", "bench", "--root", str(root), "--workloads", str(root / "mix.yaml"),
        "--out", str(out), "--engine", "fast",
    ]  # fmt: skip
    env = {**os.environ, **({ENGINE_DIR_ENV: str(engines)} if engines is not None else {})}
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"bench-what-if: {root.name} failed:\n{done.stderr[-3000:]}")
    peak_kib, cpu = done.stderr.strip().splitlines()[-1].split()
    meta = json.loads((out / "replay.json").read_text())["new"]
    report = json.loads((out / "report.json").read_text())["new"]
    outcomes: dict[str, int] = {}
    for w in report["workloads"]:
        outcomes[w["outcome"]] = outcomes.get(w["outcome"], 0) + 1
    return {
        "wall": wall,
        "cpu": float(cpu),
        "engine": float(meta["wall_seconds"]),
        "simulated": float(meta["simulated_seconds"]),
        "cycles": int(meta.get("scheduling_cycles") or 0),
        "peak_mib": int(peak_kib) / 1024,
        "outcomes": outcomes,
        "preempted": sum(1 for w in report["workloads"] if "Preempted" in (w["message"] or "")),
        "report": (out / "report.json").read_bytes(),
    }


def run_size(
    count: int, seed: int, work: Path, against: Path | None = None, pairs: int = 1
) -> dict[str, Any]:
    """The size's runs: this checkout's engines, and with `against` the other engines in turn
    (A B A B ...), `pairs` times; the first run of this checkout's is the size's row."""
    root, config = prepare(count, seed, work)
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for _ in range(pairs if against is not None else 1):
        ours.append(run_once(root))
        if against is not None:
            theirs.append(run_once(root, against))
    row = dict(ours[0])
    row["n"] = count
    row["teams"] = len(config["gpu-queues:teams"])
    row["cohorts"] = len(config["gpu-queues:cohorts"])
    row["gpus"] = int(config["gpu-queues:flavors"][0]["nodes"]["count"]) * 8
    if theirs:
        row["wall_ratio"] = [a["wall"] / b["wall"] for a, b in zip(ours, theirs, strict=True)]
        row["cpu_ratio"] = [a["cpu"] / b["cpu"] for a, b in zip(ours, theirs, strict=True)]
        row["same_answer"] = all(
            a["report"] == b["report"] for a, b in zip(ours, theirs, strict=True)
        )
    return row


def _ratios(values: list[float]) -> str:
    mid = sorted(values)[len(values) // 2]
    return f"{mid:.2f}" if len(values) == 1 else f"{mid:.2f} ({min(values):.2f}-{max(values):.2f})"


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["engine"] / max(rows[0]["cycles"], 1)
    against = any("wall_ratio" in r for r in rows)
    head = (
        "| workloads | teams (cohorts) | GPUs | wall (whole make what-if) | per workload | "
        "engine alone | cycles / workload | per cycle | per cycle vs smallest | peak memory | "
        "evicted at least once |"
    )
    lines = [head + (" wall new/old | CPU new/old | same answer |" if against else "")]
    lines.append("|" + " ---: |" * (11 + (3 if against else 0)))
    for r in rows:
        per_cycle = r["engine"] / max(r["cycles"], 1)
        line = (
            f"| {r['n']:,} | {r['teams']} ({r['cohorts']}) | {r['gpus']:,} | {r['wall']:.1f}s | "
            f"{r['wall'] / r['n'] * 1000:.1f} ms | {r['engine']:.1f}s | "
            f"{r['cycles'] / r['n']:.2f} | {per_cycle * 1000:.2f} ms | {per_cycle / base:.2f}x | "
            f"{r['peak_mib']:.0f} MiB | {r['preempted']} |"
        )
        if against:
            line += (
                f" {_ratios(r['wall_ratio'])} | {_ratios(r['cpu_ratio'])} | "
                f"{'yes' if r['same_answer'] else 'no'} |"
            )
        lines.append(line)
    return "\n".join(lines)


def _size(text: str) -> int:
    """A size on the command line: a whole number of workloads, at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workloads") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: a size is at least 1 workload")
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.whatif_fast")
    parser.add_argument("sizes", nargs="*", type=_size, default=[1000, 5000, 20000, 50000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="keep the stacks, mixes and reports here")
    parser.add_argument(
        "--against",
        type=Path,
        help="a folder of other engines (gpuq-whatif-<release>) to pair with",
    )
    parser.add_argument("--pairs", type=int, default=1, help="runs of each side with --against")
    args = parser.parse_args(argv)
    if args.against is not None and not args.against.is_dir():
        parser.error(f"--against {args.against}: not a folder of engines")
    work = args.out or Path(tempfile.mkdtemp(prefix="gpuq-bench-whatif-"))
    rows = []
    for n in sorted(args.sizes):
        rows.append(run_size(n, args.seed, work, args.against, max(1, args.pairs)))
        r = rows[-1]
        print(f"bench-what-if: N={n}: {r['wall']:.1f}s, {r['outcomes']}", file=sys.stderr)
    print(table(rows))
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
