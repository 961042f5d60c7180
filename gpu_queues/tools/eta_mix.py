"""The live cluster as a what-if mix that starts now: the half of `gpuq status --eta` that needs
no engine (docs/eta.md). The replay of the mix and what is printed are gpu_queues/tools/eta.py's.

From a status snapshot (gpu_queues.tools.status.Snapshot) and the workloads' owners:
- finished workloads are the history: a team's run times, from its (last) admission to
  Finished, of those that finished within `history` seconds of now;
- admitted workloads (holding quota, not finished) come first, in the order they were
  admitted, each pinned to the flavor it holds (its pods get the flavor's node labels as node
  selector, which Kueue's flavor assignment honours) and running for what is left of its run
  time;
- pending workloads follow in Kueue's order: within a ClusterQueue, the visibility API's
  positions; across ClusterQueues, creation order (the slots the ClusterQueue's workloads
  take in creation order are filled in its own order). Every item is submitted at 0s, so
  the replay creates them at one instant and Kueue breaks ties of priority and creation time
  in mix order, as the live order has them.

A run time is, first, the owner's `gpu-queues.dev/duration` annotation ("annotation"); else
the median of its team's history ("median", the mean of the middle two for an even count);
else "unknown": it runs until the end of the replay, holding its quota. Time already run
counts from the Job's status.startTime (when it was last resumed, so its pods run) or, when
that is missing or older, from its admission; what is left is never below 0s (an overdue
workload ends at once).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, Literal

from gpu_queues.config.model import StackConfig
from gpu_queues.tools.owner_trainjob import manifest_and_runtime
from gpu_queues.tools.owners import RECORDED_KINDS, Unrecordable, recorded_owner
from gpu_queues.tools.status import Snapshot
from gpu_queues.values import as_dict
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.durations import DurationError, format_duration, parse_duration
from gpu_queues.whatif.engine_input import not_fast
from gpu_queues.whatif.mix import (
    ANNOTATION_DURATION,
    DEFAULT_NAMESPACE,
    Catalog,
    Entry,
    check,
    runtimes_of,
)
from gpu_queues.whatif.podsets import pod_sets
from gpu_queues.whatif.trainjob import (
    Runtimes,
    is_runtime,
    runtime_key,
    runtime_object,
    runtime_ref,
    runtime_where,
)
from gpu_queues.whatif.workloads import admitted_flavor, assigned_flavors, condition

Basis = Literal["annotation", "median", "unknown"]
State = Literal["admitted", "pending"]
OwnerLookup = Callable[[str, str, str], dict[str, Any] | None]
"""(kind, namespace, name) -> the owner object, None when the API no longer has it
(gpu_queues.tools.record.Owners.get)."""
DEFAULT_HISTORY: Final = 7 * 86400.0


@dataclass(frozen=True)
class RunTime:
    """How long a workload runs in all, and where that figure comes from."""

    seconds: float | None
    """None: unknown (it runs until the end of the replay)."""
    basis: Basis
    note: str


@dataclass
class Item:
    """One admitted or pending workload of the snapshot, as the mix replays it."""

    name: str
    """The owner's name (the Workload's when it has none)."""
    namespace: str
    workload: str
    team: str
    cluster_queue: str
    state: State
    created: float
    run_time: RunTime
    ran: float = 0.0
    """Seconds it has run already (admitted ones)."""
    flavor: str | None = None
    """The flavor it holds (admitted ones)."""
    position: tuple[int, int] | None = None
    """(in its ClusterQueue, in its LocalQueue), from the visibility API (pending ones)."""
    entry: Entry | None = None
    """What the engine is fed; None when it cannot be replayed (`problem`)."""
    problem: str | None = None

    @property
    def left(self) -> float | None:
        """Seconds it still runs; None: unknown."""
        if self.run_time.seconds is None:
            return None
        return max(self.run_time.seconds - self.ran, 0.0)


@dataclass
class Plan:
    now: float
    items: list[Item] = field(default_factory=list)
    """Admitted first, then pending, in mix order."""
    history: dict[str, list[float]] = field(default_factory=dict)
    """Team -> run times of its workloads finished within the history window."""
    left_out: list[str] = field(default_factory=list)
    """Workloads neither replayed nor predicted, each with why (deactivated ones)."""

    def entries(self) -> list[Entry]:
        return [i.entry for i in self.items if i.entry is not None]


class EtaError(Exception):
    """The snapshot cannot be replayed forward; the message says why."""


def stamp(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def true_since(wl: Mapping[str, Any], kind: str) -> float | None:
    c = condition(wl, kind)
    if c is None or c.get("status") != "True":
        return None
    return stamp(c.get("lastTransitionTime"))


def median_note(team: str, runs: list[float], history: float) -> str:
    return (
        f"median of {len(runs)} finished {team} workload{'s' if len(runs) != 1 else ''} "
        f"of the last {format_duration(history)}"
    )


def run_time(owner_obj: Mapping[str, Any] | None, team: str, plan: Plan, history: float) -> RunTime:
    """The annotation's run time, else the team's median, else unknown (module docstring)."""
    annotations = as_dict(as_dict(as_dict(owner_obj).get("metadata")).get("annotations"))
    text = annotations.get(ANNOTATION_DURATION)
    if text is not None:
        try:
            seconds = parse_duration(text)
        except DurationError as exc:
            why = f"its {ANNOTATION_DURATION} annotation: {exc}"
        else:
            if seconds > 0:
                return RunTime(seconds, "annotation", f"{ANNOTATION_DURATION} {text}")
            why = f"its {ANNOTATION_DURATION} annotation {text!r} is not above 0s"
    else:
        why = f"no {ANNOTATION_DURATION} annotation"
    runs = plan.history.get(team, [])
    if runs:
        median = statistics.median(runs)
        note = f"{median_note(team, runs, history)}: {format_duration(median)}"
        return RunTime(median, "median", note)
    return RunTime(
        None,
        "unknown",
        f"unknown: {why} and no finished {team} workload in the last {format_duration(history)}",
    )


def pinned(manifest: dict[str, Any], labels: Mapping[str, dict[str, str]]) -> dict[str, Any]:
    """The manifest with each pod set's pods' node selector holding the node labels of the
    flavors its admission gave it (pod set name -> labels; podsets.py finds the pod sets)."""
    for pod_set in pod_sets(str(manifest.get("kind")), manifest):
        pin = labels.get(pod_set.name)
        if pin:
            pod_set.spec["nodeSelector"] = {**as_dict(pod_set.spec.get("nodeSelector")), **pin}
    return manifest


def flavor_labels(config: StackConfig, wl: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Per pod set, the node labels of the flavors the workload's admission gave it; a pod set
    whose flavors set one label differently is left out (it is then not pinned)."""
    by_name = {f.name: dict(f.node_labels or {}) for f in config.flavors}
    out: dict[str, dict[str, str]] = {}
    for pod_set, flavors in assigned_flavors(wl).items():
        labels: dict[str, str] | None = {}
        for flavor in flavors.values():
            for key, value in by_name.get(flavor, {}).items():
                if labels is not None and labels.setdefault(str(key), str(value)) != str(value):
                    labels = None
        if labels:
            out[pod_set] = labels
    return out


