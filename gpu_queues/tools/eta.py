"""Start-time estimates, `gpuq status --eta` (docs/eta.md): when each pending workload of the
live cluster is predicted to be admitted, and on which run-time estimates that rests.

    gpuq status --eta --stack NAME [--project DIR] [--history 7d] [--horizon 24h] [--json]
                     [--submit job.yaml]
    gpuq eta --stack NAME ...                 (the same)
    make status STACK=prod ARGS=--eta
    python -m gpu_queues.tools.eta --stack NAME ...

A read-only snapshot of the cluster (gpu_queues.tools.status, through the stack's kubeconfig
secret as `gpuq status` reads it) becomes a mix that starts now (gpu_queues.tools.eta_mix:
admitted workloads first, holding what they hold for what is left of their run time, then the
pending ones in Kueue's order), replayed forward on the fast engine of the stack's Kueue
release (gpu_queues.whatif.fast) with the stack's queues as the program renders them and the
cluster's nodes as they are, up to a horizon (default 24 h ahead; a workload not admitted by
then is "not within 24h"). A pending workload's predicted admission is now plus its wait
in the replay; what it relies on is the run-time estimates of the workloads of its
ClusterQueue (or cohort) whose runs ended in the replay before it was admitted. Every
assumption is printed with the estimates.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import urllib3

from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.client import KubeconfigError
from gpu_queues.progress import Progress
from gpu_queues.tools import status
from gpu_queues.tools.eta_mix import (
    DEFAULT_HISTORY,
    EtaError,
    Item,
    Plan,
    plan,
    run_time,
    submitted_runtimes,
)
from gpu_queues.tools.owners import Owners
from gpu_queues.whatif.documents import MixDocument, MixTooLarge, read_documents
from gpu_queues.whatif.durations import DurationError, format_duration, parse_duration
from gpu_queues.whatif.engine_input import FastEngineError, frameworks, manager_configuration
from gpu_queues.whatif.fast import replay_entries
from gpu_queues.whatif.mix import Catalog, Entry, check
from gpu_queues.whatif.report import Run, WorkloadResult
from gpu_queues.whatif.trainjob import Runtimes, is_runtime
from gpu_queues.whatif.workloads import KubeError, Rest, is_true

# How far ahead the replay looks: a day of the cluster, not the whole backlog (at 1,000 pending
# workloads on prod, ten simulated days). Predictions before it are the same as without one
# (tests/toolchain/test_eta_horizon.py).
DEFAULT_HORIZON: Final = 86400.0
ALONE: Final = 60.0
"""Simulated seconds a --submit manifest is replayed alone: on an empty cluster Kueue admits it
in its first scheduling cycle or never."""


def parse_horizon(text: str) -> float | None:
    """--horizon: a duration above 0s, or `none` (None: the whole backlog)."""
    if text == "none":
        return None
    try:
        horizon = parse_duration(text)
    except DurationError as exc:
        raise DurationError(f"{exc} (or none)") from None
    if horizon <= 0:
        raise DurationError("must be more than 0s (or none)")
    return horizon


@dataclass(frozen=True)
class Prediction:
    """One pending workload's estimate."""

    item: Item
    at: float | None
    """Predicted admission, seconds since the epoch; None: not admitted in the replay."""
    flavor: str | None
    relies_on: dict[str, int]
    """Basis -> how many run times of that basis ended before its admission in the replay."""
    why: str | None = None
    """Why there is no time (no admission in the replay, or not replayed)."""
    preempted: int = 0
    """Times the replay preempted it after its admission (its flavor is then the last one's,
    or none while it waits again)."""

    def public(self, now: float) -> dict[str, Any]:
        i = self.item
        return {
            "name": i.name,
            "namespace": i.namespace,
            "workload": i.workload,
            "team": i.team,
            "clusterQueue": i.cluster_queue,
            "positionInClusterQueue": i.position[0] if i.position else None,
            "positionInLocalQueue": i.position[1] if i.position else None,
            "predictedAdmission": None if self.at is None else iso(self.at),
            "predictedAdmissionEpoch": self.at,
            "inSeconds": None if self.at is None else round(self.at - now),
            "flavor": self.flavor,
            "runTime": {"seconds": i.run_time.seconds, "basis": i.run_time.basis},
            "reliesOn": self.relies_on,
            "why": self.why,
            "preemptedAfter": self.preempted,
        }


