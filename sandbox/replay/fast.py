"""The fast what-if engine: the mix replayed on Kueue's own scheduling code in simulated time,
with no cluster and no wall-clock wait.

The engine is a Go program built from the stack's Kueue release (toolchain/go/whatif,
`.toolchain/bin/gpuq-whatif-<release>`): Kueue's scheduler cache, queue manager, scheduler
and preemptor, workload controller and Job reconciler, in one process, on controller-runtime's
in-memory client and a fake clock that jumps from event to event once everything is quiet.
This module feeds it what the program renders for the stack (the Kueue objects of
gpu_queues.config.render, the manager Configuration of the stack's release, the nodes of
sandbox.shape) and the mix's checked entries, and reads back, per workload, what the report
needs; the rules that turn that into outcomes are the sandbox engine's
(sandbox.replay.tracked.outcome), so both engines report alike.

    python -m sandbox.replay.fast --stack-file FILE --workloads PATH --out RUN.json
        [--stack NAME] [--until 24h] [--label TEXT]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_queues import yamlio
from gpu_queues.config.model import StackConfig
from gpu_queues.config.render import kueue_objects, team_labels
from gpu_queues.release import catalogue
from gpu_queues.release.allowlist import find
from gpu_queues.release.catalogue import CONTROLLER_DEPLOYMENT, KUEUE_NAMESPACE, MANAGER_CONTAINER
from gpu_queues.release.manifest import (
    ManifestError,
    apply_placement,
    load_release,
    render_manager_config,
)
from gpu_queues.release.module import RenderError, module_dir
from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.documents import Limits
from gpu_queues.whatif.durations import format_duration, parse_duration
from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results
from gpu_queues.whatif.workloads import admitted_flavor, eviction
from sandbox import shape
from sandbox.paths import ROOT
from sandbox.replay.engine import flavor_gpus, frameworks
from sandbox.replay.tracked import not_replayed, outcome

BIN = ROOT / ".toolchain" / "bin"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
FAST_KINDS = frozenset({"Job", "Pod"})
# A plain Pod that names a group is one pod of a gang Kueue admits together; the fast engine
# replays single Pods only.
POD_GROUP = "kueue.x-k8s.io/pod-group-name"


class FastEngineError(Exception):
    """The fast engine cannot run; the message says why and what to do."""


def binary(version: str) -> Path:
    """The engine built from Kueue `version` (toolchain/build.sh whatif)."""
    return BIN / f"gpuq-whatif-{version}"


def binary_problem(version: str) -> str | None:
    path = binary(version)
    if os.access(path, os.X_OK):
        return None
    return f"{path.relative_to(ROOT)} is not built: `make toolchain` builds the engine of the pin"


def topology_problem(config: StackConfig) -> str | None:
    """Why the fast engine cannot replay the stack: it runs Kueue's scheduler but not its
    topology-aware scheduling (no TAS cache of nodes, no ungater), so a flavor with a
    topologyName would be replayed by quota alone and show placements no cluster makes.
    None when no flavor names a topology (a Topology no flavor uses changes nothing)."""
    used = sorted({f"{f.name} ({f.topology_name})" for f in config.flavors if f.topology_name})
    if not used:
        return None
    return (
        "the fast engine does not model topology-aware scheduling, and this stack's flavors "
        f"use topologies: {', '.join(used)}; replay it with ENGINE=sandbox, on the real Kueue "
        "and scheduler (docs/what-if.md)"
    )


def controller_pods(config: StackConfig, root: Path = ROOT) -> list[dict[str, Any]]:
    """The pod specs of Kueue's controller, one per replica, as the cluster runs them: they
    take room on a node like any pod (the scheduler puts them where its scores say, a GPU
    node when that scores best), so the engine places them before the mix."""
    key = (config.kueue.model_dump_json(), root)  # what the answer depends on
    if key not in _CONTROLLER_PODS:  # read once: the quota advisor replays one stack often
        _CONTROLLER_PODS[key] = _controller_pods(config, root)
    return [dict(p) for p in _CONTROLLER_PODS[key]]


_CONTROLLER_PODS: dict[tuple[str, Path], tuple[dict[str, Any], ...]] = {}


def _controller_pods(config: StackConfig, root: Path) -> tuple[dict[str, Any], ...]:
    try:
        prepared = load_release(config.kueue, root)
    except (ManifestError, OSError):
        prepared = None
    if prepared is not None:
        deployment = find(
            list(prepared.objects), "apps", "Deployment", KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT
        )
    else:  # the release's own Deployment, with the stack's placement and resources
        try:
            module = module_dir(config.kueue.version, root, offline=True)
        except RenderError as exc:
            raise FastEngineError(str(exc)) from None
        text = (module / "config/components/manager/manager.yaml").read_text()
        deployment = next(
            (d for d in yamlio.load_all(text) if as_dict(d).get("kind") == "Deployment"), None
        )
        spec = as_dict(as_dict(deployment).get("spec"))
        pod = as_dict(as_dict(spec.get("template")).get("spec"))
        containers = [as_dict(c) for c in as_list(pod.get("containers"))]
        manager = next((c for c in containers if c.get("name") == MANAGER_CONTAINER), {})
        apply_placement(config.kueue, spec, pod, manager)
    spec = as_dict(as_dict(deployment).get("spec"))
    pod = as_dict(as_dict(spec.get("template")).get("spec"))
    replicas = spec.get("replicas")
    return (pod,) * (replicas if isinstance(replicas, int) and replicas >= 0 else 1) if pod else ()


def manager_configuration(config: StackConfig, root: Path = ROOT) -> str:
    """The Kueue manager Configuration the stack's release runs with: the ConfigMap of the
    manifest the program installs, or, when that cannot be read here, the release's own
    Configuration with the stack's settings laid over it the same way."""
    try:
        prepared = load_release(config.kueue, root)
    except (ManifestError, OSError):
        prepared = None
    if prepared is not None:
        for obj in prepared.objects:
            meta = obj.get("metadata") or {}
            if obj.get("kind") == "ConfigMap" and meta.get("name") == catalogue.MANAGER_CONFIGMAP:
                return str((obj.get("data") or {}).get(catalogue.MANAGER_CONFIG_KEY) or "")
    try:
        module = module_dir(config.kueue.version, root, offline=True)
    except RenderError as exc:
        raise FastEngineError(str(exc)) from None
    base = (module / "config/components/manager/controller_manager_config.yaml").read_text()
    return render_manager_config(base, config.kueue.manager)


