"""Benchmark of the quota advisor (not a test; docs/advisor.md, Speed): on a committed stack
and its mix (default prod), what one replay costs, split into the engine's start-up (the same
stack replayed with no workloads: the process, Kueue's objects and controllers set up, the
JSON in and out) and the simulation (the rest), and the Python around it; then the whole
`make advise` in a process of its own: wall time, replays, time per replay. Prints a table.

    python -m sandbox.bench.advise [--stack prod] [--rounds 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpu_queues.advise.cli import prepare
from gpu_queues.config.stackfile import ROOT
from gpu_queues.whatif import fast


def replay_costs(stack: str, rounds: int, work: Path) -> dict[str, float]:
    """Median seconds per replay: whole (replay_mix), engine (its own wall time), and the
    engine on an empty mix (start-up)."""
    _, _, _, config = prepare(stack, ROOT)
    mix = ROOT / "workloads" / stack
    empty = work / "empty.yaml"
    empty.write_text("")
    fast.replay_mix(config, mix, stack=stack, label="warm-up")  # reads the CRDs once
    whole, engine, startup = [], [], []
    for _ in range(rounds):
        began = time.monotonic()
        run = fast.replay_mix(config, mix, stack=stack, label="bench")
        whole.append(time.monotonic() - began)
        engine.append(run.meta.wall_seconds)
        startup.append(fast.replay_mix(config, empty, stack=stack, label="empty").meta.wall_seconds)
    return {
        "whole": statistics.median(whole),
        "engine": statistics.median(engine),
        "startup": statistics.median(startup),
        "workloads": float(len(run.workloads)),
    }


def advise(stack: str, work: Path) -> dict[str, float]:
    out = work / "advice"
    began = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "gpu_queues.advise.cli", "--stack", stack, "--out", str(out)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.monotonic() - began
    found = json.loads((out / "search.json").read_text())
    return {"wall": wall, "replays": found["replays"], "replaying": found["replaySeconds"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.advise", description=__doc__)
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="gpuq-bench-advise-"))
    work.mkdir(parents=True, exist_ok=True)
    costs = replay_costs(args.stack, args.rounds, work)
    print(f"bench-advise: one replay {costs['whole']:.2f}s", file=sys.stderr)
    whole = advise(args.stack, work)
    load = os.getloadavg()[0]
    simulation = costs["engine"] - costs["startup"]
    per = whole["replaying"] / whole["replays"] if whole["replays"] else 0.0
    rows = [
        ("one replay of the mix (replay_mix)", f"{costs['whole']:.2f}s"),
        ("  of which the engine process", f"{costs['engine']:.2f}s"),
        ("  engine start-up (no workloads)", f"{costs['startup']:.2f}s"),
        ("  simulation (the rest of the engine)", f"{simulation:.2f}s"),
        ("  Python around it (mix, objects, results)", f"{costs['whole'] - costs['engine']:.2f}s"),
        (f"make advise STACK={args.stack}: wall", f"{whole['wall']:.0f}s"),
        ("  replays", f"{whole['replays']:.0f}"),
        ("  replaying (2 side by side)", f"{whole['replaying']:.0f}s, {per:.2f}s a replay"),
        ("load average (1 min) at the end", f"{load:.1f}"),
    ]
    print(f"| {args.stack} ({costs['workloads']:.0f} workloads) | |\n| --- | ---: |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
