"""Replays a workload mix on the sandbox's real Kueue and kube-scheduler, and records what
happened to every workload: reads and checks the mix against the stack as deployed, replays
it in simulated time (sandbox/replay/timeline.py, watching the cluster through
sandbox/replay/watch.py) and sums it up (gpu_queues.whatif.report).

Runs inside the sandbox's network namespace:
    python -m sandbox.replay.engine --stack NAME --stack-file FILE --workloads PATH --out RUN.json
        [--deploy] [--until 24h] [--quiet 1.0] [--label TEXT] [--max-workloads N] [--max-bytes N]
        [--changes CHANGES.json]

--changes: the stack's changes at instants of the replay, as the what-if command worked them
out on the host (gpu_queues.whatif.changes: a JSON list of StackChange.to_json).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.client import file_client
from gpu_queues.whatif.changes import ChangeError, StackChange
from gpu_queues.whatif.changes import notes as change_notes
from gpu_queues.whatif.documents import Limits, MixTooLarge
from gpu_queues.whatif.durations import parse_duration
from gpu_queues.whatif.engine_input import flavor_gpus, frameworks
from gpu_queues.whatif.fits import never_fits
from gpu_queues.whatif.limits import add_limit_flags, limits_of
from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from gpu_queues.whatif.podsets import pod_sets
from gpu_queues.whatif.report import Run, RunMeta, team_results
from gpu_queues.whatif.workloads import Rest
from sandbox import shape as fake_cluster
from sandbox.paths import KUBECONFIG, ROOT
from sandbox.rehearse.deploy import deploy
from sandbox.rehearse.kube import RehearsalClient, running_kueue
from sandbox.replay.gate import GateError
from sandbox.replay.timeline import DEFAULT_QUIET, Options, Replay

KUEUE_CONFIG_PATH = "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
LONG_REQUEUE_GATE = "SchedulerLongRequeueInterval"  # Kueue's 10 s requeue batches
LONG_REQUEUE_QUIET = 11.0


def live_frameworks(rest: Rest) -> list[str]:
    """The integrations the running Kueue is configured with (its manager ConfigMap)."""
    cm = rest.get(KUEUE_CONFIG_PATH)
    return frameworks(cm.get("data", {}).get(KUEUE_CONFIG_KEY, ""))


def wall_clock_fairness(config: StackConfig) -> list[str]:
    """What the report says of a stack whose queue order follows admission fair sharing:
    Kueue decays the usage on its wall clock, which the sandbox's replay compresses."""
    scoped = [t.name for t in config.teams if t.admission_scope is not None]
    if config.kueue.manager.admission_fair_sharing is None or not scoped:
        return []
    return [
        "admission fair sharing (teams " + ", ".join(scoped) + "): on the sandbox Kueue samples "
        "and decays each LocalQueue's usage on its wall clock, while the replay's hours pass in "
        "minutes, so the order of those teams' queues is not a cluster's; the fast engine "
        "replays it on its simulated clock"
    ]


def quiet_for(config: StackConfig) -> float:
    """The quiet spell for a stack: longer when Kueue batches its retries by 10 s."""
    gates = config.kueue.manager.feature_gates or {}
    return LONG_REQUEUE_QUIET if gates.get(LONG_REQUEUE_GATE) else DEFAULT_QUIET


# Job, StatefulSet, Deployment: kube-controller-manager's controllers; JobSet, LeaderWorkerSet,
# RayCluster, the Kubeflow v1 jobs, MPIJob: their own controllers, which the sandbox runs when
# the stack's Kueue has their integrations (sandbox/jobset.py, sandbox/lws.py, sandbox/kuberay.py,
# sandbox/training_operator.py, sandbox/mpi_operator.py), the only way they reach the mix
# (gpu_queues.whatif.mix checks the integration first). TrainJob: the Trainer's manager,
# beside JobSet's (sandbox/trainer.py), its runtimes created first (owners.install_runtimes).
SANDBOX_KINDS = frozenset(
    {"Job", "Pod", "JobSet", "LeaderWorkerSet", "StatefulSet", "Deployment", "RayCluster"}
    | {"PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob", "TrainJob"}
)
# Kinds whose controller the sandbox runs (KubeRay's operator: sandbox/kuberay.py) but does not
# replay, and why.
NOT_REPLAYED = {
    "RayJob": "the sandbox's KubeRay cannot end a RayJob (it reads the job's status from the Ray "
    "head's dashboard, which kwok's pods do not serve); ENGINE=fast replays it",
}


def on_the_sandbox(entry: Entry) -> Entry:
    """The entry as the sandbox replays it: a kind whose controller the sandbox does not run
    (SANDBOX_KINDS), or does not replay (NOT_REPLAYED: a RayJob), is unsupported here, though
    the fast engine may replay it (it plays their controllers as far as Kueue reads them); so
    is an LWS of no groups
    (lws_groups_problem), and a TrainJob whose runtime holds a step back until another
    completes (steps_problem)."""
    if entry.status != "ok":
        return entry
    why = lws_groups_problem(entry) if entry.kind == "LeaderWorkerSet" else None
    why = steps_problem(entry) if entry.kind == "TrainJob" else why
    if entry.kind not in SANDBOX_KINDS:
        why = NOT_REPLAYED.get(
            entry.kind, f"the sandbox has no {entry.kind} controller; ENGINE=fast replays it"
        )
    if why is None:
        return entry
    return dataclasses.replace(entry, status="unsupported", problem=why, manifest={})