def kueue_order(pending: list[Item]) -> list[Item]:
    """Pending items (in creation order) in the mix's order: each ClusterQueue's slots in
    creation order, filled by its workloads in the visibility API's order (positioned ones
    first, then the rest in creation order)."""
    by_cq: dict[str, list[Item]] = {}
    for item in pending:
        by_cq.setdefault(item.cluster_queue, []).append(item)
    queued = {
        cq: sorted(
            items,
            key=lambda i: (i.position is None, i.position[0] if i.position else 0),
        )
        for cq, items in by_cq.items()
    }
    taken = dict.fromkeys(queued, 0)
    out = []
    for item in pending:
        cq = item.cluster_queue
        out.append(queued[cq][taken[cq]])
        taken[cq] += 1
    return out


def plan(
    snapshot: Snapshot,
    owners: OwnerLookup,
    config: StackConfig,
    catalog: Catalog,
    history: float = DEFAULT_HISTORY,
) -> Plan:
    """The snapshot as a mix that starts at snapshot.now (module docstring)."""
    now = snapshot.now
    out = Plan(now)
    admitted: list[tuple[float, Item, dict[str, Any], Mapping[str, Any] | None]] = []
    pending: list[tuple[Item, dict[str, Any], Mapping[str, Any] | None]] = []
    for wl, cq, team in snapshot.workloads:
        meta = as_dict(wl.get("metadata"))
        namespace, workload = str(meta.get("namespace")), str(meta.get("name"))
        reserved = true_since(wl, "QuotaReserved")
        finished = true_since(wl, "Finished")
        if finished is not None:
            if reserved is not None and finished >= now - history:
                out.history.setdefault(team, []).append(max(finished - reserved, 0.0))
            continue
        if reserved is None and as_dict(wl.get("spec")).get("active") is False:
            out.left_out.append(f"{namespace}/{workload}: deactivated, Kueue does not admit it")
            continue
        ref = recorded_owner(wl)
        found = None
        problem = None
        if ref is None:
            problem = f"its owner is not one of the {RECORDED_KINDS} it reads"
        else:
            found = owners(str(ref.get("kind")), namespace, str(ref.get("name")))
            if found is None:
                problem = f"its {ref.get('kind')} {namespace}/{ref.get('name')} is gone"
        name = str(ref.get("name")) if ref and ref.get("name") else workload
        state: State = "admitted" if reserved is not None else "pending"
        created = stamp(meta.get("creationTimestamp")) or now
        item = Item(
            name,
            namespace,
            workload,
            team,
            cq,
            state,
            created,
            RunTime(None, "unknown", "unknown"),
            problem=problem,
            position=snapshot.positions.get(f"{namespace}/{workload}"),
        )
        if state == "admitted" and reserved is not None:
            item.flavor = admitted_flavor(wl)
            started = stamp(as_dict(as_dict(found).get("status")).get("startTime"))
            since = started if started is not None and started >= reserved else reserved
            item.ran = max(now - since, 0.0)
            admitted.append((reserved, item, wl, found))
        else:
            pending.append((item, wl, found))
    # Run times once the whole history is read.
    ordered: list[tuple[Item, dict[str, Any], Mapping[str, Any] | None]] = [
        (i, wl, o) for _, i, wl, o in sorted(admitted, key=lambda a: (a[0], a[1].created))
    ]
    by_item = {id(i): (wl, o) for i, wl, o in pending}
    ordered += [(i, *by_item[id(i)]) for i in kueue_order([i for i, _, _ in pending])]
    for index, (item, wl, owner_obj) in enumerate(ordered):
        item.run_time = run_time(owner_obj, item.team, out, history)
        if item.problem is None:
            _entry(item, wl, owner_obj, index, config, catalog, owners)
        out.items.append(item)
    return out


