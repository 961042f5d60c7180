"""The sides of a what-if, before any engine runs: the stack file as it is in the work tree
(new) and, with a base, as it was at a git revision, each read, adjusted for the replay
(whatif_stack_file) and checked; and a side replayed on the fast engine. The command is
gpu_queues/whatif/cli.py; the sandbox replays a side on a real control plane
(sandbox/replay/cli.py).

Each side runs the Kueue release its stack file resolves to where it was read
(gpu_queues.release.stack_release: its own `kueue.version`, else toolchain/pins.env beside
it, the work tree's or the one at the revision), so a PR that moves the pin compares the old
release with the new.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from gpu_queues import files, keys, yamlio
from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import (
    STACK_BOUNDS,
    StackFileError,
    parse_config,
    read_text,
    resolve_commit,
)
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.progress import Progress
from gpu_queues.release.stack_release import kueue_release_problem, stack_release
from gpu_queues.whatif import fast
from gpu_queues.whatif.changes import ChangeError, StackChange, changed_over, parse_flag
from gpu_queues.whatif.durations import parse_duration
from gpu_queues.whatif.engine_input import FastEngineError, unmodelled
from gpu_queues.whatif.limits import limits_of
from gpu_queues.whatif.nodes import NodeNameClash, nodes
from gpu_queues.whatif.report import Run

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
    stack_file: Path
    """The stack file as the what-if adjusted it (whatif_stack_file); the sandbox is shaped
    from it and deploys it."""
    notes: list[str] = field(default_factory=list)
    kueue_from: str = ""
    """Where its Kueue release (config.kueue.version) comes from, for messages."""
    changes: tuple[StackChange, ...] = ()
    """The stack's changes at instants of the replay (load_changes)."""


def kueue_release(stack: str, root: Path, rev: str | None) -> tuple[str, str]:
    """The Kueue release Pulumi.<stack>.yaml resolves to in the work tree (rev None) or at
    `rev` (gpu_queues.release.stack_release), and where that comes from."""
    at = f" at {rev}" if rev else ""
    why: object
    try:
        found = stack_release(stack, root, rev)
    except StackFileError as exc:
        why = exc
    except FileNotFoundError:
        why = f"no toolchain/pins.env in {root}"
    else:
        return found.version, found.source
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
    why = unmodelled(config)
    if why:
        raise WhatIfError(f"{where}: {why}")
    doc = yamlio.load(text, where) or {}
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
    that either engine can run it (a supported Kueue release, node names that do not clash)
    before anything is replayed."""
    where = f"Pulumi.{stack}.yaml" + (f" at {rev}" if rev else "")
    try:
        text = read_text(stack, root, rev)
    except StackFileError as exc:
        raise WhatIfError(str(exc)) from None
    label = f"{stack}@{resolve_commit(root, rev)[:10]}" if rev else f"{stack} (work tree)"
    release, kueue_from = kueue_release(stack, root, rev)
    adjusted, config, notes = whatif_stack_file(stack, text, where, release)
    folder = work / name / "shape"  # the sandbox shapes its cluster from it (sandbox.shape)
    folder.mkdir(parents=True, exist_ok=True)
    stack_file = folder / f"Pulumi.{stack}.yaml"
    stack_file.write_text(adjusted)
    try:
        why = kueue_release_problem(stack, config.kueue.version)
        if why is None:
            nodes(config)  # name clashes are refused before anything starts
    except NodeNameClash as exc:
        why = str(exc)
    if why:
        raise WhatIfError(f"{where}: {why} (the release from {kueue_from})")
    return ReplaySide(name, label, config, stack_file, notes, kueue_from)


def load_changes(side: ReplaySide, flags: Sequence[str], cwd: Path) -> ReplaySide:
    """The side with the stack's changes at instants of the replay (`--change AT=STACK_FILE`,
    gpu_queues.whatif.changes): each file read and validated as the program would (with what
    the what-if adjusts in any stack file, whatif_raw, and the side's Kueue release where it
    names none), then held to what a change may alter."""
    read: list[tuple[float, str, StackConfig]] = []
    try:
        for flag in flags:
            at, given = parse_flag(flag)
            path = Path(given) if Path(given).is_absolute() else cwd / given
            where = f"--change {flag}"
            try:
                text = files.read_text(path, given, STACK_BOUNDS.max_bytes)
            except files.NotReadable as exc:
                raise WhatIfError(f"{where}: {exc}") from None
            raw, _ = whatif_raw(text, given, side.config.kueue.version)
            try:
                config = load_config(raw)
            except ConfigError as exc:
                raise WhatIfError(f"{where}: the stack config is invalid:\n{exc}") from None
            read.append((at, given, config))
        changes = changed_over(side.config, read)
    except (ChangeError, StackFileError) as exc:
        raise WhatIfError(str(exc)) from None
    return replace(side, changes=tuple(changes))


def unbuilt_engine(side: ReplaySide) -> str | None:
    """Why the side cannot run on the fast engine (this machine has no fast engine of its
    Kueue release), else None."""
    version = side.config.kueue.version
    missing = fast.binary_problem(version)
    if missing is None:
        return None
    return f"{side.label} runs Kueue {version} (from {side.kueue_from}): {missing}"


def replay_side_fast(
    side: ReplaySide, stack: str, workloads: Path, args: Any, progress: Progress | None = None
) -> Run:
    """The side on the fast engine of its own Kueue release (gpu_queues.whatif.fast): no
    sandbox, no root, no wall-clock wait."""
    line = f"what-if: {side.label}: fast engine, Kueue {side.config.kueue.version}"
    if progress is None:
        print(line, file=sys.stderr)
    else:
        progress.say(line)
        progress.update(f"replaying {side.label} on the fast engine")
    try:
        return fast.replay_mix(
            side.config,
            workloads,
            stack=stack,
            label=side.label,
            until=parse_duration(args.until) if args.until else None,
            limits=limits_of(args),
            changes=side.changes,
        )
    except FastEngineError as exc:
        raise WhatIfError(str(exc)) from None