@functools.cache
def release_crds(version: str, root: Path = ROOT) -> list[dict[str, Any]]:
    """The release's CustomResourceDefinitions (its module's config/components/crd), whose
    schemas' defaults the API server would fill in every Kueue object. Read once per process
    (1.5 s of YAML, more than a small replay takes; the quota advisor replays hundreds of
    times): the list is shared, so callers only read it."""
    try:
        module = module_dir(version, root, offline=True)
    except RenderError as exc:
        raise FastEngineError(str(exc)) from None
    out = []
    for path in sorted((module / "config/components/crd/bases").glob("*.yaml")):
        out += [d for d in yamlio.load_all(path.read_text()) if isinstance(d, dict)]
    return out


def namespaces(config: StackConfig) -> list[dict[str, Any]]:
    """The namespaces as they stand once the program ran: each team's with its labels (the
    program's own, or the adopted namespace's), and `default`."""
    out: dict[str, dict[str, Any]] = {}
    for team in config.teams:
        labels = {NAMESPACE_NAME_LABEL: team.namespace}
        labels.update({k: str(v) for k, v in team_labels({"name": team.name}).items()})
        out[team.namespace] = labels
    out.setdefault("default", {NAMESPACE_NAME_LABEL: "default"})
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        for ns, labels in sorted(out.items())
    ]


