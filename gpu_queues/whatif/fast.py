"""The fast what-if engine: the mix replayed on Kueue's own scheduling code in simulated time,
with no cluster and no wall-clock wait, and no sandbox or root.

The engine is a Go program built from the stack's Kueue release (toolchain/go/whatif,
`.toolchain/bin/gpuq-whatif-<release>`): Kueue's scheduler cache, queue manager, scheduler
and preemptor, workload controller and Job reconciler, in one process, on controller-runtime's
in-memory client and a fake clock that jumps from event to event once everything is quiet.
This module feeds it what the program renders for the stack (gpu_queues.whatif.engine_input:
the Kueue objects, the manager Configuration of the stack's release, the nodes the stack
declares) and the mix's checked entries, and reads back, per workload, what the report needs;
the rules that turn that into outcomes are shared with the sandbox's engine
(gpu_queues.whatif.outcome), so both engines report alike.

From Python, `replay` (gpu_queues.whatif.replay; docs/what-if.md, "From Python"):

    from gpu_queues.whatif import replay
    run = replay(config, "workloads/staging", stack="staging")  # a gpu_queues.whatif.report.Run

From the shell:

    python -m gpu_queues.whatif.fast --stack-file FILE --workloads PATH --out RUN.json
        [--stack NAME] [--until 24h] [--label TEXT]

The engines are looked up in $GPUQ_WHATIF_BIN, else in the checkout's .toolchain/bin, where
`make toolchain` builds the pin's (`make toolchain KUEUE_VERSIONS=<release>` another's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import StackFileError, parse_config
from gpu_queues.release.module import ROOT
from gpu_queues.whatif.changes import StackChange, changed_over
from gpu_queues.whatif.changes import notes as change_notes
from gpu_queues.whatif.documents import Limits, MixTooLarge
from gpu_queues.whatif.durations import DurationError, format_duration, parse_duration
from gpu_queues.whatif.engine_input import (
    FastEngineError,
    engine_input,
    flavor_gpus,
    frameworks,
    manager_configuration,
    not_fast,
)
from gpu_queues.whatif.fits import never_fits
from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from gpu_queues.whatif.outcome import not_replayed, outcome, replicas_row
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results
from gpu_queues.whatif.workloads import admitted_flavor, eviction

BIN = ROOT / ".toolchain" / "bin"
# A folder of built engines other than the checkout's (a library user's, or a shared cache).
ENGINE_DIR_ENV = "GPUQ_WHATIF_BIN"


def engine_dir() -> Path:
    """Where the engines are: $GPUQ_WHATIF_BIN, else the checkout's .toolchain/bin."""
    return Path(os.environ.get(ENGINE_DIR_ENV) or BIN)


def binary(version: str) -> Path:
    """The engine built from Kueue `version` (toolchain/build.sh whatif)."""
    return engine_dir() / f"gpuq-whatif-{version}"


def shown(path: Path) -> str:
    """A path as messages and reports show it: relative to the checkout when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def binary_problem(version: str) -> str | None:
    path = binary(version)
    if os.access(path, os.X_OK):
        return None
    how = "`make toolchain` builds the engine of the pin"
    if os.environ.get(ENGINE_DIR_ENV):
        how += (
            f" (into .toolchain/bin of a gpu-queues checkout; ${ENGINE_DIR_ENV} names this folder)"
        )
    return f"{shown(path)} is not built: {how}"


def run_engine(version: str, document: dict[str, Any]) -> list[dict[str, Any]]:
    why = binary_problem(version)
    if why:
        raise FastEngineError(why)
    done = subprocess.run(
        [str(binary(version))],
        input=json.dumps(document),
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GPUQ_KUEUE_VERSION": version},
    )
    if done.returncode != 0:
        raise FastEngineError(
            f"the engine of Kueue {version} failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-2000:]}"
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _evictions(conditions: list[list[dict[str, Any]]]) -> list[str]:
    out = []
    for conds in conditions:
        why = eviction({"status": {"conditions": conds}})
        out.append(f"{why[0]}: {why[1]}" if why else "evicted")
    return out


def _intervals(runs: list[dict[str, Any]]) -> list[tuple[float, float | None]]:
    """The engine's runs as WorkloadResult.intervals: none empty."""
    out: list[tuple[float, float | None]] = []
    for r in runs:
        start, end = float(r["start"]), r.get("end")
        if end is None or float(end) > start:
            out.append((start, None if end is None else float(end)))
    return out


