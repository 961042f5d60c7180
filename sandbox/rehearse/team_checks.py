"""The checks a rehearsal makes for one team on the sandbox (`Rehearsal.team`): its jobs within
quota admitted to the flavor Kueue must pick and Running on that flavor's nodes, the job over
its ceiling held with Kueue's message naming each flavor's ceiling (`check_held_message`), a
pod bigger than any node admitted but never scheduled (held by Kueue, never admitted, on a
flavor with a topology: docs/topology.md), and its submitters' RBAC. Each check
gives a cell of the team's row (sandbox.rehearse.results).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpu_queues.config.model import StackConfig, Subject, Team
from gpu_queues.kueue.quantity import QuantityError, format_quantity, parse_quantity
from gpu_queues.whatif.nodes import FLAVOR_ANNOTATION
from gpu_queues.whatif.workloads import assigned_flavors, condition, is_true
from sandbox.rehearse.jobs import job_manifest, labels_text, shown_nodes
from sandbox.rehearse.kube import CheckFailed, RehearsalClient, identity
from sandbox.rehearse.plan import FitsJob, HeldJob, TeamPlan, TooBigJob
from sandbox.rehearse.results import Cell, Row
from sandbox.rehearse.sizing import POD_SET, JobShape

QUEUE_VERBS = ("create", "update", "patch", "delete")


def _admitted(wl: dict[str, Any] | None) -> dict[str, Any] | None:
    return wl if is_true(wl, "Admitted") else None


def _subject(s: Subject) -> str:
    return f"{s.kind} {s.namespace + '/' if s.namespace else ''}{s.name}"


class Rehearsal:
    def __init__(self, cfg: StackConfig, k: RehearsalClient) -> None:
        self.cfg = cfg
        self.k = k
        self.flavors = {f.name: f for f in cfg.flavors}
        self.claims = {v.namespace: v.claim_name for v in cfg.shared_storage}

    def admit(
        self,
        name: str,
        team: Team,
        shape: JobShape,
        claim: str | None,
        selector: dict[str, str] | None = None,
        queue: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        ns = team.namespace if queue is None else queue[1]
        self.k.batch.create_namespaced_job(
            ns, job_manifest(name, team, shape, claim, selector, queue)
        )
        return self.k.wait(
            f"Job {ns}/{name} ({shape.describe()}) to be admitted",
            lambda: _admitted(self.k.workload(name, ns)),
            lambda: self.k.workload_said(name, ns),
            lambda: self.k.pending(name, ns),
        )

    def check_flavors(self, wl: dict[str, Any], expected: dict[str, str]) -> None:
        got = assigned_flavors(wl).get(POD_SET, {})
        wrong = {r: f for r, f in expected.items() if got.get(r) != f}
        if wrong:
            raise CheckFailed(
                "Kueue assigned "
                + ", ".join(f"{r} to {got.get(r)}" for r in wrong)
                + ", expected "
                + ", ".join(f"{r} to {f}" for r, f in wrong.items())
                + " (the first flavor in order where the job fits what the team may use)"
            )

    def fits(self, p: TeamPlan) -> Cell:
        """Every fits job in turn (each deleted before the next): admitted to the flavor Kueue
        must pick, its pods Running on nodes of that flavor. Then the first of them through
        each other LocalQueue of the team, in its namespace: admitted and Running the same."""
        parts: list[str] = []
        for i, job in enumerate(p.fits):
            try:
                parts.append(self.fits_one(p, job, f"rehearse-fits-{i}"))
            except CheckFailed as e:
                where = f" (nodeSelector {labels_text(job.selector)})" if job.selector else ""
                return Cell(False, f"FAIL: {job.shape.describe()}{where}", str(e))
            finally:
                self.k.delete_jobs([f"rehearse-fits-{i}"], p.team.namespace)
        for i, queue in enumerate(p.other_queues):
            through = f"through LocalQueue {queue[1]}/{queue[0]}"
            try:
                parts.append(
                    f"{through}: " + self.fits_one(p, p.fits[0], f"rehearse-queue-{i}", queue)
                )
            except CheckFailed as e:
                return Cell(False, f"FAIL {through}: {p.fits[0].shape.describe()}", str(e))
            finally:
                self.k.delete_jobs([f"rehearse-queue-{i}"], queue[1])
        for flavor, why in p.unreachable.items():
            parts.append(f"no job sent to {flavor}: {why}")
        return Cell(True, "; ".join(parts))

    def fits_one(
        self, p: TeamPlan, job: FitsJob, name: str, queue: tuple[str, str] | None = None
    ) -> str:
        ns = p.team.namespace if queue is None else queue[1]
        expected = {
            r: job.flavors[g.index]
            for g in p.groups
            if g.index in job.flavors
            for r in g.covered
            if r in job.shape.totals()
        }
        wl = self.admit(name, p.team, job.shape, self.claims.get(ns), job.selector, queue)
        self.check_flavors(wl, expected)
        pods = self.k.wait(
            f"all {job.shape.pods} pod(s) of Job {ns}/{name} Running",
            lambda: (
                ps
                if len(ps := self.k.pods(name, ns)) == job.shape.pods
                and all(x.status.phase == "Running" for x in ps)
                else None
            ),
            lambda: self.k.pods_said(name, ns),
            lambda: self.k.unschedulable(name, ns),
        )
        placed, notes = self.placement(pods, expected)
        flavors = sorted(set(expected.values()))
        text = (
            f"{job.shape.describe()}"
            + (f" with nodeSelector {labels_text(job.selector)}" if job.selector else "")
            + f": admitted to {', '.join(flavors) or 'no flavor'}, Running on {placed}"
        )
        borrowed = [f for i, f in job.flavors.items() if job.targets.get(i) != f]
        if borrowed:
            notes.append(
                f"sized from its nominal quota in {', '.join(job.targets.values())}, Kueue "
                f"took {', '.join(borrowed)} first (it may borrow there)"
            )
        return text + "".join(f" ({n})" for n in notes)

    def placement(self, pods: list[Any], expected: dict[str, str]) -> tuple[str, list[str]]:
        """Where the pods run: every node must carry the assigned flavors' node labels."""
        elsewhere: dict[str, list[str]] = {}
        nodes: list[str] = []
        for pod in pods:
            node = self.k.core.read_node(pod.spec.node_name)
            name, labels = node.metadata.name, node.metadata.labels or {}
            stands_for = (node.metadata.annotations or {}).get(FLAVOR_ANNOTATION)
            for flavor_name in sorted(set(expected.values())):
                want = self.flavors[flavor_name].node_labels or {}
                missing = {k: v for k, v in want.items() if labels.get(k) != v}
                if missing:
                    raise CheckFailed(
                        f"pod {pod.metadata.name} runs on node {name}, which lacks flavor "
                        f"{flavor_name}'s node labels {missing}"
                    )
                if not want and stands_for != flavor_name:
                    elsewhere.setdefault(flavor_name, []).append(
                        f"{name} ({f'flavor {stands_for}' if stands_for else 'no flavor'})"
                    )
            nodes.append(name)
        notes = [
            f"flavor {f} has no nodeLabels, so nothing keeps its pods on its nodes: they run "
            f"on {', '.join(sorted(set(on)))}"
            for f, on in elsewhere.items()
        ]
        return shown_nodes(nodes), notes

    def held(self, p: TeamPlan) -> Cell:
        team, job, name = p.team, p.held, "rehearse-held"
        ns = team.namespace
        key = job.group.key
        asked = f"{job.shape.describe()} = {format_quantity(job.request)} {key}"
        try:
            self.k.batch.create_namespaced_job(ns, job_manifest(name, team, job.shape))
            cond = self.k.wait(
                f"Kueue to evaluate Job {ns}/{name}",
                lambda: condition(self.k.workload(name, ns), "QuotaReserved"),
                lambda: self.k.workload_said(name, ns),
            )
            if cond["status"] != "False":
                raise CheckFailed(
                    f"Kueue reserved quota for it although it needs more than the team may "
                    f"use: {self.k.workload_said(name, ns)}"
                )
            message = str(cond.get("message", ""))
            check_held_message(message, job)
        except CheckFailed as e:
            return Cell(False, f"FAIL: {asked}", str(e))
        may = ", ".join(f"{f} {format_quantity(c)}" for f, c in job.ceilings.items())
        return Cell(
            True,
            f"held: {asked}; may use at most {may}: {format_quantity(job.excess)} more than "
            f'it may ever use. Kueue: "{message}"',
        )

    def too_big(self, p: TeamPlan, job: TooBigJob) -> Cell:
        team, name = p.team, "rehearse-one-pod"
        ns = team.namespace
        key = next(iter(job.shape.requests))
        if job.topology is not None:
            return self.too_big_placed(p, job, name)
        try:
            wl = self.admit(name, team, job.shape, None)
            self.check_flavors(wl, {key: job.flavor})
            pod = self.k.wait(
                f"the scheduler to give up on the pod of Job {ns}/{name}",
                lambda: next(
                    (
                        c
                        for x in self.k.pods(name, ns)
                        for c in x.status.conditions or []
                        if c.type == "PodScheduled" and c.status == "False"
                    ),
                    None,
                ),
                lambda: self.k.pods_said(name, ns),
            )
            if any(x.spec.node_name for x in self.k.pods(name, ns)):
                raise CheckFailed(f"the pod was scheduled: {self.k.pods_said(name, ns)}")
        except CheckFailed as e:
            return Cell(False, f"FAIL: {job.shape.describe()}", str(e))
        return Cell(
            True,
            f"{job.shape.describe()}: admitted to {job.flavor} (within quota), unschedulable "
            f"(a node holds {format_quantity(job.largest_node)}): {pod.message}",
        )

    def too_big_placed(self, p: TeamPlan, job: TooBigJob, name: str) -> Cell:
        """On a flavor with a topology Kueue places the pods before it admits (topology-aware
        scheduling): a pod no node holds is held with Kueue's placement message, never
        admitted (the quota fits; kueue#4329 is what happens without a topology)."""
        ns = p.team.namespace
        expected = f"topology {json.dumps(job.topology)} doesn't allow to fit any of 1 pod(s)"
        try:
            self.k.batch.create_namespaced_job(ns, job_manifest(name, p.team, job.shape))
            cond = self.k.wait(
                f"Kueue to try to place Job {ns}/{name}",
                lambda: (
                    c
                    if (c := condition(self.k.workload(name, ns), "QuotaReserved")) is not None
                    and expected in str(c.get("message", ""))
                    else None
                ),
                lambda: self.k.workload_said(name, ns),
            )
            if cond["status"] != "False":
                raise CheckFailed(f"Kueue admitted it: {self.k.workload_said(name, ns)}")
        except CheckFailed as e:
            return Cell(False, f"FAIL: {job.shape.describe()}", str(e))
        return Cell(
            True,
            f"{job.shape.describe()}: within quota, held by topology {job.topology} (a node "
            f"holds {format_quantity(job.largest_node)}): {cond.get('message', '')}",
        )

    def rbac(self, p: TeamPlan) -> Cell:
        team = p.team
        if not team.submitters:
            return Cell(True, "no submitters: nothing to check")
        wrong = [w for s in team.submitters for w in self.rbac_of(p, s)]
        n = len(team.submitters)
        if wrong:
            return Cell(False, f"FAIL ({n} subject(s))", "; ".join(wrong))
        return Cell(
            True,
            f"{n} subject(s): create Jobs in {', '.join(team.all_namespaces)} yes; in "
            f"{len(p.other_namespaces)} other team namespace(s) no; edit queues no",
        )

    def rbac_of(self, p: TeamPlan, s: Subject) -> list[str]:
        """What the subject may do that it should not, or may not do that it should: create
        Jobs in each of the team's namespaces, in no other team's, edit none of its queues."""
        ns = p.team.namespace
        expect: list[tuple[bool, str, str, str | None, str]] = [
            (True, "create", "jobs.batch", mine, "") for mine in p.team.all_namespaces
        ]
        expect += [
            (False, "create", "jobs.batch", other, "")
            for other in p.other_namespaces
            if not self.submits_there(s, ns, other)
        ]
        for verb in QUEUE_VERBS:
            expect.append((False, verb, "clusterqueues.kueue.x-k8s.io", None, p.team.cluster_queue))
            for queue, queue_ns in p.team.queues:
                expect.append((False, verb, "localqueues.kueue.x-k8s.io", queue_ns, queue))
        wrong = []
        for want, verb, resource, where, name in expect:
            got = self.k.allowed(s, ns, verb, resource, where, name)
            if got != want:
                what = f"{verb} {resource}{' ' + name if name else ''}"
                wrong.append(
                    f"{_subject(s)} {'may' if got else 'may not'} {what}"
                    + (f" in {where}" if where else "")
                    + " (SubjectAccessReview)"
                )
        return wrong

    def submits_there(self, s: Subject, own_ns: str, other_ns: str) -> bool:
        """The same subject is also a submitter of the team owning `other_ns`."""
        who = identity(s, own_ns)
        return any(
            other_ns in t.all_namespaces
            and any(identity(o, t.namespace) == who for o in t.submitters)
            for t in self.cfg.teams
        )

    def team(self, p: TeamPlan) -> Row:
        team = p.team
        key = p.held.group.key
        quota = ", ".join(
            f"{f} {format_quantity(q.nominal)} / "
            + ("-" if q.borrowing_limit is None else format_quantity(q.borrowing_limit))
            for f in p.held.group.flavors
            for q in [p.quotas[f, key]]
        )
        flavors = [f for g in p.groups for f in g.flavors]
        admitted = self.fits(p)
        held = self.held(p)
        self.k.delete_jobs(["rehearse-held"], team.namespace)
        too_big = None
        if p.too_big is not None:
            too_big = self.too_big(p, p.too_big)
            self.k.delete_jobs(["rehearse-one-pod"], team.namespace)
        return Row(
            team.name,
            team.cluster_queue,
            ", ".join(dict.fromkeys(flavors)),
            f"{quota} ({key})" + ("" if team.cohort else ", no cohort"),
            admitted,
            held,
            too_big,
            self.rbac(p),
        )


