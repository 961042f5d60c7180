"""The replay of one mix on the running sandbox, in simulated time (`Replay`).

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
order stays Kueue's order. Jobs submitted at one instant go in one by one, each after the
cluster has settled from the one before (the ends of that instant first).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

from gpu_queues.kueue.client import file_client
from gpu_queues.whatif.changes import StackChange
from gpu_queues.whatif.mix import COMPLETE_AFTER, DELETED_WHEN_DONE, Entry, submission_order
from gpu_queues.whatif.outcome import not_replayed
from gpu_queues.whatif.podgroups import missing
from gpu_queues.whatif.report import WorkloadResult
from gpu_queues.whatif.workloads import (
    KubeError,
    Rest,
    holds_quota,
    is_terminal,
    is_true,
    pod_phase,
)
from sandbox.paths import KUBECONFIG
from sandbox.replay import gate, queues
from sandbox.replay.groups import Groups, groups_of
from sandbox.replay.holds import Holds
from sandbox.replay.owners import COLLECTIONS, Owners, install_runtimes
from sandbox.replay.serving import Deployments, Serving, gone
from sandbox.replay.tracked import (
    Tracked,
    all_running,
    close_run,
    nodes_of,
    result,
    running_pods,
)
from sandbox.replay.watch import (
    WATCHED,
    created_at,
    scheduler_busy,
    uid,
    watching,
)

# Kueue retries inadmissible workloads in batches, one second after the change that may let
# them in (pkg/cache/queue: requeueBatchPeriod), and the Job controller batches pod updates
# by a second too: the cluster can pause that long mid-reaction. 2.5 s of quiet clear both
# with room for a loaded machine (1.7 s pauses were seen); each run reports its longest.
DEFAULT_QUIET = 2.5
# When no workload waits for quota, nothing of the kind is pending: a short spell will do.
SHORT_QUIET = 0.5
SETTLE_CAP = 90.0
# After one pod of a job ends (Replay.complete): the scheduler tries the waiting pods within
# milliseconds; a fifth of a second without a change says it has.
END_QUIET = 0.2
# Where in a wall-clock second the replay acts (Replay.fresh_second): early, so that what it
# sets off has the rest of the second.
SECOND_START = 0.05
WORKLOAD_CAP = 20.0
BACKGROUND = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
# An instant's events in order: the ends, the stack's changes, the submissions.
ORDER = {"complete": 0, "change": 1, "submit": 2}


@dataclass
class Options:
    quiet: float = DEFAULT_QUIET
    short_quiet: float = SHORT_QUIET
    until: float | None = None
    settle_cap: float = SETTLE_CAP


class Replay:
    """The replay of one mix on the running sandbox (the stack already deployed)."""

    def __init__(
        self,
        entries: list[Entry],
        options: Options | None = None,
        changes: tuple[StackChange, ...] = (),
    ) -> None:
        self.entries = entries
        self.stack_changes = changes
        self.options = options or Options()
        self.rest = Rest(file_client(KUBECONFIG))
        self.last_change = time.monotonic()
        self.changes: list[float] = []
        self.silences: list[float] = []
        # Every Workload's hold on quota as it changed (holds.py). Read off the watch, change by
        # change: an admission Kueue undoes within the same instant (a workload admitted, then
        # preempted by a reclaim in the next cycle) is one all the same, and the settled cluster
        # no longer shows it. The admissions' order is the one in which the gate lets their
        # pods go (the last of each), and WorkloadResult.admission_order (all).
        self.holds = Holds()
        self.owners = Owners()
        self.informers = {
            name: watching(name, self._changed, self._workload_seen).start() for name in WATCHED
        }
        for informer in self.informers.values():
            if not informer.synced.wait(60):
                raise RuntimeError(f"cannot list {informer.path} on the sandbox")
        self.tracked = [Tracked(e) for e in submission_order(entries)]
        gate.install(self.rest, {t.entry.namespace for t in self.tracked})
        self.by_uid: dict[str, Tracked] = {}
        # Deployments and their pods, each a workload of its own; LWSs of several groups, theirs
        self.serving = Deployments()
        self.now = 0.0
        self.events: list[tuple[float, int, str, int, int]] = []  # (time, order, kind, i, run)
        self.settles: list[float] = []
        self.batches = 0
        self.notes: list[str] = []
        self.last_submit_second = 0.0

    def _changed(self) -> None:
        self.last_change = time.monotonic()
        self.changes.append(self.last_change)

    def _workload_seen(self, wl: dict[str, Any]) -> None:
        """One Workload as a change left it, or as it was deleted (the informer's thread):
        Holds.seen, told whether the replay deleted its owner at its time."""
        key = self.owners.workload(wl)
        if key is not None:
            self.holds.seen(key, wl, self.now, self._deleted_at_its_end(key))

    def close(self) -> None:
        gate.remove(self.rest)
        for informer in self.informers.values():
            informer.stopping.set()

    # --- reading the cluster -------------------------------------------------------------

    def _index(self) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
        """Workloads and pods by the UID the replay knows their workload by (Owners.index)."""
        informer = self.informers["workloads"]
        return self.owners.index(
            informer.snapshot(),
            informer.departed(),
            self.informers["pods"].snapshot(),
            self._deleted_at_its_end,
        )

    def _deleted_at_its_end(self, key: str) -> bool:
        """The replay deleted the workload when its time was up (DELETED_WHEN_DONE)."""
        t = self.by_uid.get(key)
        return t is not None and t.completing and t.entry.kind in DELETED_WHEN_DONE

    def _adopted(self) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
        """_index, the pods the ReplicaSets made since the last look followed from now on."""
        workloads, pods = self._index()
        for r in self.serving.adopt(self.informers["pods"].snapshot(), pods):
            self.by_uid[r.uid or ""] = r
        return workloads, pods

    def _following(self) -> list[Tracked]:
        """The workloads of the mix, then the pods of its Deployments (serving.py)."""
        return [*self.tracked, *self.serving.replicas()]

    def _settled(self) -> tuple[bool, bool]:
        """(whether the cluster is at rest apart from timers, whether a workload waits)."""
        workloads, pods = self._adopted()
        for pod in self.informers["pods"].snapshot():
            if pod.get("metadata", {}).get("deletionTimestamp"):
                return False, True
        waiting = False
        there = {uid(w) for w in self.informers["workloads"].snapshot()}
        for t in self._following():
            if t.uid is None or t.finished or t.problem or t.uid in self.serving.by_uid:
                continue  # a Deployment is its pods' Workloads
            wl = workloads.get(t.uid)
            if t.entry.kind == "Deployment" and gone(pods.get(t.uid, [])):
                if wl is not None and uid(wl) in there and holds_quota(wl):
                    return False, True  # its pod gone: Kueue has yet to release its quota
                continue
            if wl is None and missing(t.entry):
                waiting = True  # a pod group short of pods: Kueue makes no Workload for it
                continue
            if wl is None:
                return False, True  # Kueue has not made its Workload yet
            if t.completing and holds_quota(wl):
                # Its pods are done, but the Job controller and Kueue have yet to finish its
                # Workload and release its quota: on a cluster they do within a second or two,
                # long before the next event of a replay; the next submission must find the
                # quota free (seen: a job submitted 60 s after another ended took the other
                # flavor, its Workload admitted 0.4 s before the ended one's was finished).
                return False, True
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
        """Wait until the cluster has done what the last event set off, then let the pods the
        replay's gate holds go to the scheduler job by job, in the order Kueue admitted the
        jobs, each job's pods tried before the next's are let go, the cluster settling again
        after each (sandbox/replay/gate.py says why)."""
        self._quiet(final)
        while pods := self._next_gated():
            for wave in gate.waves(pods):
                for pod in wave:
                    gate.ungate(self.rest, pod)
                self._until_tried({uid(p) for p in wave})
            self._quiet(final)

    def _next_gated(self) -> list[dict[str, Any]]:
        """The gated pods of the job Kueue admitted first of those that have any, but for pods
        Kueue still holds (gate.kueue_holds: they are let go once it admits them)."""
        with self.holds.lock:
            order = {key: seen[-1] for key, seen in self.holds.admission_order.items()}
        jobs: dict[str, list[dict[str, Any]]] = {}
        for pod in self.informers["pods"].snapshot():
            gone = pod.get("metadata", {}).get("deletionTimestamp")
            if gate.gated(pod) and not gate.kueue_holds(pod) and not gone:
                jobs.setdefault(self.owners.pod(pod), []).append(pod)
        if not jobs:
            return []
        first = min(jobs, key=lambda k: (order.get(k, 1 << 62), k))
        return jobs[first]

    def _until_tried(self, uids: set[str], cap: float = 30.0) -> None:
        """Wait until the scheduler has placed each pod or found no node for it (or it is
        gone)."""
        deadline = time.monotonic() + cap
        while time.monotonic() < deadline:
            pods = {uid(p): p for p in self.informers["pods"].snapshot()}
            if all(u not in pods or gate.tried(pods[u]) for u in uids):
                return
            time.sleep(0.05)
        self.notes.append(
            f"at {self.now:.0f}s simulated, the scheduler had not tried a job's pods {cap:.0f}s "
            "after the replay let them go; the replay went on"
        )

    def _quiet(self, final: bool = False) -> None:
        """Wait until the cluster has done what the last event set off.

        Kueue's and the Job controller's one-second batches can only change what the replay
        sees while a workload waits for quota (and at the very end, where a job's end must
        reach its Workload): then the full quiet spell is needed. Otherwise a short one does."""
        started = time.monotonic()
        self.informers["workloads"].forget_wordings()
        while True:
            now = time.monotonic()
            quiet = now - self.last_change
            if quiet >= self.options.short_quiet:
                at_rest, waiting = self._settled()
                needed = self.options.quiet if (waiting or final) else self.options.short_quiet
                idle = at_rest and quiet >= needed and scheduler_busy() in (0, None)
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

    def fresh_second(self, not_before: float = 0.0) -> None:
        """Wait for the start of a new second of the wall clock (at least `not_before`): what
        an action sets off then happens within that second, as the fast engine has it on
        Kueue's clock. Kueue orders workloads admitted by the second (a reclaim takes the most
        recently admitted of equals first, then the lowest UID, drawn at random): a reaction
        that straddled a second boundary would order two equal workloads by chance."""
        second = max(math.ceil(time.time() - SECOND_START), math.ceil(not_before))
        time.sleep(max(0.0, second + SECOND_START - time.time()))

    def submit(self, t: Tracked) -> None:
        e = t.entry
        # A later second than the previous Workload's creation: Kueue's FIFO order is file
        # order (equal seconds are ordered by UID, at random).
        self.fresh_second(self.last_submit_second + 1)
        group, plural = COLLECTIONS[e.kind]
        path = f"{group}/namespaces/{e.namespace}/{plural}"
        try:  # a pod group's pods all at its time
            made = [self.rest.create(path, m) for m in e.members or (e.manifest,)]
        except KubeError as exc:
            t.problem = f"the API server refused it: {exc}"
            return
        t.uid, t.submitted = self.owners.made(e.kind, e.namespace, e.name, made), True
        self.by_uid[t.uid] = t
        if e.kind == "Deployment":
            self.serving.made(t)
        if t.uid in self.owners.grouped:  # an LWS of several groups, each a workload (groups.py)
            self.serving.follow(groups := Groups.made(t, groups_of(made[0])))
            self.by_uid.update((g.uid or "", g) for g in groups.current())
        if missing(e):
            return  # Kueue makes no Workload for a group short of pods
        deadline = time.monotonic() + WORKLOAD_CAP
        while time.monotonic() < deadline:
            if made_workloads := self._workloads_of(t):
                self.last_submit_second = math.floor(max(map(created_at, made_workloads)))
                return
            time.sleep(0.05)
        t.problem = (
            f"Kueue made no Workload for it within {WORKLOAD_CAP:.0f}s, so it is not queued: "
            "is its namespace one Kueue manages (kueue.manager.managedJobsNamespaceSelector)?"
        )
        self.last_submit_second = math.floor(time.time())

    def _workloads_of(self, t: Tracked) -> list[dict[str, Any]]:
        """The submitted workload's Workloads, once Kueue has made them all: a Deployment's,
        one per replica; else its one."""
        workloads, _ = self._adopted()
        if (serving := self.serving.by_uid.get(t.uid or "")) is None:
            return [wl] if (wl := workloads.get(t.uid or "")) is not None else []
        made = [workloads[r.uid] for r in serving.current() if r.uid in workloads]
        return made if len(made) >= serving.replicas else []

    def complete(self, t: Tracked) -> None:
        """The job's time is up: its pods complete (kwok's stage, on our annotation).

        On a cluster a job's pods end one at a time, and kube-scheduler tries the pods that
        wait for a node again on each one's end: a waiting pod takes the first node freed,
        not the one it would score best once the whole job is gone. Which pod ends first is
        a race; the replay takes it away as the gate does for starts: while some pod waits
        for a node, the pods end in the order of their nodes' names, and the next pod (of
        this job or the next job ending at the instant) only after the scheduler has tried
        the waiting pods on the end of the one before (the fast engine does the same:
        toolchain/go/whatif/sim.go, complete). A kind that never ends by itself
        (DELETED_WHEN_DONE) is deleted instead, as its user would."""
        if t.entry.kind in DELETED_WHEN_DONE:
            t.completing = True
            self.serving.deleting(t)
            self._delete(t)
            return
        _, pods = self._index()
        t.completing = True
        ending = sorted(
            (
                p
                for p in pods.get(t.uid or "", [])
                if not is_terminal(p)
                and not p.get("metadata", {}).get("annotations", {}).get(COMPLETE_AFTER)
            ),
            key=lambda p: (str(p.get("spec", {}).get("nodeName") or ""), p["metadata"]["name"]),
        )
        one_by_one = self._a_pod_waits_for_a_node()
        for pod in ending:
            meta = pod["metadata"]
            try:
                self.rest.merge_patch(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    {"metadata": {"annotations": {COMPLETE_AFTER: "0s"}}},
                )
            except KubeError as exc:
                if exc.status != 404:
                    raise
            if one_by_one:
                self._until_ended(uid(pod))

    def _delete(self, t: Tracked) -> None:
        """Delete the replayed object; the garbage collector deletes what it made (an LWS's
        StatefulSets and their pods, its Workloads)."""
        group, plural = COLLECTIONS[t.entry.kind]
        path = f"{group}/namespaces/{t.entry.namespace}/{plural}/{t.entry.name}"
        try:
            self.rest.request("DELETE", path, BACKGROUND)
        except KubeError as exc:
            if exc.status != 404:
                raise

    def _a_pod_waits_for_a_node(self) -> bool:
        """Some pod the scheduler may try (not gated, not bound, not ending) is there."""
        for pod in self.informers["pods"].snapshot():
            waits = not (pod.get("spec") or {}).get("nodeName") and not gate.gated(pod)
            if waits and not is_terminal(pod) and not pod["metadata"].get("deletionTimestamp"):
                return True
        return False

    def _until_ended(self, key: str, cap: float = 30.0) -> None:
        """Wait until the pod has ended and the scheduler has tried, on its end, the pods
        that wait for nodes (it hears of the end about when the replay does: a short quiet
        spell, then its active and backoff queues empty)."""
        deadline = time.monotonic() + cap
        ended = False
        while time.monotonic() < deadline:
            if not ended:
                pod = next((p for p in self.informers["pods"].snapshot() if uid(p) == key), None)
                ended = pod is None or is_terminal(pod)
            elif time.monotonic() - self.last_change >= END_QUIET and scheduler_busy() in (
                0,
                None,
            ):
                return
            time.sleep(0.02)
        self.notes.append(
            f"at {self.now:.0f}s simulated, a pod had not ended, or the scheduler not tried the "
            f"waiting pods on its end, {cap:.0f}s after its time was up; the replay went on"
        )

    def change(self, c: StackChange, cap: float = 30.0) -> None:
        """The stack changes (sandbox/replay/queues.py). The quiet that ends the instant counts
        from here, and Kueue's queue controllers must have seen the change first (what they do
        about it is what the instant is for)."""
        written = queues.write(self.rest, c)
        self._changed()
        if pending := queues.until_observed(self.rest, written, cap):
            self.notes.append(
                f"at {self.now:.0f}s simulated, Kueue had not judged the stack's change of "
                f"{', '.join(pending)} {cap:.0f}s after it was written; the replay went on"
            )
        self._changed()

    # --- recording ---------------------------------------------------------------------

    def observe(self) -> None:
        """What the last event led to, at the current simulated instant."""
        workloads, pods = self._adopted()
        for i, t in enumerate(self._following()):  # a Deployment's pods after the mix's
            if t.uid is None or t.problem:
                continue
            wl = workloads.get(t.uid)
            if wl is None:
                continue
            mine = pods.get(t.uid, [])
            with self.holds.lock:
                steps = list(self.holds.steps.get(t.uid, []))
                t.admission_order = tuple(self.holds.admission_order.get(t.uid, []))
                t.workload_uid = self.holds.workload_uids.get(t.uid) or None
            t.timeline = sorted(
                [(at, event, detail) for at, event, detail, _ in steps] + t.placed,
                key=lambda step: step[0],
            )
            t.evictions = [said for _, event, _, said in steps if event == "evicted"]
            t.admitted_at = next((at for at, event, *_ in steps if event == "admitted"), None)
            ending = t.entry.kind not in DELETED_WHEN_DONE  # else deleted, its pods going
            if ending and t.completing and any(not is_terminal(p) for p in mine):
                self.complete(t)  # pods made after the end (further completions) end too
            running = holds_quota(wl) and all_running(t, mine)
            pods_now = running_pods(mine)
            if running and t.started_at is not None and pods_now != t.run_pods:
                # Other pods than the run's: Kueue evicted the job and admitted it again within
                # the instant, and the new pods run its whole time again.
                self._stop_run(t)
            if running and t.started_at is None:
                t.started_at, t.run, t.run_pods = self.now, t.run + 1, pods_now
                t.intervals.append((self.now, None))
                t.placed.append((self.now, "ran", nodes_of(mine)))
                if t.entry.duration is not None:
                    heapq.heappush(
                        self.events,
                        (self.now + t.entry.duration, ORDER["complete"], "complete", i, t.run),
                    )
            if not running and t.started_at is not None:
                self._stop_run(t)
            t.finished = is_true(wl, "Finished")
        for served in self.serving.newly_served():
            self._serve(served)

    def _serve(self, s: Serving) -> None:
        """All the Deployment's replicas have run: its duration counts from now (serving.py)."""
        t = s.parent
        t.started_at, t.run = self.now, t.run + 1
        if t.entry.duration is not None:
            i = self.tracked.index(t)
            heapq.heappush(
                self.events, (self.now + t.entry.duration, ORDER["complete"], "complete", i, t.run)
            )

    def _stop_run(self, t: Tracked) -> None:
        assert t.started_at is not None
        t.gpu_seconds += self.now - t.started_at
        t.started_at = None
        close_run(t, self.now)

    # --- the replay --------------------------------------------------------------------

    def run(self) -> list[WorkloadResult]:
        self.notes += install_runtimes(self.rest, [t.entry for t in self.tracked])
        for i, t in enumerate(self.tracked):
            heapq.heappush(self.events, (t.entry.submit_at, ORDER["submit"], "submit", i, 0))
        for i, c in enumerate(self.stack_changes):
            heapq.heappush(self.events, (c.at, ORDER["change"], "change", i, 0))
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
            # Then the stack's changes (in time order, as given), each after the cluster has
            # reacted to the ends. Then the submissions one by one, each after the cluster has
            # reacted to what came before it (as the fast engine replays them): a second
            # between two submissions is not always enough for a preemption to finish, and the
            # next one's flavor would then depend on how far it got.
            # Within each, mix order (as the fast engine's events): at one instant the jobs
            # submitted are in mix order anyway, and the ends must be, each job's pods ending
            # one by one when some pod waits for a node (complete).
            acted = False
            order = sorted(
                batch,
                key=lambda b: (b[1], b[3] if b[2] == "change" else self.tracked[b[3]].entry.index),
            )
            for _, _, kind, i, run in order:
                if kind == "change":
                    if acted:
                        self.settle()
                        self.observe()
                    self.fresh_second()
                    self.change(self.stack_changes[i])
                    acted = True
                    continue
                t = self.tracked[i]
                if kind == "submit":
                    if acted:
                        self.settle()
                        self.observe()
                    self.submit(t)
                    acted = True
                elif t.run == run and t.started_at is not None and not t.finished:
                    if not acted:
                        self.fresh_second()
                    self.complete(t)
                    acted = True
            self.batches += 1
            self.settle()
            self.observe()
        self.settle(final=True)
        if until is not None and until > self.now:
            self.now = until
        self.observe()
        for t in self._following():  # running at the end: count their GPU time until then
            if t.started_at is not None:
                t.gpu_seconds += self.now - t.started_at
                t.started_at = self.now
        workloads, pods = self._index()
        results = {
            t.entry.index: s.row(workloads, pods)
            if (s := self.serving.by_uid.get(t.uid or ""))
            else result(t, workloads.get(t.uid or ""), pods.get(t.uid or "", []))
            for t in self.tracked
        }
        return [results[e.index] if e.index in results else not_replayed(e) for e in self.entries]