def _timeline(steps: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    """The engine's steps as WorkloadResult.timeline (the flavor and the reason read by the
    rules the sandbox engine reads them by)."""
    out = []
    for s in steps:
        if s.get("event") == "admitted":
            detail = admitted_flavor({"status": {"admission": s.get("admission")}}) or ""
        elif s.get("event") == "ran":
            detail = ", ".join(s.get("nodes") or [])
        else:
            why = eviction({"status": {"conditions": s.get("why") or []}})
            detail = why[0] if why else ""
        out.append((float(s["at"]), str(s.get("event")), detail))
    return out


def result_of(e: Entry, line: dict[str, Any]) -> WorkloadResult:
    result = outcome(
        e,
        line.get("workload"),
        running=bool(line.get("allRunning")),
        stuck=line.get("stuck") or None,
        evictions=_evictions(line.get("evictions") or []),
        admitted_at=line.get("admittedAt"),
        gpu_seconds=float(line.get("runSeconds") or 0.0),
        problem=line.get("problem") or None,
        intervals=_intervals(line.get("intervals") or []),
        timeline=_timeline(line.get("timeline") or []),
        deleted=bool(line.get("deleted")),
    )
    if line.get("firstAdmission"):
        result.first_flavor = admitted_flavor({"status": {"admission": line["firstAdmission"]}})
    if e.kind in ("Deployment", "LeaderWorkerSet"):
        result = replicas_row(e, result, line.get("replicas") or [], line.get("admittedAt"))
    return result


def replay_mix(
    config: StackConfig,
    workloads: Path,
    *,
    stack: str,
    label: str,
    until: float | None = None,
    root: Path = ROOT,
    notes: list[str] | None = None,
    limits: Limits | None = None,
    nodes: list[dict[str, Any]] | None = None,
    workload_uids: Mapping[tuple[str, str], str] | None = None,
    placement_order: Sequence[tuple[str, str]] = (),
    changes: Sequence[StackChange] = (),
) -> Run:
    """Read and check the mix against the stack, replay it on the fast engine of the stack's
    Kueue release, and sum it up. `changes`: the stack's changes at instants of the replay
    (gpu_queues.whatif.changes). For the cross-check, another run's choices a cluster makes
    at random: `workload_uids` (namespace, name) -> UID, its Workload UIDs, for the ties Kueue
    breaks by UID; `placement_order`, its admissions in the order its watch saw them (a
    (namespace, name) each), for the order in which jobs admitted together reach the
    scheduler."""
    configuration = manager_configuration(config, root)
    catalog = Catalog.from_stack(config, frameworks(configuration))
    entries = load_mix(workloads, catalog, root, limits)
    return replay_entries(
        config, entries, configuration, stack=stack, label=label, until=until, notes=notes,
        nodes=nodes, workload_uids=workload_uids, placement_order=placement_order,
        changes=changes,
    )  # fmt: skip


def replay_entries(
    config: StackConfig,
    entries: list[Entry],
    configuration: str,
    *,
    stack: str,
    label: str,
    until: float | None = None,
    notes: list[str] | None = None,
    nodes: list[dict[str, Any]] | None = None,
    workload_uids: Mapping[tuple[str, str], str] | None = None,
    placement_order: Sequence[tuple[str, str]] = (),
    changes: Sequence[StackChange] = (),
) -> Run:
    """Replay checked entries (a mix as `load_mix` reads it, or one made from a live cluster:
    gpu_queues/tools/eta.py) on the fast engine of the stack's Kueue release, with the stack's
    `changes` at their instants, and sum it up."""
    version = config.kueue.version
    started = time.monotonic()
    document = engine_input(config, entries, configuration, until, workload_uids, placement_order)
    if nodes is not None:  # another cluster's nodes than the stack declares (the cross-check)
        document["nodes"] = nodes
    document["changes"] = [{"at": c.at, "objects": list(c.objects)} for c in changes]
    lines = run_engine(version, document)
    wall = time.monotonic() - started
    by_index = {int(x["index"]): x for x in lines if x.get("type") == "workload"}
    summary = next((x for x in lines if x.get("type") == "summary"), {})
    results = []
    for e in entries:
        if e.index in by_index:
            results.append(result_of(e, by_index[e.index]))
        elif e.status == "ok":  # a kind the fast engine does not replay
            results.append(
                WorkloadResult(
                    e.name,
                    e.namespace,
                    e.queue,
                    "unsupported",
                    message=not_fast(e),
                    kind=e.kind,
                    team=e.team,
                    cluster_queue=e.cluster_queue,
                    gpus=e.gpus,
                    submit_at=e.submit_at,
                )
            )
        else:
            results.append(not_replayed(e))
    meta = RunMeta(
        stack=stack,
        source=label,
        simulated_seconds=float(summary.get("simulatedSeconds") or 0.0),
        wall_seconds=round(wall, 3),
        events=int(summary.get("instants") or 0),
        scheduling_cycles=int(summary.get("cycles") or 0),
        kueue_version=version,
        kueue_binary=shown(binary(version)),
        flavor_gpus=flavor_gpus(config),
        engine="fast",
        notes=[
            *(notes or []),
            *never_fits(config, entries, document["nodes"], document["objects"]),
            *change_notes(changes),
        ],
    )
    for loop in summary.get("churn") or []:
        meta.notes.append(
            f"at {format_duration(float(loop['at']))} Kueue preempted and readmitted in a loop "
            "(the same workloads came to hold quota again and again); on a cluster each turn "
            "takes as long as evicted pods take to stop, and the turns go on until something "
            "else happens; the replay went on to its next event from one turn of the loop"
        )
    teams = team_results(results, [(t.name, t.cluster_queue) for t in config.teams])
    return Run(results, teams, meta)


def replay(
    config: StackConfig | Mapping[str, Any],
    mix: Path | str | Sequence[Entry],
    *,
    stack: str = "stack",
    label: str | None = None,
    until: float | str | None = None,
    limits: Limits | None = None,
    root: Path = ROOT,
    changes: Sequence[tuple[float | str, StackConfig | Mapping[str, Any]]] = (),
) -> Run:
    """Replay a workload mix against a stack on the fast engine of the stack's Kueue release,
    and return what became of every workload and team (a gpu_queues.whatif.report.Run: its
    `workloads`, `teams` and `meta`; `to_json()` is replay.json's form). No cluster, no
    sandbox, no root: only the engine of that release, built (module docstring).

    `config`: a StackConfig, or the stack config as a mapping (the keys of Pulumi.<stack>.yaml
    without the project prefix, as GpuQueuesArgs.from_config takes them), validated as the
    program validates it (ConfigError naming every bad key); its `kubernetes` connection, the
    real cluster's, is not read. `mix`: a manifest file or folder, as `make what-if WORKLOADS=`
    takes it, or entries already read and checked against the stack (gpu_queues.whatif.mix.
    load_mix). `until`: where the simulated clock stops, in seconds or as a duration ("24h").
    `limits`: how large a mix is read (gpu_queues.whatif.documents.Limits; MixTooLarge over
    them). `root`: the gpu-queues checkout whose Kueue modules (toolchain/go/kueue) give the
    release's Configuration and CRDs (the report names the mix's files relative to it).
    `changes`: the stack's changes mid-replay, (instant, the stack config from then on) each,
    the instant in seconds or as a duration, the config as `config` is given
    (gpu_queues.whatif.changes says what a change may alter; ChangeError when it alters more).

    FastEngineError when the engine cannot run the stack (not built, provisioning checks),
    with what to do."""
    config = _stack_config(config)
    stop = parse_duration(until) if isinstance(until, str) else until
    shown_label = label or stack
    changed = changed_over(config, [
        (parse_duration(at) if isinstance(at, str) else float(at), f"change {i + 1}",
         _stack_config(after))
        for i, (at, after) in enumerate(changes)
    ])  # fmt: skip
    if isinstance(mix, str | Path):
        return replay_mix(
            config, Path(mix).resolve(), stack=stack, label=shown_label, until=stop, root=root,
            limits=limits, changes=changed,
        )  # fmt: skip
    configuration = manager_configuration(config, root)
    return replay_entries(
        config, list(mix), configuration, stack=stack, label=shown_label, until=stop,
        changes=changed,
    )  # fmt: skip


def _stack_config(config: StackConfig | Mapping[str, Any]) -> StackConfig:
    """A stack config as `replay` takes one: validated when given as its keys, the real
    cluster's connection left out."""
    if isinstance(config, StackConfig):
        return config
    return load_config({k: v for k, v in config.items() if k != keys.KEY_KUBERNETES})


def load_stack_file(path: Path) -> StackConfig:
    """A stack file's config through the program's models (StackFileError, ConfigError)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise StackFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return load_config(parse_config(text, path.name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_queues.whatif.fast", description=__doc__)
    parser.add_argument("--stack-file", type=Path, required=True)
    parser.add_argument("--stack", help="the stack's name, for the report")
    parser.add_argument("--workloads", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--until", help="stop the simulated clock there (e.g. 24h)")
    parser.add_argument("--label", help="how the report names this run")
    args = parser.parse_args(argv)
    stack = args.stack or args.stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
    try:
        config = load_stack_file(args.stack_file)
        run = replay_mix(
            config,
            args.workloads,
            stack=stack,
            label=args.label or stack,
            until=parse_duration(args.until) if args.until else None,
        )
    except ConfigError as exc:
        print(f"what-if: {args.stack_file}: the stack config is invalid:\n{exc}", file=sys.stderr)
        return 2
    except (StackFileError, FastEngineError, MixTooLarge, DurationError) as exc:
        print(f"what-if: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(run.to_json(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
