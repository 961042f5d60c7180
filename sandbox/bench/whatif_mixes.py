"""Benchmark of the what-if (not a test): generated mixes of N workloads over one simulated
day on a stack's teams, each replayed by `sandbox.replay.cli` on a fresh sandbox; prints wall time
(whole run and replay alone), simulated-to-wall ratio and events, per N.

    python -m sandbox.bench.whatif_mixes [--stack prod] [--sizes 50,100,200] [--seed 1] [--out DIR]

The mix is seeded, so the same N gives the same mix: 1 to 8 GPUs per pod (8-GPU jobs
sometimes on 2 pods), 30m to 8h, submitted across the day, spread over the teams in turn.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import ROOT, read_config
from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.mix import (
    ANNOTATION_DURATION,
    ANNOTATION_SUBMIT_AT,
    QUEUE_LABEL,
)
from sandbox.replay import cli as whatif

SIZES = (1, 2, 4, 8)
SIZE_WEIGHTS = (4, 4, 3, 2)
DURATIONS = ("30m", "1h", "2h", "4h", "8h")
DURATION_WEIGHTS = (3, 4, 3, 2, 1)


def mix(stack: str, count: int, seed: int, root: Path = ROOT) -> list[dict[str, Any]]:
    """`count` Jobs over the stack's teams in turn, submitted across one simulated day."""
    config = load_config({k: v for k, v in read_config(stack, root).items() if k != "kubernetes"})
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        team = config.teams[i % len(config.teams)]
        gpus = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        pods = 2 if gpus == 8 and rng.random() < 0.3 else 1
        minute = rng.randrange(24 * 60)
        container = {
            "name": "main",
            "image": "registry.example/bench:1",
            "resources": {
                "requests": {"cpu": str(4 * gpus), "memory": f"{32 * gpus}Gi"},
                "limits": {"nvidia.com/gpu": str(gpus)},
            },
        }
        jobs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"bench-{i:04d}",
                    "namespace": team.namespace,
                    "labels": {QUEUE_LABEL: team.local_queue},
                    "annotations": {
                        ANNOTATION_SUBMIT_AT: f"{minute}m",
                        ANNOTATION_DURATION: rng.choices(DURATIONS, DURATION_WEIGHTS)[0],
                    },
                },
                "spec": {
                    "parallelism": pods,
                    "completions": pods,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                },
            }
        )
    return jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox.bench.whatif_mixes", description=__doc__
    )
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--sizes", default="50,100,200")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / ".sandbox" / "what-if-bench")
    parser.add_argument("--root", type=Path, default=ROOT, help="where the stack file is")
    args = parser.parse_args(argv)
    rows = []
    for count in (int(n) for n in args.sizes.split(",")):
        folder = args.out / f"n{count}"
        (folder / "mix").mkdir(parents=True, exist_ok=True)
        (folder / "mix" / "mix.yaml").write_text(
            yaml.safe_dump_all(mix(args.stack, count, args.seed, args.root), sort_keys=False)
        )
        started = time.monotonic()
        code = whatif.main(
            [
                "--stack",
                args.stack,
                "--workloads",
                str(folder / "mix"),
                "--out",
                str(folder),
                "--root",
                str(args.root),
                "--engine",  # the sandbox's engine, the one this bench measures (not the default)
                "sandbox",
            ]
        )
        total = time.monotonic() - started
        if code != 0:
            print(f"bench: the what-if of {count} workloads failed ({code})", file=sys.stderr)
            return code
        meta = json.loads((folder / "replay.json").read_text())["new"]
        rows.append((count, total, meta))
        print(f"bench: {count} workloads: {total:.0f}s in all", file=sys.stderr, flush=True)
    print(
        "| workloads | events | simulated | replay wall | sim/wall | settle median | "
        "whole run (sandbox, deploy, replay) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for count, total, meta in rows:
        ratio = meta["simulated_seconds"] / meta["wall_seconds"] if meta["wall_seconds"] else 0
        print(
            f"| {count} | {meta['events']} | {format_duration(meta['simulated_seconds'])} | "
            f"{format_duration(meta['wall_seconds'])} | {ratio:.0f}x | "
            f"{meta['settle_p50_seconds']:.1f}s | {format_duration(total)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
