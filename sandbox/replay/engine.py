"""Replays a workload mix on the sandbox's real Kueue and kube-scheduler, and records what
happened to every workload.

Simulated time is event-driven. The events are submissions (gpu-queues.dev/submit-at) and
the ends of running jobs (gpu-queues.dev/duration after their pods run). At each event the
replay acts (creates the objects, or completes the job's pods through kwok's stage,
sandbox/kwok-stages.yaml), then waits until the cluster has settled: no object it watches has
changed for a quiet spell, no pod is being deleted, the scheduler's active and backoff queues
are empty, and every admitted workload has its pods. Whatever changed meanwhile (admissions,
preemptions, pods placed) happened at that simulated instant; then the clock jumps to the
next event. So a wait is counted in simulated time exactly, whatever the control plane's own
latencies (the Job controller's one-second batching, scheduler backoff, a loaded machine):
a fixed speed-up would multiply those by its factor instead.

Kueue orders workloads of equal priority by creation time, to the second (then by UID, at
random), so each submission goes into a later second than the previous one's Workload: file
order stays Kueue's order.

Runs inside the sandbox's network namespace:
    python -m sandbox.replay.engine --stack NAME --stack-file FILE --workloads PATH --out RUN.json
        [--deploy] [--until 24h] [--quiet 1.0] [--label TEXT]
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import math
import os
import ssl
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes.watch.watch import iter_resp_lines

from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.client import file_client
from gpu_queues.whatif.mix import (
    COMPLETE_AFTER,
    Catalog,
    Entry,
    load_mix,
    parse_duration,
    submission_order,
)
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results
from gpu_queues.whatif.workloads import (
    KubeError,
    Rest,
    classify,
    eviction,
    holds_quota,
    is_terminal,
    is_true,
    owner,
    pod_phase,
    pod_unschedulable,
    preemptions,
)
from sandbox import shape as fake_cluster
from sandbox.paths import KUBECONFIG, ROOT, STATE
from sandbox.rehearse import run as rehearse

KUEUE_CONFIG_PATH = "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
SCHEDULER_METRICS = "https://127.0.0.1:10259/metrics"
WATCHED = {
    "pods": "/api/v1/pods",
    "jobs": "/apis/batch/v1/jobs",
    "workloads": "/apis/kueue.x-k8s.io/v1beta2/workloads",
}
# Kueue retries inadmissible workloads in batches, one second after the change that may let
# them in (pkg/cache/queue: requeueBatchPeriod), and the Job controller batches pod updates
# by a second too: the cluster can pause that long mid-reaction. 2.5 s of quiet clear both
# with room for a loaded machine (1.7 s pauses were seen); each run reports its longest.
DEFAULT_QUIET = 2.5
# When no workload waits for quota, nothing of the kind is pending: a short spell will do.
SHORT_QUIET = 0.5
LONG_REQUEUE_GATE = "SchedulerLongRequeueInterval"  # Kueue's 10 s requeue batches
LONG_REQUEUE_QUIET = 11.0
SETTLE_CAP = 90.0
WORKLOAD_CAP = 20.0


def _lines(resp: Any) -> Iterator[str]:
    """The lines of a watch stream (one JSON event each)."""
    lines: Iterator[str] = iter_resp_lines(resp)  # type: ignore[no-untyped-call]
    return lines


def _uid(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("uid", ""))


class Informer:
    """List, then watch, one resource across namespaces; keeps the objects by UID and tells
    `changed` about every change. Reconnects (and lists again when it must)."""

    def __init__(self, path: str, changed: Callable[[], None]) -> None:
        self.path = path
        self.changed = changed
        self.lock = threading.Lock()
        self.objects: dict[str, dict[str, Any]] = {}
        self.synced = threading.Event()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"watch {path}", daemon=True)

    def start(self) -> Informer:
        self.thread.start()
        return self

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.objects.values())

    def _run(self) -> None:
        rest = Rest(file_client(KUBECONFIG))
        version: str | None = None
        while not self.stopping.is_set():
            try:
                if version is None:
                    listed = rest.get(self.path)
                    with self.lock:
                        self.objects = {_uid(o): o for o in listed.get("items", [])}
                    version = str(listed["metadata"]["resourceVersion"])
                    self.synced.set()
                    self.changed()
                query = (
                    "?watch=1&allowWatchBookmarks=true&timeoutSeconds=240"
                    f"&resourceVersion={version}"
                )
                resp = rest.request("GET", self.path + query, stream=True, timeout=300)
                for line in _lines(resp):
                    event = json.loads(line)
                    obj = event.get("object", {})
                    if event.get("type") == "ERROR":
                        version = None  # expired: list again
                        break
                    version = str(obj.get("metadata", {}).get("resourceVersion", version))
                    if event.get("type") == "BOOKMARK":
                        continue
                    with self.lock:
                        if event.get("type") == "DELETED":
                            self.objects.pop(_uid(obj), None)
                        else:
                            self.objects[_uid(obj)] = obj
                    self.changed()
                resp.release_conn()
            except Exception:
                if self.stopping.is_set():
                    return
                version = None
                time.sleep(0.5)


def _scheduler_busy() -> int | None:
    """Pods the scheduler is about to try (active and backoff queues); None if unknown."""
    pki = STATE / "pki"
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    ctx.check_hostname = False  # the scheduler's self-signed serving certificate
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(SCHEDULER_METRICS, context=ctx, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    busy = 0
    for line in text.splitlines():
        waiting = 'queue="active"' in line or 'queue="backoff"' in line
        if line.startswith("scheduler_pending_pods{") and waiting:
            busy += int(float(line.rsplit(" ", 1)[1]))
    return busy


def _created(obj: dict[str, Any]) -> float:
    stamp = str(obj.get("metadata", {}).get("creationTimestamp", ""))
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class Tracked:
    """One replayed workload through the replay."""

    entry: Entry
    uid: str | None = None
    submitted: bool = False
    problem: str | None = None
    admitted_at: float | None = None
    started_at: float | None = None
    run: int = 0
    """Counts the workload's runs, so that the end of an earlier run (before a preemption)
    is not taken for the end of the current one."""
    gpu_seconds: float = 0.0
    finished: bool = False
    completing: bool = False
    evictions: list[str] = field(default_factory=list)
    had_quota: bool = False


@dataclass
class Options:
    quiet: float = DEFAULT_QUIET
    short_quiet: float = SHORT_QUIET
    until: float | None = None
    settle_cap: float = SETTLE_CAP


class Replay:
    """The replay of one mix on the running sandbox (the stack already deployed)."""

    def __init__(self, entries: list[Entry], options: Options | None = None) -> None:
        self.entries = entries
        self.options = options or Options()
        self.rest = Rest(file_client(KUBECONFIG))
        self.last_change = time.monotonic()
        self.changes: list[float] = []
        self.silences: list[float] = []
        self.informers = {
            name: Informer(path, self._changed).start() for name, path in WATCHED.items()
        }
        for informer in self.informers.values():
            if not informer.synced.wait(60):
                raise RuntimeError(f"cannot list {informer.path} on the sandbox")
        self.tracked = [Tracked(e) for e in submission_order(entries)]
        self.by_uid: dict[str, Tracked] = {}
        self.now = 0.0
        self.events: list[tuple[float, int, str, int, int]] = []  # (time, order, kind, i, run)
        self.settles: list[float] = []
        self.batches = 0
        self.notes: list[str] = []
        self.last_submit_second = 0.0

    def _changed(self) -> None:
        self.last_change = time.monotonic()
        self.changes.append(self.last_change)

    def close(self) -> None:
        for informer in self.informers.values():
            informer.stopping.set()

    # --- reading the cluster -------------------------------------------------------------

    def _index(self) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
        """Workloads by their owner's UID, pods by their owner's UID (the Job, or the pod
        itself for plain pods)."""
        workloads: dict[str, dict[str, Any]] = {}
        for wl in self.informers["workloads"].snapshot():
            for kind in ("Job", "Pod"):
                ref = owner(wl, kind)
                if ref is not None:
                    workloads[str(ref.get("uid"))] = wl
        pods: dict[str, list[dict[str, Any]]] = {}
        for pod in self.informers["pods"].snapshot():
            ref = owner(pod, "Job")
            pods.setdefault(str(ref.get("uid")) if ref else _uid(pod), []).append(pod)
        return workloads, pods

    @staticmethod
    def _running(t: Tracked, pods: list[dict[str, Any]]) -> bool:
        """Every pod the workload needs is running (a Job's parallelism)."""
        running = sum(pod_phase(p) == "Running" for p in pods)
        return running >= max(t.entry.pods, 1)

    def _settled(self) -> tuple[bool, bool]:
        """(whether the cluster is at rest apart from timers, whether a workload waits)."""
        workloads, pods = self._index()
        for pod in self.informers["pods"].snapshot():
            if pod.get("metadata", {}).get("deletionTimestamp"):
                return False, True
        waiting = False
        for t in self.tracked:
            if t.uid is None or t.finished or t.problem:
                continue
            wl = workloads.get(t.uid)
            if wl is None:
                return False, True  # Kueue has not made its Workload yet
            if not holds_quota(wl) and not is_true(wl, "Finished"):
                waiting = True
            if (
                is_true(wl, "Admitted")
                and not is_true(wl, "Finished")
                and not is_true(wl, "Evicted")
            ):
                live = [p for p in pods.get(t.uid, []) if not is_terminal(p)]
                if t.completing and not live:
                    continue
                if len(live) < t.entry.pods:
                    return False, True  # the Job controller has yet to make its pods
                for p in live:
                    placed = p.get("spec", {}).get("nodeName")
                    if placed and pod_phase(p) != "Running" and not t.completing:
                        return False, True  # bound; kwok has yet to run it
        return True, waiting

    def settle(self, final: bool = False) -> None:
        """Wait until the cluster has done what the last event set off.

        Kueue's and the Job controller's one-second batches can only change what the replay
        sees while a workload waits for quota (and at the very end, where a job's end must
        reach its Workload): then the full quiet spell is needed. Otherwise a short one does."""
        started = time.monotonic()
        while True:
            now = time.monotonic()
            quiet = now - self.last_change
            if quiet >= self.options.short_quiet:
                at_rest, waiting = self._settled()
                needed = self.options.quiet if (waiting or final) else self.options.short_quiet
                idle = at_rest and quiet >= needed and _scheduler_busy() in (0, None)
                if idle and time.monotonic() - self.last_change >= needed:
                    break
            if now - started > self.options.settle_cap:
                self.notes.append(
                    f"at {self.now:.0f}s simulated, the cluster had not settled after "
                    f"{self.options.settle_cap:.0f}s; the replay went on"
                )
                break
            time.sleep(0.05)
        self.settles.append(time.monotonic() - started)
        # The longest silence that more changes followed: how close the quiet spell came
        # to ending a settle too early (it should stay well below options.quiet).
        seen = [c for c in self.changes if c >= started]
        self.silences.append(max((b - a for a, b in itertools.pairwise(seen)), default=0.0))
        self.changes.clear()

    # --- acting ------------------------------------------------------------------------

    def submit(self, t: Tracked) -> None:
        e = t.entry
        # A later second than the previous Workload's creation: Kueue's FIFO order is file
        # order (equal seconds are ordered by UID, at random).
        wait = self.last_submit_second + 1 - time.time()
        if wait > 0:
            time.sleep(wait)
        group = "/apis/batch/v1" if e.kind == "Job" else "/api/v1"
        plural = "jobs" if e.kind == "Job" else "pods"
        try:
            created = self.rest.create(f"{group}/namespaces/{e.namespace}/{plural}", e.manifest)
        except KubeError as exc:
            t.problem = f"the API server refused it: {exc}"
            return
        t.uid, t.submitted = _uid(created), True
        self.by_uid[t.uid] = t
        deadline = time.monotonic() + WORKLOAD_CAP
        while time.monotonic() < deadline:
            workloads, _ = self._index()
            wl = workloads.get(t.uid)
            if wl is not None:
                self.last_submit_second = math.floor(_created(wl))
                return
            time.sleep(0.05)
        t.problem = (
            f"Kueue made no Workload for it within {WORKLOAD_CAP:.0f}s, so it is not queued: "
            "is its namespace one Kueue manages (kueue.manager.managedJobsNamespaceSelector)?"
        )
        self.last_submit_second = math.floor(time.time())

    def complete(self, t: Tracked) -> None:
        """The job's time is up: its pods complete (kwok's stage, on our annotation)."""
        _, pods = self._index()
        t.completing = True
        for pod in pods.get(t.uid or "", []):
            if is_terminal(pod) or pod.get("metadata", {}).get("annotations", {}).get(
                COMPLETE_AFTER
            ):
                continue
            meta = pod["metadata"]
            try:
                self.rest.merge_patch(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    {"metadata": {"annotations": {COMPLETE_AFTER: "0s"}}},
                )
            except KubeError as exc:
                if exc.status != 404:
                    raise

    # --- recording ---------------------------------------------------------------------

    def observe(self) -> None:
        """What the last event led to, at the current simulated instant."""
        workloads, pods = self._index()
        for i, t in enumerate(self.tracked):
            if t.uid is None or t.problem:
                continue
            wl = workloads.get(t.uid)
            if wl is None:
                continue
            mine = pods.get(t.uid, [])
            if holds_quota(wl) and t.admitted_at is None:
                t.admitted_at = self.now
            if t.completing and any(not is_terminal(p) for p in mine):
                self.complete(t)  # pods made after the end (further completions) end too
            running = holds_quota(wl) and self._running(t, mine)
            if running and t.started_at is None:
                t.started_at, t.run = self.now, t.run + 1
                if t.entry.duration is not None:
                    heapq.heappush(
                        self.events, (self.now + t.entry.duration, 0, "complete", i, t.run)
                    )
            if not running and t.started_at is not None:
                t.gpu_seconds += self.now - t.started_at
                t.started_at = None
            if t.had_quota and not holds_quota(wl) and not is_true(wl, "Finished"):
                why = eviction(wl)
                t.evictions.append(f"{why[0]}: {why[1]}" if why else "evicted")
            t.had_quota = holds_quota(wl)
            t.finished = is_true(wl, "Finished")

    def result(
        self, t: Tracked, wl: dict[str, Any] | None, pods: list[dict[str, Any]]
    ) -> WorkloadResult:
        e = t.entry
        base = WorkloadResult(
            e.name,
            e.namespace,
            e.queue,
            "pending",
            kind=e.kind,
            team=e.team,
            cluster_queue=e.cluster_queue,
            gpus=e.gpus,
            submit_at=e.submit_at,
            gpu_seconds=t.gpu_seconds,
        )
        if t.problem or wl is None:
            base.outcome, base.message = "invalid", t.problem or "Kueue made no Workload for it"
            return base
        base.wait_seconds = None if t.admitted_at is None else t.admitted_at - e.submit_at
        base.preemptions = max(preemptions(wl), sum("Preempted" in x for x in t.evictions))
        stuck = next((m for p in pods if (m := pod_unschedulable(p))), None)
        outcome, base.flavor, message = classify(
            wl, self._running(t, pods), stuck, bool(t.evictions and base.preemptions)
        )
        base.outcome = outcome
        history = f"evicted {len(t.evictions)}x, last: {t.evictions[-1]}" if t.evictions else None
        if outcome in ("finished", "admitted"):
            message = history
        elif outcome == "pending" and history:
            message = f"{message} ({history})"
        elif outcome == "preempted" and len(t.evictions) > 1:
            message = f"evicted {len(t.evictions)}x, last: {message}"
        base.message = message
        return base

    # --- the replay --------------------------------------------------------------------

    def run(self) -> list[WorkloadResult]:
        for i, t in enumerate(self.tracked):
            heapq.heappush(self.events, (t.entry.submit_at, 1, "submit", i, 0))
        until = self.options.until
        while self.events:
            at = self.events[0][0]
            if until is not None and at > until:
                break
            self.now = at
            batch = []
            while self.events and self.events[0][0] == at:
                batch.append(heapq.heappop(self.events))
            # Ends first: a job submitted at the instant another ends finds its quota free.
            for _, _, kind, i, run in sorted(batch, key=lambda b: (b[1], b[3])):
                t = self.tracked[i]
                if kind == "submit":
                    self.submit(t)
                elif t.run == run and t.started_at is not None and not t.finished:
                    self.complete(t)
            self.batches += 1
            self.settle()
            self.observe()
        self.settle(final=True)
        if until is not None and until > self.now:
            self.now = until
        self.observe()
        for t in self.tracked:  # running at the end: count their GPU time until then
            if t.started_at is not None:
                t.gpu_seconds += self.now - t.started_at
                t.started_at = self.now
        workloads, pods = self._index()
        results = {
            t.entry.index: self.result(t, workloads.get(t.uid or ""), pods.get(t.uid or "", []))
            for t in self.tracked
        }
        out = []
        for e in self.entries:
            if e.index in results:
                out.append(results[e.index])
            else:
                out.append(
                    WorkloadResult(
                        e.name,
                        e.namespace,
                        e.queue,
                        "unsupported" if e.status == "unsupported" else "invalid",
                        message=e.problem,
                        kind=e.kind,
                        team=e.team,
                        cluster_queue=e.cluster_queue,
                        gpus=e.gpus,
                        submit_at=e.submit_at,
                    )
                )
        return out


# --- the stack on the sandbox ---------------------------------------------------------------


def live_frameworks(rest: Rest) -> list[str]:
    """The integrations the running Kueue is configured with (its manager ConfigMap)."""
    cm = rest.get(KUEUE_CONFIG_PATH)
    config = yaml.safe_load(cm.get("data", {}).get(KUEUE_CONFIG_KEY, "")) or {}
    frameworks = (config.get("integrations") or {}).get("frameworks") or ["batch/job"]
    return [str(f) for f in frameworks]


def quiet_for(config: StackConfig) -> float:
    """The quiet spell for a stack: longer when Kueue batches its retries by 10 s."""
    gates = config.kueue.manager.feature_gates or {}
    return LONG_REQUEUE_QUIET if gates.get(LONG_REQUEUE_GATE) else DEFAULT_QUIET


def replay_mix(
    config: StackConfig,
    workloads: Path,
    *,
    stack: str,
    label: str,
    options: Options | None = None,
    root: Path = ROOT,
    notes: list[str] | None = None,
) -> Run:
    """Read and check the mix against the stack as deployed, replay it, and sum it up."""
    rest = Rest(file_client(KUBECONFIG))
    # The release the run is made on, read from the running controller (the rehearsal's
    # check): a side is never replayed on another release than its stack file's.
    kueue = rehearse.running_kueue(rehearse.Cluster(), config.kueue.version)
    catalog = Catalog.from_stack(config, live_frameworks(rest))
    entries = load_mix(workloads, catalog, root)
    started = time.monotonic()
    replay = Replay(entries, options)
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
        notes=[*(notes or []), *replay.notes],
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
    args = parser.parse_args(argv)
    os.environ.setdefault("KUBECONFIG", str(KUBECONFIG))
    config = fake_cluster.load_stack(args.stack_file)
    if args.deploy:
        rehearse.deploy(args.stack, args.stack_file)
    until = parse_duration(args.until) if args.until else None
    run = replay_mix(
        config,
        args.workloads,
        stack=args.stack,
        label=args.label or args.stack,
        options=Options(quiet=args.quiet or quiet_for(config), until=until),
        notes=args.note,
    )
    args.out.write_text(json.dumps(run.to_json(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
