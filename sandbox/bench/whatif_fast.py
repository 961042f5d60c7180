"""Benchmark of the fast what-if engine (not a test): for each size N, a generated stack shaped
like a fleet of N workloads a day and a seeded mix of N Jobs over one simulated day, through the
whole `make what-if` path (`python -m sandbox.replay.cli`, fast engine, in a process of its
own); prints wall time, time per workload, Kueue's scheduling cycles per workload and the time
per cycle, and peak memory. With `--against DIR` each size also runs the engines in DIR (another
build: `GPUQ_WHATIF_BIN`) on the same input, in turn (A B A B), and prints the paired ratios of
wall and CPU time: this machine's speed drifts by a third within an hour, a ratio of two runs
side by side does not.

    python -m sandbox.bench.whatif_fast [1000 5000 20000 50000] [--seed 1] [--out DIR]
        [--jobsets 0.1] [--topology 1] [--against DIR | --vs-jobs-only | --vs-no-topology]
        [--pairs 1]

The stack grows with N as fleets do: one team (a ClusterQueue) per 250 workloads a day, at
least four, in cohorts of at most 8; each team an equal share of the GPUs as nominal quota, a
borrowing limit of half of it and a lending limit of half of it, reclaim within the cohort (Any)
and preemption of lower priorities within each queue; three priority classes. The GPUs are
8-GPU nodes enough for the mix's GPU-hours at about 90% of the day, so every size is a cluster
as busy per team, not a longer backlog per team. The mix: 1 to 8 GPUs, 30 minutes to 8 hours,
a priority in three, submitted across the day, to the teams in turn; a share of them
(`--jobsets`, 10% by default) multi-node JobSets: a worker Job of 2 to 16 pods of 8 GPUs, each
pod a whole node, half of them with a 1-pod CPU leader (the stack enables Kueue's
jobset.x-k8s.io/jobset integration). `--jobsets 0` is the Jobs-only mix of before, the same
bytes (with `--topology 0`, the stack too); `--vs-jobs-only` replays each size's Jobs-only
mix too, in turn with it (A B A B, `--pairs` times), and prints the paired ratios.

The GPU flavor is topology-aware (`--topology 1`, the default), as a training fleet's is: its
nodes in racks of 4 and blocks of up to 8 racks (a Topology of block, rack and hostname, the
nodes labelled as gpu_queues/whatif/nodes.py labels them), the node count a whole number of
racks; a JobSet whose workers fit in a rack requires one (2 and 4 pods), a larger one prefers
a block (8 and 16 pods); the Jobs ask for nothing (Kueue places them in the flavor's topology
all the same). `--topology 0` is the stack and mix of before, the same bytes;
`--vs-no-topology` replays each size's mix without the topology too, in turn with it.
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
from gpu_queues.whatif.podsets import pod_sets

WORKLOADS_PER_TEAM = 250
MIN_TEAMS = 4
COHORT_SIZE = 8
GPUS = (1, 2, 4, 8)
GPU_WEIGHTS = (4, 4, 3, 2)
HOURS = (0.5, 1, 2, 4, 8)
HOUR_WEIGHTS = (3, 4, 3, 2, 1)
PRIORITIES = ("low", "normal", "high")
DAY = 24 * 3600
# Multi-node training: a share of the workloads (not of the GPU-hours) are JobSets whose worker
# pods each take a whole 8-GPU node, 2 to 16 of them, the smaller the likelier. One in ten
# workloads is the default: a fleet's multi-node runs are few beside its single-node jobs but
# hold most of its GPU-hours (here about half: 10% of workloads of 34 GPUs on average against
# 3 for a Job). Half of them have a leader, a 1-pod replicated job of CPU only.
JOBSET_SHARE = 0.1
JOBSET_PODS = (2, 4, 8, 16)
JOBSET_POD_WEIGHTS = (8, 4, 2, 1)
NODE_GPUS = 8
JOBSET_FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset"]
# The topology: 8-GPU servers draw about 10 kW each, so an air-cooled rack holds 4 of them
# (32 GPUs); a block is the racks under one set of leaf switches, up to 8 (32 nodes, 256
# GPUs). A JobSet that fits in a rack requires one (its all-reduce stays on the rack's
# switch); a larger one prefers a block and spreads wider only when no block has room.
TOPOLOGY = "gpu-topology"
RACK_NODES = 4
BLOCK_RACKS = 8
LEVELS = (
    ("block", "cloud.example.com/topology-block"),
    ("rack", "cloud.example.com/topology-rack"),
    ("host", "kubernetes.io/hostname"),
)
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


def teams(count: int) -> list[str]:
    """One team per WORKLOADS_PER_TEAM workloads a day, at least MIN_TEAMS."""
    n = max(MIN_TEAMS, math.ceil(count / WORKLOADS_PER_TEAM))
    return [f"t{i:04d}" for i in range(n)]


def _pod(name: str, requests: dict[str, str], gpus: int) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": name, "image": "trainer", "resources": resources}],
        }
    }


def topology_request(pods: int) -> dict[str, str]:
    """A JobSet's workers' topology annotation: a rack if they fit in one, else a block."""
    if pods <= RACK_NODES:
        return {REQUIRED: dict(LEVELS)["rack"]}
    return {PREFERRED: dict(LEVELS)["block"]}


def _jobset(pods: int, leader: bool, topology: bool) -> dict[str, Any]:
    """A JobSet's spec: a worker Job of `pods` pods of a whole node each, after a 1-pod CPU
    leader when `leader`; with `topology`, the workers ask for a rack or a block."""
    worker = _pod("trainer", {"cpu": "32", "memory": "256Gi"}, NODE_GPUS)
    if topology:
        worker["metadata"] = {"annotations": topology_request(pods)}
    replicated = [
        {
            "name": "workers",
            "replicas": 1,
            "template": {"spec": {"parallelism": pods, "completions": pods, "template": worker}},
        }
    ]
    if leader:
        coordinator = _pod("coordinator", {"cpu": "2", "memory": "8Gi"}, 0)
        replicated.insert(
            0, {"name": "leader", "replicas": 1, "template": {"spec": {"template": coordinator}}}
        )
    return {"replicatedJobs": replicated}


def mix(
    count: int, seed: int, jobsets: float = JOBSET_SHARE, topology: bool = True
) -> list[dict[str, Any]]:
    """N workloads over one day, to the teams in turn; a share `jobsets` of them JobSets. Which
    ones and their shapes come from a second generator, so the first draws what it always drew:
    with `jobsets` 0 the mix is the Jobs-only one of before, and otherwise the same but for the
    workloads that became JobSets (which keep their duration, priority and submission). Their
    topology requests draw nothing: without `topology` the mix is the same but for them."""
    rng = random.Random(seed)
    shapes = random.Random(f"jobsets-{seed}")
    names = teams(count)
    jobs = []
    for i in range(count):
        team = names[i % len(names)]
        gpus = rng.choices(GPUS, GPU_WEIGHTS)[0]
        hours = rng.choices(HOURS, HOUR_WEIGHTS)[0]
        multi = jobsets > 0 and shapes.random() < jobsets
        meta = {
            "name": f"{'jobset' if multi else 'job'}-{i:05d}",
            "namespace": f"team-{team}",
            "labels": {
                "kueue.x-k8s.io/queue-name": "gpu-queue",
                "kueue.x-k8s.io/priority-class": rng.choice(PRIORITIES),
            },
            "annotations": {
                "gpu-queues.dev/submit-at": f"{rng.randrange(0, DAY, 60)}s",
                "gpu-queues.dev/duration": f"{int(hours * 3600)}s",
            },
        }
        if multi:
            pods = shapes.choices(JOBSET_PODS, JOBSET_POD_WEIGHTS)[0]
            spec = _jobset(pods, leader=shapes.random() < 0.5, topology=topology)
            jobs.append(
                {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                 "spec": spec}
            )  # fmt: skip
            continue
        template = _pod("main", {"cpu": "4", "memory": "32Gi"}, gpus)
        jobs.append(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
             "spec": {"template": template}}
        )  # fmt: skip
    return jobs


def workload_gpus(job: dict[str, Any]) -> int:
    """GPUs a workload of the mix holds, over its pod sets."""
    total = 0
    for podset in pod_sets(job["kind"], job):
        for container in podset.spec.get("containers") or []:
            limits = (container.get("resources") or {}).get("limits") or {}
            total += podset.count * int(limits.get("nvidia.com/gpu", 0))
    return total


def gpu_hours(jobs: list[dict[str, Any]]) -> float:
    total = 0.0
    for j in jobs:
        seconds = int(j["metadata"]["annotations"]["gpu-queues.dev/duration"][:-1])
        total += workload_gpus(j) * seconds / 3600
    return total


def racks_per_block(nodes: int) -> int:
    """The most racks up to BLOCK_RACKS that divide the nodes' racks evenly (a topology's
    counts must divide the flavor's nodes: docs/topology.md)."""
    racks = nodes // RACK_NODES
    return max(d for d in range(1, BLOCK_RACKS + 1) if racks % d == 0)


