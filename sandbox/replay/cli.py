"""Admission what-if: replay a workload mix on the real Kueue and kube-scheduler, in a fresh
sandbox shaped like the stack, for the stack as it is and (with --base) as it was at a git
revision, and report what happened to every workload and team, side by side.

    python -m sandbox.replay.cli --stack staging --workloads workloads/staging [--base origin/main]
                          [--out DIR] [--until 24h] [--quiet SECONDS] [--keep]
                          [--max-workloads N] [--max-bytes N]
    make what-if STACK=staging WORKLOADS=workloads/staging [BASE=origin/main] [OUT=DIR]
                 [MAX_WORKLOADS=N] [MAX_BYTES=N]

A mix of more than 100,000 workloads, or of more than 100 MB of files, is refused before
anything starts (the bytes from the files' sizes, before any is read); --max-workloads and
--max-bytes raise the limits.

Writes DIR/report.md and DIR/report.json (gpu_queues/whatif/report.py has the format), and
DIR/replay.json: how each side was made, the Kueue release it ran included. Each side runs
the Kueue release its stack file resolves to where it was read (its own `kueue.version`,
else toolchain/pins.env beside it: the work tree's, or the one at the revision), so a PR
that moves the pin compares the old release with the new. Each side gets a sandbox of its
own, the rehearsal's (sandbox.host.fresh_sandbox): started fresh (a sandbox already
running in this checkout is stopped first) and stopped afterwards (--keep leaves the last
one up). The replay itself
runs inside the sandbox's network namespace (sandbox/replay/engine.py). Needs root, like the
sandbox, and the built toolchain (`make toolchain`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_queues import keys
from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import (
    ROOT,
    StackFileError,
    parse_config,
    read_text,
    resolve_commit,
)
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.tools import kueue_diff
from gpu_queues.whatif.durations import parse_duration
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import Run, align, replay_json, report_json
from sandbox import shape as fake_cluster
from sandbox.host import SandboxError, fresh_sandbox, in_sandbox
from sandbox.paths import STATE
from sandbox.rehearse.deploy import sandbox_stack_file
from sandbox.replay import fast
from sandbox.replay.limits import add_limit_flags, limits_of, mix_size_problem
from sandbox.shape import ShapeError

DEFAULT_OUT = STATE / "what-if"
ENGINES = ("fast", "sandbox")
# On the cluster, waitForPodsReady evicts an admitted workload whose pods are not ready
# after its timeout. The replay's clock is not Kueue's (it jumps from event to event), so in
# the sandbox the timeout is pushed out of reach and the report says what it would do.
PODS_READY_TIMEOUT = "8760h"


class WhatIfError(Exception):
    """The what-if cannot run; the message says why and what to do."""


@dataclass(frozen=True)
class ReplaySide:
    """One stack file to replay: the work tree's (new) or a revision's (base)."""

    name: str  # "new" or "base"
    label: str  # how the report names it
    config: StackConfig
    shape_file: Path  # the stack file the sandbox is shaped from (sandbox.shape)
    notes: list[str] = field(default_factory=list)
    kueue_from: str = ""
    """Where its Kueue release (config.kueue.version) comes from, for messages."""


def kueue_release(stack: str, root: Path, rev: str | None) -> tuple[str, str]:
    """The Kueue release Pulumi.<stack>.yaml resolves to in the work tree (rev None) or at
    `rev`, and where that comes from: its own `kueue.version`, else KUEUE_VERSION of
    toolchain/pins.env in the same tree. The rule of the PR preview's Kueue section
    (gpu_queues.tools.kueue_diff), so the what-if's base runs the release that section calls the
    old one."""
    spec = f"{stack}@{rev}" if rev else stack
    at = f" at {rev}" if rev else ""
    why: object
    try:
        side = kueue_diff.load_side(spec, root)
    except StackFileError as exc:
        why = exc
    except FileNotFoundError:
        why = f"no toolchain/pins.env in {root}"
    else:
        own = bool(side.kueue.get("version"))
        return side.version, ("its own kueue.version" if own else f"toolchain/pins.env{at}")
    raise WhatIfError(f"cannot tell which Kueue release Pulumi.{stack}.yaml{at} runs: {why}")


def whatif_raw(text: str, where: str, release: str | None) -> tuple[dict[str, Any], bool]:
    """The stack config the what-if replays (whatif_stack_file), and whether it follows the
    pin: the connection dropped, the pin's `release` as its `kueue.version` when it sets none."""
    raw = parse_config(text, where)
    raw.pop(keys.KEY_KUBERNETES, None)
    kueue = raw.get(keys.KEY_KUEUE) or {}
    follows_pin = release is not None and isinstance(kueue, dict) and not kueue.get("version")
    if follows_pin:
        raw[keys.KEY_KUEUE] = {**kueue, "version": release}
    return raw, follows_pin