def unmodelled(config: StackConfig) -> str | None:
    """Why a replay of this stack would not be honest (None when it would): a provisioning
    check holds each workload until the cluster autoscaler has its nodes, and neither engine
    (this one, nor the sandbox's) has an autoscaler to answer it."""
    if config.provisioning is None:
        return None
    names = ", ".join(c.name for c in config.provisioning.checks)
    return (
        f"the stack has provisioning checks ({names}): Kueue holds each of their workloads "
        "until the cluster autoscaler has made its nodes, and the what-if has no autoscaler "
        "to model (when it answers, whether it fails, which nodes it adds), so a replay would "
        "show those queues admitting at once or never; replay a copy of the stack without "
        "gpu-queues:provisioning (docs/what-if.md)"
    )


def not_fast(e: Entry) -> str | None:
    """Why the fast engine does not replay a valid entry (None when it does)."""
    if e.kind not in FAST_KINDS:
        return f"the fast engine replays Jobs and Pods, not {e.kind}s; ENGINE=sandbox does"
    meta = e.manifest.get("metadata") or {}
    named = (m for k in ("labels", "annotations") if isinstance(m := meta.get(k), dict))
    if e.kind == "Pod" and any(POD_GROUP in m for m in named):
        return "the fast engine replays single Pods, not pod groups; ENGINE=sandbox does"
    return None


def engine_input(
    config: StackConfig,
    entries: list[Entry],
    configuration: str,
    until: float | None,
    workload_uids: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    why = unmodelled(config)
    if why:
        raise FastEngineError(why)
    jobs = [
        {
            "index": e.index,
            "kind": e.kind,
            "manifest": e.manifest,
            "submitAt": e.submit_at,
            "duration": -1 if e.duration is None else e.duration,
        }
        for e in entries
        if e.status == "ok" and not_fast(e) is None
    ]
    return {
        "crds": release_crds(config.kueue.version),
        "objects": namespaces(config) + kueue_objects(config),
        "configuration": configuration,
        "nodes": shape.nodes(config),
        "pods": controller_pods(config),
        "jobs": jobs,
        "until": until or 0,
        "workloadUIDs": {
            str(e.index): uid
            for e in entries
            if (uid := (workload_uids or {}).get((e.namespace, e.name)))
        },
    }


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
    )
    if line.get("firstAdmission"):
        result.first_flavor = admitted_flavor({"status": {"admission": line["firstAdmission"]}})
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
) -> Run:
    """Read and check the mix against the stack, replay it on the fast engine of the stack's
    Kueue release, and sum it up. `workload_uids` (namespace, name) -> UID: another run's
    Workload UIDs, for the ties Kueue breaks by UID (the cross-check)."""
    configuration = manager_configuration(config, root)
    catalog = Catalog.from_stack(config, frameworks(configuration))
    entries = load_mix(workloads, catalog, root, limits)
    return replay_entries(
        config, entries, configuration, stack=stack, label=label, until=until, notes=notes,
        nodes=nodes, workload_uids=workload_uids,
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
) -> Run:
    """Replay checked entries (a mix as `load_mix` reads it, or one made from a live cluster:
    sandbox/replay/eta.py) on the fast engine of the stack's Kueue release, and sum it up."""
    version = config.kueue.version
    if why := topology_problem(config):
        raise FastEngineError(why)
    started = time.monotonic()
    document = engine_input(config, entries, configuration, until, workload_uids)
    if nodes is not None:  # another cluster's nodes than the stack declares (the cross-check)
        document["nodes"] = nodes
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
        kueue_version=version,
        kueue_binary=str(binary(version).relative_to(ROOT)),
        flavor_gpus=flavor_gpus(config),
        engine="fast",
        notes=list(notes or []),
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.replay.fast", description=__doc__)
    parser.add_argument("--stack-file", type=Path, required=True)
    parser.add_argument("--stack", help="the stack's name, for the report")
    parser.add_argument("--workloads", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--until", help="stop the simulated clock there (e.g. 24h)")
    parser.add_argument("--label", help="how the report names this run")
    args = parser.parse_args(argv)
    config = shape.load_stack(args.stack_file)
    stack = args.stack or args.stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
    try:
        run = replay_mix(
            config,
            args.workloads,
            stack=stack,
            label=args.label or stack,
            until=parse_duration(args.until) if args.until else None,
        )
    except FastEngineError as exc:
        print(f"what-if: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(run.to_json(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