def _topology(flavor: dict[str, Any]) -> list[dict[str, Any]]:
    """The stack's Topology, and the flavor placed by it: its nodes in blocks of racks."""
    nodes = flavor["nodes"]["count"]
    per_block = racks_per_block(nodes)
    flavor["topologyName"] = TOPOLOGY
    flavor["nodes"]["topology"] = {"block": nodes // RACK_NODES // per_block, "rack": per_block}
    levels = [{"name": name, "nodeLabel": label} for name, label in LEVELS]
    return [{"name": TOPOLOGY, "levels": levels}]


def stack(jobs: list[dict[str, Any]], topology: bool = True) -> dict[str, Any]:
    """The fleet of the mix `jobs`; with `topology`, its GPU flavor topology-aware and its
    node count a whole number of racks too."""
    names = teams(len(jobs))
    cohorts = math.ceil(len(names) / COHORT_SIZE)
    nodes = max(4, math.ceil(gpu_hours(jobs) / 24 / 0.9 / 8))
    # A whole number of nodes' GPUs per team (and of racks with a topology: no more nodes at
    # the sizes that make a multiple of 4 teams, 1,000 and up to 20,000 among them).
    step = math.lcm(len(names), RACK_NODES) if topology else len(names)
    nodes += (-nodes) % step
    # Every team can hold the mix's largest workload within its nominal quota and borrowing
    # limit (a share and a half), or that workload could never start: a fleet that runs 16-node
    # jobs has the nodes for them. Only a small mix with JobSets is made larger so (below 1,000
    # workloads a share is a few nodes); the Jobs of 8 GPUs or fewer always fit.
    largest = max((workload_gpus(j) for j in jobs), default=0)
    while (share := nodes * 8 // len(names)) + share // 2 < largest:
        nodes += step
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
    flavor = {
        "name": "gpu",
        "nodeLabels": {"node-pool": "gpu"},
        "nodes": {"count": nodes, "resources": {"cpu": 96, "memory": "1Ti", "nvidia.com/gpu": 8}},
    }
    config: dict[str, Any] = {"gpu-queues:topologies": _topology(flavor)} if topology else {}
    config |= {
        "gpu-queues:flavors": [flavor],
        "gpu-queues:cohorts": [{"name": f"pool-{k}"} for k in range(cohorts)],
        "gpu-queues:priorityClasses": [
            {"name": "low", "value": 10},
            {"name": "normal", "value": 100},
            {"name": "high", "value": 1000},
        ],
        "gpu-queues:teams": members,
    }
    if any(j["kind"] == "JobSet" for j in jobs):
        config["gpu-queues:kueue"] = {
            "manager": {"integrations": {"frameworks": JOBSET_FRAMEWORKS}}
        }
    return {"config": config}


def prepare(
    count: int, seed: int, work: Path, jobsets: float = JOBSET_SHARE, topology: bool = True
) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The size's stack and mix, written once under work/n<count> (with -jobs-only for the mix
    without JobSets, -no-topology for the fleet without one; every run reads the same); the
    folder, the stack's config and the mix's facts (JobSets, pods, GPU-hours)."""
    name = (
        f"n{count}" + ("" if jobsets > 0 else "-jobs-only") + ("" if topology else "-no-topology")
    )
    root = work / name
    (root / "toolchain").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "toolchain" / "pins.env", root / "toolchain" / "pins.env")
    jobs = mix(count, seed, jobsets, topology)
    made = stack(jobs, topology)
    (root / "Pulumi.bench.yaml").write_text(yaml.safe_dump(made, sort_keys=False))
    with (root / "mix.yaml").open("w") as out:
        yaml.dump_all(jobs, out, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))
    multi = [j for j in jobs if j["kind"] == "JobSet"]
    facts = {
        "jobsets": len(multi),
        "pods": sum(p.count for j in jobs for p in pod_sets(j["kind"], j)),
        "gpu_hours": gpu_hours(jobs),
        "jobset_gpu_hours": gpu_hours(multi),
    }
    return root, made["config"], facts


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


def _row(
    runs: list[dict[str, Any]], count: int, config: dict[str, Any], facts: dict[str, Any]
) -> dict[str, Any]:
    """A mix's row: its median run by wall time (the first of two), and the stack's shape."""
    row = dict(sorted(runs, key=lambda r: r["wall"])[(len(runs) - 1) // 2])
    row.update(facts)
    row["n"] = count
    row["teams"] = len(config["gpu-queues:teams"])
    row["cohorts"] = len(config["gpu-queues:cohorts"])
    nodes = config["gpu-queues:flavors"][0]["nodes"]
    row["gpus"] = int(nodes["count"]) * 8
    split = nodes.get("topology")
    row["topology"] = f"{split['block']} x {split['rack']} x {RACK_NODES}" if split else "none"
    return row


# What a paired run's other side leaves out of the size's mix and fleet (`run_size`'s `vs`).
VS: dict[str, dict[str, Any]] = {"Jobs only": {"jobsets": 0.0}, "no topology": {"topology": False}}


def run_size(
    count: int,
    seed: int,
    work: Path,
    against: Path | None = None,
    pairs: int = 1,
    shape: dict[str, Any] | None = None,
    vs: str | None = None,
) -> list[dict[str, Any]]:
    """The size's runs: this checkout's engines on the mix (`shape`: prepare's jobsets and
    topology), and in turn with them (A B A B ..., `pairs` times) either the other engines of
    `against` on the same mix, or with `vs` (a key of VS) this checkout's on the size's mix
    without that; its rows (the other mix's second), the first with the paired ratios."""
    shape = shape or {}
    root, config, facts = prepare(count, seed, work, **shape)
    other = prepare(count, seed, work, **{**shape, **VS[vs]}) if vs is not None else None
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for _ in range(pairs if against is not None or other is not None else 1):
        ours.append(run_once(root))
        if against is not None:
            theirs.append(run_once(root, against))
        elif other is not None:
            theirs.append(run_once(other[0]))
    row = _row(ours, count, config, facts)
    if theirs:
        row["vs"] = vs or "old"
        row["wall_ratio"] = [a["wall"] / b["wall"] for a, b in zip(ours, theirs, strict=True)]
        row["cpu_ratio"] = [a["cpu"] / b["cpu"] for a, b in zip(ours, theirs, strict=True)]
    if against is not None:
        row["same_answer"] = all(
            a["report"] == b["report"] for a, b in zip(ours, theirs, strict=True)
        )
    if other is not None:
        return [row, _row(theirs, count, other[1], other[2])]
    return [row]


def _ratios(values: list[float]) -> str:
    mid = sorted(values)[len(values) // 2]
    return f"{mid:.2f}" if len(values) == 1 else f"{mid:.2f} ({min(values):.2f}-{max(values):.2f})"


def table(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["engine"] / max(rows[0]["cycles"], 1)
    against = any("same_answer" in r for r in rows)
    paired = next((r["vs"] for r in rows if "vs" in r), None)
    head = (
        "| workloads | JobSets (their GPU-hours) | pods | teams (cohorts) | GPUs | "
        "topology (blocks x racks x nodes) | "
        "wall (whole make what-if) | per workload | engine alone | cycles / workload | "
        "per cycle | per cycle vs first | peak memory | evicted at least once |"
    )
    if against:
        head += " wall new/old | CPU new/old | same answer |"
    elif paired:
        head += f" wall / {paired} | CPU / {paired} |"
    lines = [head, "|" + " ---: |" * (head.count("|") - 1)]
    for r in rows:
        per_cycle = r["engine"] / max(r["cycles"], 1)
        share = r["jobset_gpu_hours"] / max(r["gpu_hours"], 1e-9)
        line = (
            f"| {r['n']:,} | {r['jobsets']:,} ({share:.0%}) | {r['pods']:,} | "
            f"{r['teams']} ({r['cohorts']}) | {r['gpus']:,} | {r['topology']} | {r['wall']:.1f}s | "
            f"{r['wall'] / r['n'] * 1000:.1f} ms | {r['engine']:.1f}s | "
            f"{r['cycles'] / r['n']:.2f} | {per_cycle * 1000:.2f} ms | {per_cycle / base:.2f}x | "
            f"{r['peak_mib']:.0f} MiB | {r['preempted']} |"
        )
        if "wall_ratio" in r:
            line += f" {_ratios(r['wall_ratio'])} | {_ratios(r['cpu_ratio'])} |"
            if against:
                line += f" {'yes' if r['same_answer'] else 'no'} |"
        elif paired:
            line += " | |"  # the other mix's row: its ratios are the row above's
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


def _share(text: str) -> float:
    """A share of the workloads on the command line: 0 to 1."""
    try:
        share = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share (0 to 1)") from None
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError(f"{share}: a share is from 0 to 1")
    return share


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.whatif_fast")
    parser.add_argument("sizes", nargs="*", type=_size, default=[1000, 5000, 20000, 50000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="keep the stacks, mixes and reports here")
    parser.add_argument(
        "--jobsets",
        type=_share,
        default=JOBSET_SHARE,
        help=f"the share of the workloads that are multi-node JobSets (default {JOBSET_SHARE}; "
        "0: Jobs only, the mix before they were added)",
    )
    parser.add_argument(
        "--topology",
        type=int,
        choices=(0, 1),
        default=1,
        help="1 (default): the GPU flavor in blocks and racks, the JobSets asking for one; "
        "0: no topology, the stack and mix before it was added",
    )
    pair = parser.add_mutually_exclusive_group()
    pair.add_argument(
        "--against",
        type=Path,
        help="a folder of other engines (gpuq-whatif-<release>) to pair with",
    )
    pair.add_argument(
        "--vs-jobs-only",
        action="store_const",
        const="Jobs only",
        dest="vs",
        help="pair each size with its Jobs-only mix (--jobsets 0) on the same engines",
    )
    pair.add_argument(
        "--vs-no-topology",
        action="store_const",
        const="no topology",
        dest="vs",
        help="pair each size with its mix and fleet without the topology (--topology 0)",
    )
    parser.add_argument(
        "--pairs", type=int, default=1, help="runs of each side with --against or --vs-..."
    )
    args = parser.parse_args(argv)
    if args.against is not None and not args.against.is_dir():
        parser.error(f"--against {args.against}: not a folder of engines")
    if args.vs == "Jobs only" and args.jobsets == 0:
        parser.error("--vs-jobs-only with --jobsets 0: both sides would be the Jobs-only mix")
    if args.vs == "no topology" and not args.topology:
        parser.error("--vs-no-topology with --topology 0: neither side would have a topology")
    work = args.out or Path(tempfile.mkdtemp(prefix="gpuq-bench-whatif-"))
    rows = []
    for n in sorted(args.sizes):
        shape = {"jobsets": args.jobsets, "topology": bool(args.topology)}
        made = run_size(n, args.seed, work, args.against, max(1, args.pairs), shape, args.vs)
        rows += made
        for r in made:
            print(
                f"bench-what-if: N={n}, {r['jobsets']} JobSets, topology {r['topology']}: "
                f"{r['wall']:.1f}s, {r['outcomes']}",
                file=sys.stderr,
            )
    print(table(rows))
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