def whatif_stack_file(
    stack: str, text: str, where: str, release: str | None = None
) -> tuple[str, StackConfig, list[str]]:
    """The stack file the what-if starts from, its config, and what was changed and why.

    Only what is the what-if's own: the real cluster's connection (encrypted, meant for the
    real cluster) is dropped so the config loads, waitForPodsReady's timeout is pushed out
    of reach (see PODS_READY_TIMEOUT), and a stack that follows the pin gets `release`
    (kueue_release) as its `kueue.version`: the program's own default is the pin of the work
    tree it runs from, which for a base side is not the pin the stack followed. The rest of
    what the sandbox substitutes (its kubeconfig, the Kueue manifest when unreadable) is the
    rehearsal's, sandbox.rehearse.deploy's sandbox_stack_file, applied once the sandbox is up."""
    raw, follows_pin = whatif_raw(text, where, release)
    try:
        config = load_config(raw)
    except ConfigError as exc:
        raise WhatIfError(f"{where}: the stack config is invalid:\n{exc}") from None
    if not config.kueue.install:
        raise WhatIfError(
            f"{where} does not install Kueue (kueue.install: false), and a fresh sandbox has "
            "none: the what-if replays stacks that install it"
        )
    why = fast.unmodelled(config)
    if why:
        raise WhatIfError(f"{where}: {why}")
    doc = yaml.safe_load(text) or {}
    cfg: dict[str, Any] = doc.setdefault("config", {})
    cfg.pop(keys.stack_file_key(cfg, keys.KEY_KUBERNETES), None)
    if follows_pin:
        kueue_key = keys.stack_file_key(cfg, keys.KEY_KUEUE)
        cfg[kueue_key] = {"version": release, **(cfg.get(kueue_key) or {})}
    notes = push_pods_ready_out(config, cfg)
    return yaml.safe_dump(doc, sort_keys=False), config, notes


def push_pods_ready_out(config: StackConfig, cfg: dict[str, Any]) -> list[str]:
    """Push waitForPodsReady's timeouts out of reach in the stack file's config `cfg` (the
    release's default when the stack sets none); what that changes on the cluster, as notes."""
    notes = []
    ready = config.kueue.manager.wait_for_pods_ready
    gates = config.kueue.manager.feature_gates or {}
    running = kueue_versions.release(config.kueue.version)
    default = running.wait_for_pods_ready_default if running else None
    if ready is None and default and not gates.get("DisableWaitForPodsReady"):
        # The release turns it on when the Configuration has none (v0.19: 30 minutes of
        # Kueue's wall clock, which a long replay outlasts): out of reach all the same.
        kueue_cfg = cfg.setdefault(keys.stack_file_key(cfg, keys.KEY_KUEUE), {})
        kueue_cfg.setdefault("manager", {})["waitForPodsReady"] = {
            "timeout": PODS_READY_TIMEOUT,
            "recoveryTimeout": PODS_READY_TIMEOUT,
        }
        notes.append(
            f"waitForPodsReady: Kueue {config.kueue.version} turns it on when the stack sets "
            f"none; on the cluster, a workload admitted whose pods are not ready after "
            f"{default} is evicted and requeued; the replay's clock is not Kueue's, so there "
            "it stays admitted (shown as unschedulable) and holds its quota"
        )
    elif ready is not None:
        manager = cfg[keys.stack_file_key(cfg, keys.KEY_KUEUE)]["manager"]
        pushed = {"timeout": PODS_READY_TIMEOUT}
        if ready.recovery_timeout is not None:
            pushed["recoveryTimeout"] = PODS_READY_TIMEOUT
        manager["waitForPodsReady"] = {**manager["waitForPodsReady"], **pushed}
        notes.append(
            f"waitForPodsReady: on the cluster, a workload admitted whose pods are not ready "
            f"after {ready.timeout} is evicted and requeued"
            + (
                f" (at most {ready.requeuing_strategy.backoff_limit_count} times, then deactivated)"
                if ready.requeuing_strategy and ready.requeuing_strategy.backoff_limit_count
                else ""
            )
            + "; the replay's clock is not Kueue's, so there it stays admitted (shown as "
            "unschedulable) and holds its quota"
        )
    return notes


def load_replay_side(name: str, stack: str, root: Path, rev: str | None, work: Path) -> ReplaySide:
    """Read one side's stack file, adjust it (whatif_stack_file) into work/<name>/, and check
    that it can shape a sandbox (sandbox.shape: Kueue release, node names) before any
    sandbox is touched."""
    where = f"Pulumi.{stack}.yaml" + (f" at {rev}" if rev else "")
    try:
        text = read_text(stack, root, rev)
    except StackFileError as exc:
        raise WhatIfError(str(exc)) from None
    label = f"{stack}@{resolve_commit(root, rev)[:10]}" if rev else f"{stack} (work tree)"
    release, kueue_from = kueue_release(stack, root, rev)
    adjusted, config, notes = whatif_stack_file(stack, text, where, release)
    folder = work / name / "shape"
    folder.mkdir(parents=True, exist_ok=True)
    shape_file = folder / f"Pulumi.{stack}.yaml"
    shape_file.write_text(adjusted)
    try:
        fake_cluster.shape_of(stack, shape_file, config)
    except ShapeError as exc:
        raise WhatIfError(f"{where}: {exc} (the release from {kueue_from})") from None
    return ReplaySide(name, label, config, shape_file, notes, kueue_from)