HELD = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>\S+), previously considered "
    r"podsets requests \((?P<before>[^)]*)\) \+ current podset request \((?P<request>[^)]*)\) > "
    r"maximum capacity \((?P<ceiling>[^)]*)\)"
)


def check_held_message(message: str, job: HeldJob) -> None:
    """Kueue's message must name the pod set, and for every flavor of the group the resource,
    the job's request and exactly the ceiling computed from the stack config."""
    prefix = f"couldn't assign flavors to pod set {POD_SET}: "
    if not message.startswith(prefix):
        raise CheckFailed(f'Kueue said "{message}", expected it to start with "{prefix}"')
    found = {m["flavor"]: m for m in HELD.finditer(message)}
    problems = []
    for flavor, ceiling in job.ceilings.items():
        m = found.get(flavor)
        if m is None or m["resource"] != job.group.key:
            problems.append(f"no 'insufficient quota for {job.group.key} in flavor {flavor}'")
            continue
        try:
            request, said = parse_quantity(m["request"]), parse_quantity(m["ceiling"])
        except QuantityError as e:
            problems.append(f"unreadable quantity in flavor {flavor}: {e}")
            continue
        if request != job.request:
            problems.append(f"request ({m['request']}) in flavor {flavor} is not {job.request}")
        if said != ceiling:
            problems.append(
                f"maximum capacity in flavor {flavor} is {m['ceiling']}, the stack config "
                f"gives {format_quantity(ceiling)}"
            )
    if problems:
        raise CheckFailed(f'Kueue said "{message}": ' + "; ".join(problems))
