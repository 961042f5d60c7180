"""Admission what-if: replay a workload mix on the stack's Kueue release for the stack as it
is and (with --base) as it was at a git revision, and report what happened to every workload
and team, side by side.

    gpuq what-if --stack staging --workloads workloads/staging [--base origin/main]
        [--out DIR] [--until 24h] [--engine fast|sandbox] [--quiet SECONDS] [--keep]
        [--change AT=STACK_FILE ...] [--max-workloads N] [--max-bytes N]
    make what-if STACK=staging [WORKLOADS=workloads/staging] [BASE=origin/main] [OUT=DIR]
        [ENGINE=fast|sandbox] [CHANGE="14h=Pulumi.staging-drained.yaml"] [MAX_WORKLOADS=N]
        [MAX_BYTES=N]

The fast engine (the default) runs Kueue's own scheduling code on a simulated clock
(gpu_queues.whatif.fast): seconds, no sandbox, no root, only the engine of each side's
release built (`make toolchain`). --engine sandbox replays each side on the real control
plane instead, in a fresh sandbox shaped like the stack (a sandbox already running in this
checkout is stopped first; --keep leaves the last one up): the full-fidelity cross-check,
which needs root and a checkout's sandbox/ (sandbox/replay/cli.py passes it in; `make
what-if` and `gpuq what-if` in a checkout run it from there). --quiet and --keep are the
sandbox's.

--change AT=STACK_FILE (repeatable) changes the stack at that instant of the replay: from then
on it runs that stack file, e.g. the stack with one team's stopPolicy HoldAndDrain ("drain team
research at 14:00"), or a PR's new weights landing mid-day. A change may alter the spec of
Cohorts, ClusterQueues and LocalQueues only (gpu_queues/whatif/changes.py); it needs one stack
to change, so it does not go with --base.

Each side runs the Kueue release its stack file resolves to where it was read (its own
`kueue.version`, else toolchain/pins.env beside it: the work tree's, or the one at the
revision), so a PR that moves the pin compares the old release with the new.

A mix of more than 100,000 workloads, or of more than 100 MB of files, is refused before
anything starts (the bytes from the files' sizes, before any is read); --max-workloads and
--max-bytes raise the limits.

Writes DIR/report.md and DIR/report.json (gpu_queues/whatif/report.py has the format), and
DIR/replay.json: how each side was made, the Kueue release it ran included.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Protocol

from gpu_queues import invoked
from gpu_queues.config.stackfile import ROOT
from gpu_queues.progress import Progress
from gpu_queues.whatif.durations import DurationError, parse_duration
from gpu_queues.whatif.limits import add_limit_flags, limits_of, mix_size_problem
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import Run, align, replay_json, report_json
from gpu_queues.whatif.sides import (
    ReplaySide,
    WhatIfError,
    load_changes,
    load_replay_side,
    replay_side_fast,
    unbuilt_engine,
)

DEFAULT_OUT = ROOT / ".sandbox" / "what-if"
ENGINES = ("fast", "sandbox")
NO_SANDBOX = (
    "the sandbox engine runs from a gpu-queues checkout, as root, with its sandbox/: "
    "`make what-if ENGINE=sandbox` (python -m sandbox.replay.cli) there; "
    "the fast engine needs neither (--engine fast)"
)


class SandboxEngine(Protocol):
    """The sandbox's engine, as sandbox/replay/cli.py passes it in: one fresh sandbox per side."""

    def unbuilt(self, side: ReplaySide) -> str | None:
        """Why this machine cannot replay the side there, else None."""

    def replay(self, side: ReplaySide, stack: str, workloads: Path, work: Path, args: Any) -> Run:
        """The side replayed in a fresh sandbox (WhatIfError when it cannot be)."""