def unbuilt_release(side: ReplaySide) -> str | None:
    """Why this machine cannot run the side's Kueue release (its controller binary is not
    linked: `make toolchain` builds only the pin, `make toolchain-all` every supported release),
    else None. Checked for every side before any sandbox is touched: a side is never
    replayed on another release than its own."""
    version = side.config.kueue.version
    missing = fake_cluster.kueue_binary_problem(version)
    if missing is None:
        return None
    return (
        f"{side.label} runs Kueue {version} (from {side.kueue_from}), which is not built here: "
        f"{missing}"
    )


def unbuilt_engine(side: ReplaySide) -> str | None:
    """Why the side cannot run on the fast engine (its stack uses topology-aware scheduling,
    or this machine has no fast engine of its Kueue release), else None."""
    version = side.config.kueue.version
    if tas := fast.topology_problem(side.config):
        return f"{side.label}: {tas}"
    missing = fast.binary_problem(version)
    if missing is None:
        return None
    return f"{side.label} runs Kueue {version} (from {side.kueue_from}): {missing}"


# --- the sandbox --------------------------------------------------------------------------


def replay_side(side: ReplaySide, stack: str, workloads: Path, work: Path, args: Any) -> Run:
    folder = work / side.name
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "run.json"
    out.unlink(missing_ok=True)
    print(f"what-if: {side.label}: fresh sandbox, deploy, replay", file=sys.stderr, flush=True)
    # The rehearsal's fresh sandbox, shaped like the side's stack file (its Kueue release
    # included); the new side's is left up with --keep.
    try:
        with fresh_sandbox(stack, side.shape_file, keep=args.keep and side.name == "new"):
            # What the rehearsal deploys: the connection and (when unreadable here) the Kueue
            # manifest substituted; the sandbox has rendered its release by now.
            stack_file, substituted = sandbox_stack_file(
                stack, side.shape_file, side.config, out_dir=folder
            )
            command = [
                sys.executable, "-m", "sandbox.replay.engine", "--stack", stack,
                "--stack-file", str(stack_file), "--workloads", str(workloads), "--out", str(out),
                "--deploy", "--label", side.label,
            ]  # fmt: skip
            # The connection's substitution goes without saying; a substituted manifest does not.
            for note in [*side.notes, *(n for n in substituted if n.startswith("kueue."))]:
                command += ["--note", note]
            if args.until:
                command += ["--until", args.until]
            if args.quiet:
                command += ["--quiet", str(args.quiet)]
            command += ["--max-workloads", str(args.max_workloads)]
            command += ["--max-bytes", str(args.max_bytes)]
            code = in_sandbox(*command)
    except SandboxError as exc:
        raise WhatIfError(str(exc)) from None
    if code != 0:
        raise WhatIfError(f"the replay of {side.label} failed (exit {code}); its output is above")
    return Run.from_json(json.loads(out.read_text()))


# --- the fast engine -----------------------------------------------------------------------


def replay_side_fast(side: ReplaySide, stack: str, workloads: Path, args: Any) -> Run:
    """The side on the fast engine of its own Kueue release (sandbox.replay.fast): no
    sandbox, no root, no wall-clock wait."""
    print(f"what-if: {side.label}: fast engine, Kueue {side.config.kueue.version}", file=sys.stderr)
    try:
        return fast.replay_mix(
            side.config,
            workloads,
            stack=stack,
            label=side.label,
            until=parse_duration(args.until) if args.until else None,
            limits=limits_of(args),
        )
    except fast.FastEngineError as exc:
        raise WhatIfError(str(exc)) from None


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sandbox.replay.cli", description=__doc__)
    parser.add_argument("--stack", required=True, help="the stack: Pulumi.<stack>.yaml")
    parser.add_argument("--workloads", type=Path, required=True, help="a manifest file or folder")
    parser.add_argument("--base", help="also replay the stack file as it was at this git revision")
    parser.add_argument("--out", type=Path, help=f"report folder (default {DEFAULT_OUT}/<stack>)")
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
    add_limit_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    out: Path = (args.out or DEFAULT_OUT / args.stack).resolve()
    workloads = args.workloads.resolve()
    if not workloads.exists():
        print(f"what-if: no workloads at {args.workloads}", file=sys.stderr)
        return 2
    too_large = mix_size_problem(workloads, limits_of(args))
    if too_large:
        print(f"what-if: {too_large}", file=sys.stderr)
        return 2
    try:
        work = out / "work"
        sides = [load_replay_side("new", args.stack, args.root, None, work)]
        if args.base:
            sides.insert(0, load_replay_side("base", args.stack, args.root, args.base, work))
        for side in sides:
            why = unbuilt_release(side) if args.engine == "sandbox" else unbuilt_engine(side)
            if why:
                raise WhatIfError(why)
        if args.engine == "sandbox":
            runs = {s.name: replay_side(s, args.stack, workloads, work, args) for s in sides}
        else:
            runs = {s.name: replay_side_fast(s, args.stack, workloads, args) for s in sides}
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