def lws_groups_problem(entry: Entry) -> str | None:
    """An LWS of no groups has no Workload to follow (Kueue makes one per group, each followed
    as a workload of its own and summed up into the LWS's row: sandbox/replay/groups.py)."""
    groups = {ps.copies for ps in pod_sets(entry.kind, entry.manifest)}
    if groups != {0}:
        return None
    return (
        "spec.replicas: 0 groups; Kueue makes a Workload per group of an LWS, so one of no groups "
        "has none to queue and the sandbox's replay none to follow; replay it with ENGINE=fast"
    )


def steps_problem(entry: Entry) -> str | None:
    """A TrainJob's runtime whose replicated job `dependsOn` another's `Complete` (the Trainer's
    torchtune runtimes: the trainer after the initializers) never runs whole on the sandbox:
    JobSet's controller holds that step back until the other's pods succeed, and kwok's pods
    run until the replay ends them, at the TrainJob's duration counted from when all its pods
    run; so it would stay admitted with its pods not running. The fast engine starts every step
    together (docs/what-if.md, What the replay does not model)."""
    spec = ((entry.runtime or {}).get("spec") or {}).get("template", {}).get("spec") or {}
    for job in spec.get("replicatedJobs") or []:
        for dep in job.get("dependsOn") or []:
            if dep.get("status") == "Complete":
                return (
                    f"its runtime's replicated job {job.get('name')} waits for {dep.get('name')} "
                    "to complete (dependsOn), which its kwok pods never do before the replay "
                    "ends the whole TrainJob; ENGINE=fast replays it (every step together)"
                )
    return None


def replay_mix(
    config: StackConfig,
    workloads: Path,
    *,
    stack: str,
    label: str,
    options: Options | None = None,
    root: Path = ROOT,
    notes: list[str] | None = None,
    limits: Limits | None = None,
    changes: tuple[StackChange, ...] = (),
) -> Run:
    """Read and check the mix against the stack as deployed, replay it with the stack's
    `changes` at their instants, and sum it up."""
    rest = Rest(file_client(KUBECONFIG))
    # The release the run is made on, read from the running controller (the rehearsal's
    # check): a side is never replayed on another release than its stack file's.
    kueue = running_kueue(RehearsalClient(), config.kueue.version)
    catalog = Catalog.from_stack(config, live_frameworks(rest))
    entries = [on_the_sandbox(e) for e in load_mix(workloads, catalog, root, limits)]
    started = time.monotonic()
    replay = Replay(entries, options, changes)
    try:
        results = replay.run()
    finally:
        replay.close()
    wall = time.monotonic() - started
    settles = replay.settles or [0.0]
    meta = RunMeta(
        stack=stack,
        source=label,
        simulated_seconds=replay.now,
        wall_seconds=round(wall, 1),
        events=replay.batches,
        settle_p50_seconds=round(statistics.median(settles), 2),
        settle_max_seconds=round(max(settles), 2),
        quiet_seconds=replay.options.quiet,
        longest_silence_seconds=round(max(replay.silences or [0.0]), 2),
        kueue_version=kueue.version,
        kueue_image=kueue.image,
        kueue_binary=kueue.binary,
        flavor_gpus=flavor_gpus(config),
        notes=[
            *(notes or []),
            *wall_clock_fairness(config),
            *never_fits(config, entries),
            *change_notes(changes),
            *replay.notes,
        ],
    )
    longest = max(replay.silences or [0.0])
    if longest > 0.75 * replay.options.quiet:
        meta.notes.append(
            f"the cluster paused {longest:.1f}s mid-reaction, close to the {replay.options.quiet}s "
            "of quiet that count as settled; replay again with a longer quiet spell (QUIET=) "
            "to be sure no reaction was cut short"
        )
    teams = team_results(results, [(t.name, t.cluster_queue) for t in config.teams])
    return Run(results, teams, meta)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.replay.engine", description=__doc__)
    parser.add_argument("--stack", required=True)
    parser.add_argument("--stack-file", type=Path, required=True)
    parser.add_argument("--workloads", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--deploy", action="store_true", help="pulumi up the stack file first")
    parser.add_argument("--until", help="stop the simulated clock there (e.g. 24h)")
    parser.add_argument(
        "--quiet", type=float, help=f"seconds of no change that count as settled ({DEFAULT_QUIET})"
    )
    parser.add_argument("--label", help="how the report names this run")
    parser.add_argument("--note", action="append", default=[])
    parser.add_argument("--changes", type=Path, help="the stack's changes (a JSON list)")
    add_limit_flags(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("KUBECONFIG", str(KUBECONFIG))
    config = fake_cluster.load_stack(args.stack_file)
    if args.deploy:
        deploy(args.stack, args.stack_file)
    until = parse_duration(args.until) if args.until else None
    try:
        changes = (
            tuple(StackChange.from_json(c) for c in json.loads(args.changes.read_text()))
            if args.changes
            else ()
        )
    except (OSError, ValueError, ChangeError) as exc:
        print(f"replay: --changes {args.changes}: {exc}", file=sys.stderr)
        return 2
    try:
        run = replay_mix(
            config,
            args.workloads,
            stack=args.stack,
            label=args.label or args.stack,
            options=Options(quiet=args.quiet or quiet_for(config), until=until),
            notes=args.note,
            limits=limits_of(args),
            changes=changes,
        )
    except (MixTooLarge, GateError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(run.to_json(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
