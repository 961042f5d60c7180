"""The randomized cross-check: generated stacks and mixes (sandbox/crosscheck/generate.py)
replayed on both what-if engines, the fast one held to the sandbox's real Kueue and
kube-scheduler, workload by workload.

    python -m sandbox.crosscheck.run [--seeds N] [--first S] [--release vX.Y.Z] [--out DIR]
    make crosscheck SEEDS=N [FIRST=S] [RELEASE=vX.Y.Z]

For each seed: the stack file and the mix written into OUT/seed-S/, replayed by the what-if
on the fast engine and on a fresh sandbox (the path `make what-if` takes, ENGINE=sandbox for
the second), and the two runs compared (gpu_queues.whatif.agreement): the same outcome,
flavor and wait for every workload, and the first instant at which their stories part, with
each differing workload's two timelines. Prints a line per seed and the agreement at the end;
exit 1 when any workload differs. Needs root and the built toolchain, like the sandbox.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from gpu_queues.whatif import agreement
from gpu_queues.whatif.documents import MAX_BYTES, MAX_WORKLOADS
from gpu_queues.whatif.engine_input import FastEngineError
from gpu_queues.whatif.fast import load_stack_file, replay_mix
from gpu_queues.whatif.report import Run
from gpu_queues.whatif.sides import WhatIfError, load_replay_side
from sandbox.crosscheck.generate import generate
from sandbox.paths import STATE
from sandbox.replay.cli import replay_side

DEFAULT_OUT = STATE / "crosscheck"


@dataclass(frozen=True)
class SeedResult:
    seed: int
    workloads: int
    agreeing: int
    text: str  # agreement.explain(), empty when they agree throughout
    seconds: float
    tie: bool = False
    """The runs first part at a tie no engine has one answer to (agreement.tie_reason: a
    reclaim among equals admitted at that instant): nothing after it can be compared."""

    @property
    def agrees(self) -> bool:
        return self.agreeing == self.workloads and not self.text

    @property
    def verdict(self) -> str:
        return "agree" if self.agrees else "tie" if self.tie else "DIFFER"


def unsure(run: Run) -> bool:
    """The sandbox run says its settling cannot be trusted: the cluster paused mid-reaction for
    more than three quarters of the quiet spell that counts as settled (a loaded machine)."""
    return run.meta.longest_silence_seconds > 0.75 * run.meta.quiet_seconds


def placement_order(run: Run) -> list[tuple[str, str]]:
    """The run's admissions in the order its watch saw them, a (namespace, name) each."""
    seen = [(n, (w.namespace, w.name)) for w in run.workloads for n in w.admission_order]
    return [key for _, key in sorted(seen)]


def replay_both(stack: str, root: Path, mix: Path, work: Path) -> tuple[Run, Run]:
    """(sandbox run, fast run) of the stack file root/Pulumi.<stack>.yaml and the mix."""
    args = SimpleNamespace(
        keep=False,
        until=None,
        quiet=None,
        max_workloads=MAX_WORKLOADS,
        max_bytes=MAX_BYTES,
    )
    side = load_replay_side("new", stack, root, None, work)
    # The stack file the sandbox ran, waitForPodsReady's timeouts pushed out of its reach (its
    # clock is the wall clock, not the replay's): the fast engine is held to that cluster.
    ran = load_stack_file(side.stack_file)

    def held_to(real: Run) -> Run:
        """The fast engine's run, given what the sandbox's cluster chose at random: its
        Workload UIDs, for the last of Kueue's ties (equal priority, admitted in the same
        second: Kueue breaks them by UID, which the API server draws at random), and the order
        its watch saw the admissions in (Kueue writes a cycle's admissions on goroutines of
        their own; the pods of jobs admitted together reach the scheduler in that order)."""
        uids = {(w.namespace, w.name): w.workload_uid for w in real.workloads if w.workload_uid}
        try:
            return replay_mix(
                ran, mix, stack=stack, label=side.label, workload_uids=uids,
                placement_order=placement_order(real),
            )  # fmt: skip
        except FastEngineError as exc:
            raise WhatIfError(str(exc)) from None

    real = replay_side(side, stack, mix, work, args)
    fast = held_to(real)
    if agreement.differences(real, fast) and unsure(real):
        # As the run's own note advises: once more with a quiet spell twice as long.
        args.quiet = 2 * real.meta.quiet_seconds
        real = replay_side(side, stack, mix, work, args)
        fast = held_to(real)
    return real, fast


def check_seed(seed: int, release: str | None, out: Path) -> SeedResult:
    case = generate(seed, release)
    folder = out / f"seed-{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"Pulumi.{case.stack}.yaml").write_text(case.stack_text)
    mix = folder / "mix.yaml"
    mix.write_text(case.mix_text)
    started = time.monotonic()
    real, fast = replay_both(case.stack, folder, mix, folder / "work")
    for name, run in (("sandbox", real), ("fast", fast)):
        (folder / f"{name}.json").write_text(json.dumps(run.to_json(), indent=1))
    text = agreement.explain(real, fast, ("sandbox", "fast"))
    (folder / "agreement.txt").write_text(text or "the two runs tell the same story\n")
    differing = len(agreement.differences(real, fast))
    parting = agreement.first_parting(real, fast)
    return SeedResult(
        seed,
        len(real.workloads),
        len(real.workloads) - differing,
        text,
        time.monotonic() - started,
        tie=parting is not None and agreement.timing_tie(parting),
    )


def summary(results: list[SeedResult]) -> str:
    workloads = sum(r.workloads for r in results)
    agreeing = sum(r.agreeing for r in results)
    seeds = sum(r.agrees for r in results)
    ties = sum(r.tie for r in results)
    rate = 100 * agreeing / workloads if workloads else 100.0
    return (
        f"crosscheck: {seeds} of {len(results)} seeds agree on every workload and every step, "
        f"{ties} part at a tie a cluster breaks by the wall clock, "
        f"{len(results) - seeds - ties} differ; {agreeing} of {workloads} workloads agree "
        f"({rate:.1f}%)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.crosscheck.run", description=__doc__)
    parser.add_argument("--seeds", type=int, default=5, help="how many seeds (default 5)")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--release", help="the Kueue release to replay on (default: the pin)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where each seed's files go")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds: at least 1")
    results = []
    for seed in range(args.first, args.first + args.seeds):
        try:
            result = check_seed(seed, args.release, args.out.resolve())
        except WhatIfError as exc:
            print(f"crosscheck: seed {seed}: {exc}", file=sys.stderr)
            return 2
        results.append(result)
        print(
            f"seed {seed}: {result.verdict}, {result.agreeing} of {result.workloads} workloads "
            f"({result.seconds:.0f}s)",
            flush=True,
        )
        if result.text:
            print("  " + result.text.replace("\n", "\n  "), flush=True)
    print(summary(results))
    return 0 if all(r.agrees or r.tie for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