@dataclass(frozen=True)
class Submitted:
    """A manifest not yet submitted (--submit): whether it can ever start on the stack, and
    when it would if submitted now."""

    entry: Entry
    never: str | None
    """Why it can never start (Kueue's words, from a replay of it alone on the empty cluster);
    None when it can."""
    prediction: Prediction | None
    """Its estimate in a replay of the live snapshot with it added last (None: it never can)."""

    def public(self, now: float) -> dict[str, Any]:
        e = self.entry
        out: dict[str, Any] = {
            "name": e.name,
            "namespace": e.namespace,
            "kind": e.kind,
            "clusterQueue": e.cluster_queue,
            "gpus": e.gpus,
            "canEverStart": self.never is None,
            "never": self.never,
        }
        if self.prediction is not None:
            p = self.prediction.public(now)
            out.update({k: p[k] for k in ("predictedAdmission", "predictedAdmissionEpoch",
                                          "inSeconds", "flavor", "runTime", "why")})  # fmt: skip
        return out


@dataclass(frozen=True)
class Estimate:
    plan: Plan
    run: Run | None
    predictions: list[Prediction]
    assumptions: list[str]
    source: str
    submitted: list[Submitted] = field(default_factory=list)


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(round(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def in_words(seconds: float) -> str:
    """`now`, `in 40s`, `in 12 min` (rounded), `in 3h10m`."""
    left = max(round(seconds), 0)
    if left == 0:
        return "now"
    if left < 60:
        return f"in {left}s"
    if left < 3600:
        return f"in {round(left / 60)} min"
    return f"in {format_duration(left)}"


def live_nodes(rest: Rest) -> list[dict[str, Any]]:
    """The cluster's nodes as the engine places pods on them (labels, taints, allocatable)."""
    nodes = [
        {k: n[k] for k in ("apiVersion", "kind", "metadata", "spec", "status") if k in n}
        for n in rest.get("/api/v1/nodes").get("items", [])
    ]
    for n in nodes:
        n["apiVersion"], n["kind"] = "v1", "Node"
        meta = n["metadata"]
        n["metadata"] = {k: meta[k] for k in ("name", "labels") if k in meta}
    return nodes


def predict(
    config: StackConfig,
    snapshot: status.Snapshot,
    owners: Any,
    nodes: list[dict[str, Any]],
    *,
    source: str,
    history: float = DEFAULT_HISTORY,
    horizon: float | None = DEFAULT_HORIZON,
    submit: Sequence[MixDocument] = (),
) -> Estimate:
    """The snapshot's mix replayed forward (module docstring), `horizon` seconds ahead (None:
    until nothing is left to happen); with `submit`, each manifest not yet submitted answered
    too (`submitted`)."""
    missing = sorted(
        {cq for wl, cq, _ in snapshot.workloads if cq in snapshot.unanswered and _pending(wl)}
    )
    if missing:
        raise EtaError(
            f"Kueue's visibility API gave no pending workloads for ClusterQueue "
            f"{', '.join(missing)} ({status.VISIBILITY}): without Kueue's order there is no "
            "estimate (is the visibility API served? Kueue's VisibilityOnDemand)"
        )
    configuration = manager_configuration(config)
    catalog = Catalog.from_stack(config, frameworks(configuration))
    mix = plan(snapshot, owners, config, catalog, history)
    # Refused before any replay; a runtime of the file is no workload, but beside its TrainJobs.
    runtimes = submitted_runtimes(submit, owners)
    new = [
        _new_item(doc, mix, catalog, history, runtimes)
        for doc in submit
        if not is_runtime(doc.body)
    ]
    if submit and not new:
        raise EtaError(f"--submit {submit[0].source}: only Trainer runtimes, no workload in it")
    assumptions = _assumptions(config, mix, nodes, history, horizon)
    submitted = [
        _submitted(config, item, mix, configuration, nodes, source, horizon) for item in new
    ]
    pending = [i for i in mix.items if i.state == "pending"]
    if not mix.entries():
        predictions = [_unreplayed(i) for i in pending]
        return Estimate(mix, None, predictions, assumptions, source, submitted)
    run = replay_entries(
        config,
        mix.entries(),
        configuration,
        stack=source,
        label=f"estimate from {iso(mix.now)}",
        nodes=nodes or None,
        until=horizon,
    )
    assumptions += [f"the replay: {note}" for note in run.meta.notes]  # preemption loops
    results = {(w.namespace, w.name): w for w in run.workloads}
    predictions = []
    for item in pending:
        found = results.get((item.namespace, item.name)) if item.entry else None
        predictions.append(
            _prediction(config, item, found, mix, run, horizon) if found else _unreplayed(item)
        )
    return Estimate(mix, run, predictions, assumptions, source, submitted)


def _new_item(
    doc: MixDocument, mix: Plan, catalog: Catalog, history: float, runtimes: Runtimes
) -> Item:
    """A manifest not yet submitted as the last pending item of the mix, created now (a
    TrainJob with its runtime among `runtimes`); EtaError when the stack refuses it or the
    cluster already has it."""
    entry = check(doc, len(mix.items), catalog, runtimes)
    if entry.status != "ok":
        raise EtaError(f"--submit {entry.source}: {entry.status}: {entry.problem}")
    for other in mix.items:
        if other.entry is not None and other.entry.key == entry.key:
            raise EtaError(
                f"--submit {entry.source}: a {entry.kind} {entry.namespace}/{entry.name} is "
                "already in the cluster; --submit answers for one not yet submitted"
            )
    team, cq = entry.team or "", entry.cluster_queue or ""
    runs = run_time(entry.manifest, team, mix, history)
    return Item(
        entry.name,
        entry.namespace,
        "(not submitted)",
        team,
        cq,
        "pending",
        mix.now,
        runs,
        entry=replace(entry, submit_at=0.0, duration=runs.seconds),
    )


def _submitted(
    config: StackConfig,
    item: Item,
    mix: Plan,
    configuration: str,
    nodes: list[dict[str, Any]],
    source: str,
    horizon: float | None,
) -> Submitted:
    """Whether the new item can ever start: replayed alone on the cluster's nodes with nothing
    else admitted, Kueue admits it at once or never (and then says which resource of which
    flavor is short); if it can, when it would start: the live mix replayed with it added last,
    as the newest workload of its ClusterQueue (a higher priority still goes first: Kueue
    orders by it)."""
    entry = item.entry
    assert entry is not None
    alone = replay_entries(
        config, [replace(entry, index=0)], configuration, stack=source,
        label=f"{entry.namespace}/{entry.name} alone", nodes=nodes or None, until=ALONE,
    )  # fmt: skip
    (w,) = alone.workloads
    if w.wait_seconds is None:
        never = f"Kueue does not admit it even alone on the empty cluster: {w.message}"
        return Submitted(entry, never, None)
    if w.outcome == "unschedulable":
        never = f"Kueue admits it, but its pods fit no node of the cluster: {w.message}"
        return Submitted(entry, never, None)
    together = Plan(mix.now, [*mix.items, item], mix.history, mix.left_out)
    run = replay_entries(
        config, together.entries(), configuration, stack=source,
        label=f"estimate with {entry.namespace}/{entry.name} added", nodes=nodes or None,
        until=horizon,
    )  # fmt: skip
    found = next((r for r in run.workloads if (r.kind, r.namespace, r.name) == entry.key), None)
    if found is None:
        return Submitted(entry, None, _unreplayed(item))
    return Submitted(entry, None, _prediction(config, item, found, together, run, horizon))


def _pending(wl: dict[str, Any]) -> bool:
    return not is_true(wl, "QuotaReserved") and not is_true(wl, "Finished")


def _unreplayed(item: Item) -> Prediction:
    return Prediction(item, None, None, {}, f"not replayed: {item.problem}")


def _prediction(
    config: StackConfig,
    item: Item,
    found: WorkloadResult,
    mix: Plan,
    run: Run,
    horizon: float | None,
) -> Prediction:
    if found.wait_seconds is None:
        unknown = [i for i in mix.items if i.entry and i.run_time.basis == "unknown"]
        why = found.message or "no message from Kueue"
        if unknown:
            why = (
                f"{len(unknown)} workload(s) of unknown run time hold their quota to the end; {why}"
            )
        if horizon is None:
            why = f"not admitted before the replay ended: {why}"
        else:
            why = (
                f"not within {format_duration(horizon)} (the replay looks that far ahead: "
                f"--horizon): {why}"
            )
        return Prediction(item, None, None, {}, why)
    admitted = found.wait_seconds
    basis = {(i.namespace, i.name): i.run_time.basis for i in mix.items if i.entry}
    relies: Counter[str] = Counter()
    for other in run.workloads:
        if (other.namespace, other.name) == (item.namespace, item.name):
            continue
        if not shares_quota(config, item.cluster_queue, other.cluster_queue):
            continue
        if any(end is not None and end <= admitted for _, end in other.intervals):
            relies[basis.get((other.namespace, other.name), "unknown")] += 1
    return Prediction(
        item, mix.now + admitted, found.first_flavor or found.flavor, dict(sorted(relies.items())),
        preempted=found.preemptions,
    )  # fmt: skip


def shares_quota(config: StackConfig, cq: str, other: str | None) -> bool:
    """The same ClusterQueue, or two in one cohort: an end in one can let the other in."""
    if other == cq:
        return True
    cohorts = {t.cluster_queue: t.cohort for t in config.teams}
    return cohorts.get(cq) is not None and cohorts.get(cq) == cohorts.get(other or "")


def _assumptions(
    config: StackConfig,
    mix: Plan,
    nodes: list[dict[str, Any]],
    history: float,
    horizon: float | None,
) -> list[str]:
    ahead = (
        f"up to {iso(mix.now + horizon)}, {format_duration(horizon)} ahead (--horizon)"
        if horizon is not None
        else "until nothing is left to happen (--horizon none)"
    )
    out = [
        f"replayed from {iso(mix.now)} {ahead} on the fast engine of Kueue {config.kueue.version} "
        "(gpu_queues/whatif/fast.py), in simulated time: Kueue's reactions take no time, so a "
        "live handoff (a job ends, the next is admitted) comes a second or two later",
        "queues and quotas as the stack file declares them (the program's rendering), "
        + (
            f"on the cluster's {len(nodes)} nodes as they are now"
            if nodes
            else "on the nodes the stack declares (the cluster listed none)"
        ),
        "run time: a job's gpu-queues.dev/duration annotation; else its team's median run "
        f"time (admission to Finished) over the last {format_duration(history)}; else "
        "unknown, and it holds its quota to the end of the replay (what waits behind it may "
        "start sooner if it ends)",
        "time already run: since the Job's status.startTime (its last resume), else its "
        "admission; an overdue workload ends at once",
        "the admitted workloads are replayed first, in admission order, each pinned to the "
        "flavor it holds; the pending ones in Kueue's order (the visibility API's positions "
        "within a ClusterQueue, creation order across them); no new submissions",
    ]
    for team, runs in sorted(mix.history.items()):
        out.append(f"history of {team}: {len(runs)} finished run(s)")
    for item in mix.items:
        if item.state == "admitted":
            left = "unknown" if item.left is None else format_duration(item.left)
            lost = f"; NOT replayed ({item.problem}): its quota counts as free"
            lost = lost if item.problem else ""
            out.append(
                f"running {item.namespace}/{item.name} on {item.flavor}: "
                f"{item.run_time.note}, ran {format_duration(item.ran)}, left {left}{lost}"
            )
    out += [f"left out: {why}" for why in mix.left_out]
    return out


def relies_text(relies: dict[str, int]) -> str:
    if not relies:
        return "nothing ending (room now)"
    return ", ".join(f"{n} {basis}" for basis, n in relies.items())


def flavor_text(p: Prediction) -> str:
    if not p.preempted:
        return p.flavor or "-"
    return f"{p.flavor or '-'} (preempted {p.preempted}x later in the replay)"


def render(estimate: Estimate) -> str:
    now = estimate.plan.now
    lines = [f"### Start-time estimates: {estimate.source}, at {iso(now)}", ""]
    if not estimate.predictions:
        lines += ["No pending workloads.", ""]
    else:
        lines += [
            "| position (ClusterQueue, LocalQueue) | workload | team | predicted admission "
            "| in | flavor | its run time | relies on (run times ended before) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for p in estimate.predictions:
            i = p.item
            where = f"{i.position[0]}, {i.position[1]}" if i.position else "-"
            when = iso(p.at) if p.at is not None else (p.why or "-")
            inn = in_words(p.at - now) if p.at is not None else "-"
            lines.append(
                f"| {where} ({i.cluster_queue}) | {i.namespace}/{i.name} | {i.team} | {when} "
                f"| {inn} | {flavor_text(p)} | {i.run_time.note} | "
                f"{relies_text(p.relies_on) if p.at is not None else '-'} |"
            )
        lines.append("")
    if estimate.submitted:
        lines += ["If submitted now (--submit):", ""]
        lines += [f"- {submitted_text(x, now)}" for x in estimate.submitted]
        lines.append("")
    lines += ["Assumptions:", *[f"- {a}" for a in estimate.assumptions], ""]
    return "\n".join(lines)


def submitted_text(x: Submitted, now: float) -> str:
    e = x.entry
    what = f"{e.namespace}/{e.name} ({e.kind}, {e.gpus} GPUs, ClusterQueue {e.cluster_queue})"
    if x.never is not None:
        return f"{what}: can never start on this stack: {x.never}"
    p = x.prediction
    if p is None or p.at is None:
        return f"{what}: can start, but {p.why if p else 'was not replayed'}"
    return (
        f"{what}: would be admitted at {iso(p.at)} ({in_words(p.at - now)}) on flavor "
        f"{flavor_text(p)}; its run time: {p.item.run_time.note}; relies on "
        f"{relies_text(p.relies_on)}"
    )


def public(estimate: Estimate) -> dict[str, Any]:
    now = estimate.plan.now
    return {
        "now": iso(now),
        "source": estimate.source,
        "predictions": [p.public(now) for p in estimate.predictions],
        "submitted": [x.public(now) for x in estimate.submitted],
        "assumptions": estimate.assumptions,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = status.parser("python -m gpu_queues.tools.eta")
    parser.add_argument(
        "--history",
        default="7d",
        help="how far back a team's finished workloads count for its median (default 7d)",
    )
    parser.add_argument(
        "--horizon",
        default="24h",
        help="how far ahead the replay looks (default 24h; none: until nothing is left to "
        "happen, the whole backlog)",
    )
    parser.add_argument(
        "--submit",
        type=Path,
        help="a manifest (file or folder) not yet submitted: whether it can ever start on the "
        "stack and, if so, when and on which flavor it would if submitted now",
    )
    args = parser.parse_args(argv)
    try:
        history = parse_duration(args.history)
    except DurationError as exc:
        print(f"status --eta: --history: {exc}", file=sys.stderr)
        return 2
    try:
        horizon = parse_horizon(args.horizon)
    except DurationError as exc:
        print(f"status --eta: --horizon: {exc}", file=sys.stderr)
        return 2
    if not args.stack:
        print(
            "status --eta: --stack is needed: the replay renders the stack's queues "
            "(make status STACK=<stack> ARGS=--eta)",
            file=sys.stderr,
        )
        return 2
    try:
        submit = submissions(args.submit) if args.submit is not None else []
        return _run(args.stack, args.project, args.json, history, horizon, submit)
    except (status.StatusError, KubeconfigError, EtaError, FastEngineError) as exc:
        print(f"status --eta: {exc}", file=sys.stderr)
    except (KubeError, OSError, urllib3.exceptions.HTTPError) as exc:
        print(f"status --eta: the cluster did not answer: {exc}", file=sys.stderr)
    return 2


def submissions(path: Path) -> list[MixDocument]:
    """The --submit manifests, read as a mix is (its limits); EtaError when there are none."""
    try:
        docs = read_documents(path)
    except MixTooLarge as exc:
        raise EtaError(f"--submit {path}: {exc}") from None
    if not docs:
        raise EtaError(f"--submit {path}: no manifest in it")
    return docs


def _run(
    stack: str,
    project: Path,
    as_json: bool,
    history: float,
    horizon: float | None,
    submit: Sequence[MixDocument] = (),
) -> int:
    config, _ = status.stack_config(stack, project)
    # On a terminal, a line says what it is doing: reading the cluster, then the replay.
    with Progress("status --eta") as progress:
        progress.update("connecting")
        rest, source, teams = status.connect(stack, project)
        progress.update(f"reading {source}")
        now = datetime.now(UTC).timestamp()
        snapshot = status.take_snapshot(rest, teams, now)
        nodes = live_nodes(rest)
        progress.update("replaying the queues forward on the fast engine")
        estimate = predict(
            config, snapshot, Owners(rest).get, nodes, source=f"live cluster of {source}",
            history=history, horizon=horizon, submit=submit,
        )  # fmt: skip
    print(json.dumps(public(estimate), indent=2) if as_json else render(estimate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