def make_parser(prog: str = "python -m gpu_queues.whatif.cli") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=invoked.prog(prog),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", required=True, help="the stack: Pulumi.<stack>.yaml")
    parser.add_argument("--workloads", type=Path, required=True, help="a manifest file or folder")
    parser.add_argument("--base", help="also replay the stack file as it was at this git revision")
    parser.add_argument("--out", type=Path, help="report folder (default .sandbox/what-if/<stack>)")
    parser.add_argument("--root", type=Path, default=ROOT, help="where the stack files are")
    parser.add_argument("--until", help="stop the simulated clock there, e.g. 24h")
    parser.add_argument("--quiet", type=float, help="seconds of no change that count as settled")
    parser.add_argument("--keep", action="store_true", help="leave the last sandbox running")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="fast",
        help="fast: Kueue's own code on a simulated clock (default); sandbox: the real control "
        "plane in a fresh sandbox per side (needs root), the full-fidelity cross-check",
    )
    parser.add_argument(
        "--change",
        action="append",
        default=[],
        metavar="AT=STACK_FILE",
        help="from that instant of the replay (e.g. 14h) on, the stack is that file's; repeatable",
    )
    add_limit_flags(parser)
    return parser


def replay_sides(
    sides: list[ReplaySide], args: Any, workloads: Path, work: Path, sandbox: SandboxEngine | None
) -> dict[str, Run]:
    """Every side replayed, on the sandbox's engine when one is given, else on the fast one;
    each side checked first, so none is replayed on another release than its own, and none
    starts unless all can."""
    for side in sides:
        why = sandbox.unbuilt(side) if sandbox is not None else unbuilt_engine(side)
        if why:
            raise WhatIfError(why)
    if sandbox is not None:
        return {s.name: sandbox.replay(s, args.stack, workloads, work, args) for s in sides}
    # On a terminal, a line says which side replays and for how long (a large mix with a base
    # takes minutes); the sandbox's engine prints its own steps instead.
    with Progress("what-if") as progress:
        return {s.name: replay_side_fast(s, args.stack, workloads, args, progress) for s in sides}


def main(
    argv: list[str] | None = None,
    sandbox: SandboxEngine | None = None,
    default_out: Path = DEFAULT_OUT,
    prog: str = "python -m gpu_queues.whatif.cli",
) -> int:
    """The command; `sandbox` is the sandbox's engine (sandbox/replay/cli.py), `default_out`
    where reports go without --out (<default_out>/<stack>)."""
    args = make_parser(prog).parse_args(argv)
    out: Path = (args.out or default_out / args.stack).resolve()
    workloads = args.workloads.resolve()
    if not workloads.exists():
        print(f"what-if: no workloads at {args.workloads}", file=sys.stderr)
        return 2
    too_large = mix_size_problem(workloads, limits_of(args))
    if too_large:
        print(f"what-if: {too_large}", file=sys.stderr)
        return 2
    try:
        parse_duration(args.until or "0s")
    except DurationError as exc:
        print(f"what-if: --until: {exc}", file=sys.stderr)
        return 2
    try:
        if args.engine == "sandbox" and sandbox is None:
            raise WhatIfError(NO_SANDBOX)
        if args.change and args.base:
            raise WhatIfError(
                "--change changes one stack at an instant; with --base there are two: replay "
                "the change without --base (or the base and the new stack without --change)"
            )
        work = out / "work"
        sides = [load_replay_side("new", args.stack, args.root, None, work)]
        if args.change:
            sides = [load_changes(sides[0], args.change, Path.cwd())]
        if args.base:
            sides.insert(0, load_replay_side("base", args.stack, args.root, args.base, work))
        runs = replay_sides(
            sides, args, workloads, work, sandbox if args.engine == "sandbox" else None
        )
    except WhatIfError as exc:
        print(f"what-if: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    new, base = runs["new"], runs.get("base")
    if base is not None:
        base, new = align(base, new)
    (out / "report.md").write_text(render(new, base))
    (out / "report.json").write_text(json.dumps(report_json(new, base), indent=2) + "\n")
    (out / "replay.json").write_text(json.dumps(replay_json(new, base), indent=2) + "\n")
    print(f"what-if: report in {out / 'report.md'} and {out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