def _entry(
    item: Item,
    wl: dict[str, Any],
    found: Mapping[str, Any] | None,
    index: int,
    config: StackConfig,
    catalog: Catalog,
    owners: OwnerLookup,
) -> None:
    """The item's mix entry (a TrainJob's with its runtime), or its problem."""
    ref = recorded_owner(wl) or {}
    kind = str(ref.get("kind"))
    try:
        manifest, runtime = manifest_and_runtime(wl, kind, item.namespace, item.name, found, owners)
    except Unrecordable as exc:
        item.problem = str(exc)
        return
    if kind == "LeaderWorkerSet":
        manifest = _one_group(manifest, item)
        item.name = str(manifest["metadata"]["name"])  # the row the replay gives it
    runtimes = Runtimes({runtime_key(runtime, item.namespace): runtime} if runtime else {})
    if item.state == "admitted":
        pin = flavor_labels(config, wl)
        if pin:
            manifest = pinned(manifest, pin)
    doc = MixDocument(f"live {item.namespace}/{item.workload}", manifest)
    entry = check(doc, index, catalog, runtimes)
    if entry.status != "ok":
        item.problem = entry.problem or entry.status
        return
    item.problem = not_fast(entry)
    if item.problem is not None:
        return
    left = item.left
    item.entry = replace(entry, submit_at=0.0, duration=None if left is None else left)


def _one_group(manifest: dict[str, Any], item: Item) -> dict[str, Any]:
    """An LWS's group as the replay takes it: Kueue makes a Workload per group, each admitted
    or pending on its own, and the snapshot reads each; so each is an LWS of that one group,
    named after its Workload when the LWS has several (a row per group)."""
    spec = as_dict(manifest.get("spec"))
    groups = spec.get("replicas", 1)
    metadata = dict(as_dict(manifest.get("metadata")))
    if groups != 1:
        metadata["name"] = item.workload
    return {**manifest, "metadata": metadata, "spec": {**spec, "replicas": 1}}


def submitted_runtimes(submit: Sequence[MixDocument], owners: OwnerLookup) -> Runtimes:
    """The Trainer runtimes the --submit TrainJobs name (trainjob.py: Kueue counts a
    TrainJob's pods from its runtime): each from the --submit file when it holds it beside
    them (a runtime not yet on the cluster either), else the live cluster's (`owners`, which
    reads them as Owners does). EtaError when the file's runtime is refused (naming its field)
    or a TrainJob's is in neither (naming spec.runtimeRef)."""
    given = [d for d in submit if is_runtime(d.body)]
    runtimes = _runtimes(given)
    read: dict[tuple[str, str, str], MixDocument] = {}
    for doc in submit:
        body = as_dict(doc.body)
        if doc.error is not None or body.get("kind") != "TrainJob":
            continue
        namespace = as_dict(body.get("metadata")).get("namespace") or DEFAULT_NAMESPACE
        try:
            key = runtime_ref(body, str(namespace))
        except LookupError:
            continue  # no Trainer runtime: `check` refuses the TrainJob, naming why
        if key in runtimes.by_key or key in read:
            continue
        live = owners(*key)
        if live is None:
            raise EtaError(
                f"--submit {doc.source}: spec.runtimeRef: {key[0]} {runtime_where(key)} is "
                "neither in the --submit file nor in the cluster (Kueue counts a TrainJob's pods "
                "from its runtime: put the runtime's document beside the TrainJob)"
            )
        where = f"the cluster's {key[0]} {runtime_where(key)}"
        read[key] = MixDocument(where, runtime_object(live, key[1]))
    return _runtimes([*given, *read.values()]) if read else runtimes


def _runtimes(docs: list[MixDocument]) -> Runtimes:
    """The runtimes of `docs`, checked as a mix's are; EtaError for the first refused."""
    runtimes, refused = runtimes_of(docs)
    for rows in refused.values():
        for row in rows:
            raise EtaError(f"--submit {row.source}: {row.status}: {row.problem}")
    return runtimes
