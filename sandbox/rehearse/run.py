"""Rehearse a stack on a fresh sandbox shaped like its cluster, before it reaches the cluster.

From the host (`make rehearse STACK=staging [STACK_FILE=path]`):
  python -m sandbox.rehearse.run STACK [--stack-file FILE] [--down]
stops any running sandbox, starts one shaped like the stack (sandbox.shape), and runs
the rehearsal inside its network namespace (`run`, below); --down stops the sandbox after.

Inside the namespace (`python -m sandbox.rehearse.run run STACK [--stack-file FILE]`):
1. deploys the stack's own file with only the sandbox's kubeconfig (and, when the stack's
   Kueue manifest cannot be read here, the rendered release of its version) substituted, with
   the policy pack and the pack config its deploy workflow uses;
2. per team: a job within its nominal quota is admitted to the flavor Kueue must pick and its
   pods run on that flavor's nodes; a job needing more than the team may use is held with
   Kueue's message naming the resource, each flavor and the team's ceiling there; a single pod
   bigger than a node (when the quota is) is admitted but never scheduled; each submitter may
   create Jobs in the team namespace only, and may not edit queues;
3. `pulumi preview --expect-no-changes`.
It prints one table and exits 1 when any row fails, with what the cluster said.
Jobs and expectations come from sandbox.rehearse.plan.

The fresh sandbox shaped like a stack (`fresh_sandbox`, `in_sandbox`), the deploy (`deploy`)
and the check of which Kueue release runs (`running_kueue`) are the what-if's too
(sandbox/replay/cli.py, sandbox/replay/engine.py): one code for both.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client

from gpu_queues import keys
from gpu_queues.config.model import StackConfig, Subject, Team
from gpu_queues.kueue.client import file_client
from gpu_queues.kueue.quantity import QuantityError, format_quantity, parse_quantity
from gpu_queues.release.render import RELEASE_IMAGE, rendered_path
from gpu_queues.tools.changed_stacks import policy_config
from gpu_queues.whatif.workloads import assigned_flavors, condition, is_true
from sandbox import kueue_pod
from sandbox import pulumi_stack as stack
from sandbox import shape as fake_cluster
from sandbox.paths import KUBECONFIG, ROOT, STATE
from sandbox.rehearse.plan import (
    POD_SET,
    FitsJob,
    HeldJob,
    JobShape,
    TeamPlan,
    TooBigJob,
    is_extended,
    plan,
)
from sandbox.shape import FLAVOR_ANNOTATION, ShapeError

KUEUE = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DEPLOY_WORKFLOW = ROOT / ".github" / "workflows" / "deploy.yml"
WORK = STATE / "rehearse"
POLICY_PACK = "policies"
WAIT = 120.0  # generous: CI machines run other jobs beside the sandbox
SETTLE = 15.0  # how long a "no" from Kueue or the scheduler must stand to be final
JOB_IMAGE = "registry.invalid/rehearsal:never-pulled"  # kwok plays the kubelet
QUEUE_VERBS = ("create", "update", "patch", "delete")
T = TypeVar("T")


# --- what the stack deploys with --------------------------------------------------------


def deploy_policy_config(stack_name: str, workflow: Path = DEPLOY_WORKFLOW) -> tuple[str, str]:
    """The policy pack config the stack's deploy uses, and where that comes from."""
    shown = workflow.relative_to(ROOT) if workflow.is_relative_to(ROOT) else workflow
    jobs = (yaml.safe_load(workflow.read_text()) or {}).get("jobs") or {}
    for job_name, job in jobs.items():
        given = (job or {}).get("with") or {}
        if given.get("stack") == stack_name and given.get("policy-config"):
            return str(given["policy-config"]), f"job {job_name} of {shown}"
    return (
        policy_config(stack_name),
        f"{shown} does not deploy it; the preview rule "
        "(policies/config/<stack>.json, else prod.json)",
    )


def sandbox_stack_file(
    stack_name: str,
    path: Path,
    cfg: StackConfig,
    out_dir: Path = WORK,
    rendered: Path | None = None,
) -> tuple[Path, list[str]]:
    """The stack file as the sandbox deploys it, and what was substituted: the connection
    (the sandbox's kubeconfig is added as a secret by sandbox.pulumi_stack), and the Kueue manifest
    only when the stack's cannot be read here. Everything else is the stack's own config."""
    doc = yaml.safe_load(path.read_text()) or {}
    values = dict(doc.get("config") or {})
    notes = []
    connection = f"{keys.PROJECT}:{keys.KEY_KUBERNETES}"
    if values.pop(connection, None) is not None:
        notes.append(f"{connection} (kubeconfig, context) -> the sandbox's kubeconfig (secret)")
    else:
        notes.append(f"{connection}.kubeconfig (unset: $KUBECONFIG) -> the sandbox's (secret)")
    manifest = cfg.kueue.manifest
    if cfg.kueue.install and (manifest.path is None or not (ROOT / manifest.path).is_file()):
        rendered = rendered or rendered_path(cfg.kueue.version)
        was = manifest.path or cfg.kueue.manifest_url
        kueue_key = f"{keys.PROJECT}:{keys.KEY_KUEUE}"
        kueue = dict(values.get(kueue_key) or {})
        where = rendered.relative_to(ROOT) if rendered.is_relative_to(ROOT) else rendered
        kueue["manifest"] = {
            "path": str(where),
            "sha256": hashlib.sha256(rendered.read_bytes()).hexdigest(),
        }
        values[kueue_key] = kueue
        notes.append(
            f"kueue.manifest {was} (cannot be read in the sandbox) -> "
            f"{where}, the same release rendered from the pinned module"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"Pulumi.{stack_name}.yaml"
    out.write_text(yaml.safe_dump({"config": values}, sort_keys=False))
    return out, notes


# --- results ----------------------------------------------------------------------------


@dataclass
class Cell:
    ok: bool
    text: str
    said: str = ""
    """What the cluster said, when the check failed."""


@dataclass
class Row:
    team: str
    cluster_queue: str
    flavors: str
    quota: str
    admitted: Cell
    held: Cell
    too_big: Cell | None
    rbac: Cell

    def cells(self) -> dict[str, Cell]:
        out = {"job admitted": self.admitted, "job held": self.held, "RBAC": self.rbac}
        if self.too_big is not None:
            out["one pod > a node"] = self.too_big
        return out

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cells().values())


class CheckFailed(Exception):
    """A check failed; the message says what the cluster said."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: list[Row]) -> str:
    head = [
        "team",
        "ClusterQueue",
        "flavor",
        "nominal / borrowing limit",
        "job admitted",
        "job held + message",
        "one pod > a node",
        "RBAC",
        "result",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        values = [
            r.team,
            r.cluster_queue,
            r.flavors,
            r.quota,
            r.admitted.text,
            r.held.text,
            r.too_big.text if r.too_big else "-",
            r.rbac.text,
            "pass" if r.ok else "FAIL",
        ]
        lines.append("| " + " | ".join(_cell(v) for v in values) + " |")
    return "\n".join(lines)


# --- the cluster ------------------------------------------------------------------------


class Cluster:
    def __init__(self, kubeconfig: Path = KUBECONFIG) -> None:
        # Built in memory: the kubernetes package's loader would write the admin key to /tmp.
        api = file_client(kubeconfig)
        # The client's models type every field Optional; read them as plain objects.
        self.batch: Any = client.BatchV1Api(api)
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)
        self.authz: Any = client.AuthorizationV1Api(api)

    def wait(
        self,
        what: str,
        check: Callable[[], T | None],
        said: Callable[[], str],
        stuck: Callable[[], str | None] | None = None,
    ) -> T:
        """Poll `check` until it returns something. `stuck` says when the cluster has answered
        no (a Workload Kueue keeps pending, a pod the scheduler cannot place): on a cluster
        where nothing else runs, an answer that stands for SETTLE seconds is final."""
        deadline = time.monotonic() + WAIT
        since: float | None = None
        while True:
            result = check()
            if result:
                return result
            now = time.monotonic()
            answer = stuck() if stuck is not None else None
            since = (since or now) if answer else None
            if since is not None and now - since > SETTLE:
                raise CheckFailed(f"{what}: the cluster says no ({SETTLE:.0f}s): {said()}")
            if now > deadline:
                raise CheckFailed(f"timed out after {WAIT:.0f}s waiting for {what}: {said()}")
            time.sleep(0.25)

    def pending(self, job: str, ns: str) -> str | None:
        """Kueue's reason for not reserving quota, when it gave one."""
        c = condition(self.workload(job, ns), "QuotaReserved")
        if c is not None and c["status"] == "False" and c.get("reason") == "Pending":
            return str(c.get("message", ""))
        return None

    def unschedulable(self, job: str, ns: str) -> str | None:
        """The scheduler's reason for not placing a pod of the job, when it gave one."""
        for p in self.pods(job, ns):
            for c in p.status.conditions or []:
                if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
                    return str(c.message)
        return None

    def controller_images(self) -> list[str]:
        """The images of Kueue's live controller pods (the `manager` container)."""
        pods = self.core.list_namespaced_pod(
            kueue_pod.NAMESPACE, label_selector=kueue_pod.SELECTOR
        ).items
        return sorted(
            {
                c.image
                for p in pods
                if p.metadata.deletion_timestamp is None
                for c in p.spec.containers
                if c.name == kueue_pod.CONTAINER
            }
        )

    def workload(self, job: str, ns: str) -> dict[str, Any] | None:
        items = self.custom.list_namespaced_custom_object(*KUEUE, ns, "workloads")["items"]
        for wl in items:
            owners = wl["metadata"].get("ownerReferences", [])
            if any(o["kind"] == "Job" and o["name"] == job for o in owners):
                return dict(wl)
        return None

    def pods(self, job: str, ns: str) -> list[Any]:
        found: list[Any] = self.core.list_namespaced_pod(ns, label_selector=f"job-name={job}").items
        return found

    def workload_said(self, job: str, ns: str) -> str:
        wl = self.workload(job, ns)
        if wl is None:
            return f"no Workload for Job {ns}/{job} (is Kueue managing the namespace?)"
        conds = wl.get("status", {}).get("conditions", [])
        return (
            "; ".join(
                f"{c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}"
                for c in conds
            )
            or "the Workload has no conditions yet"
        )

    def pods_said(self, job: str, ns: str) -> str:
        parts = []
        for p in self.pods(job, ns):
            sched = next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)
            state = p.status.phase
            if sched is not None and sched.status != "True":
                state += f", PodScheduled={sched.status} {sched.reason}: {sched.message}"
            parts.append(f"pod {p.metadata.name} {state}")
            events = self.core.list_namespaced_event(
                ns, field_selector=f"involvedObject.name={p.metadata.name}"
            ).items
            for e in events[-2:]:
                if e.type == "Warning":
                    parts.append(f"event {e.reason}: {e.message}")
        return "; ".join(parts) or f"no pods of Job {ns}/{job}"

    def delete_jobs(self, names: list[str], ns: str) -> None:
        for name in names:
            try:
                self.batch.delete_namespaced_job(name, ns, propagation_policy="Background")
            except client.ApiException as e:
                if e.status != 404:
                    raise
        # Their pods must be gone before the next team's jobs look for room on the nodes.
        self.wait(
            f"jobs {', '.join(names)} and their pods to go",
            lambda: not any(self.pods(n, ns) or self.workload(n, ns) for n in names),
            lambda: "; ".join(self.pods_said(n, ns) for n in names),
        )

    def allowed(
        self, subject: Subject, team_ns: str, verb: str, resource: str, ns: str | None, name: str
    ) -> bool:
        """The authorizer's answer for the subject (a SubjectAccessReview)."""
        user, groups = _identity(subject, team_ns)
        attributes: dict[str, Any] = {
            "verb": verb,
            "group": resource.split(".", 1)[1] if "." in resource else "",
            "resource": resource.split(".", 1)[0],
        }
        if ns is not None:
            attributes["namespace"] = ns
        if name:
            attributes["name"] = name
        review = self.authz.create_subject_access_review(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": groups, "resourceAttributes": attributes},
            }
        )
        return bool(review.status.allowed)


def _identity(subject: Subject, team_ns: str) -> tuple[str, list[str]]:
    """Who the API server sees when the subject calls: its user name and groups."""
    if subject.kind == "ServiceAccount":
        ns = subject.namespace or team_ns
        return f"system:serviceaccount:{ns}:{subject.name}", [
            "system:serviceaccounts",
            f"system:serviceaccounts:{ns}",
            "system:authenticated",
        ]
    if subject.kind == "Group":
        # A member of the group; the user name itself grants nothing.
        return f"rehearsal-member-of:{subject.name}", [subject.name, "system:authenticated"]
    return subject.name, ["system:authenticated"]


def _subject(s: Subject) -> str:
    return f"{s.kind} {s.namespace + '/' if s.namespace else ''}{s.name}"


# --- jobs -------------------------------------------------------------------------------


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


def job_manifest(
    name: str,
    team: Team,
    shape: JobShape,
    claim: str | None = None,
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    quantities = shape.quantities()
    resources: dict[str, Any] = {"requests": dict(quantities)}
    # Extended resources are asked for as limits (requests must equal them).
    limits = {r: q for r, q in quantities.items() if is_extended(r)}
    if limits:
        resources["limits"] = limits
    container: dict[str, Any] = {
        "name": "work",
        "image": JOB_IMAGE,
        "command": ["sleep", "infinity"],
        "resources": resources,
    }
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if selector:
        pod["nodeSelector"] = dict(selector)
    if claim is not None:
        container["volumeMounts"] = [{"name": "shared", "mountPath": "/mnt/shared"}]
        pod["volumes"] = [{"name": "shared", "persistentVolumeClaim": {"claimName": claim}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": team.namespace,
            "labels": {QUEUE_LABEL: team.local_queue},
        },
        "spec": {
            "parallelism": shape.pods,
            "completions": shape.pods,
            "suspend": True,
            "backoffLimit": 0,
            "template": {"spec": pod},
        },
    }


def _nodes(names: list[str]) -> str:
    """Node names, naturally sorted; a long list shortened (a job may span fifty nodes)."""
    ordered = sorted(
        set(names), key=lambda n: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", n)]
    )
    if len(ordered) <= 4:
        return ", ".join(ordered)
    return f"{len(ordered)} nodes: {', '.join(ordered[:3])}, ..., {ordered[-1]}"


def _admitted(wl: dict[str, Any] | None) -> dict[str, Any] | None:
    return wl if is_true(wl, "Admitted") else None


def kueue_process(pid_file: Path = kueue_pod.WORK / kueue_pod.PID_FILE_NAME) -> Path | None:
    """The executable of the process playing Kueue's controller pod, when one runs."""
    try:
        pid = int(json.loads(pid_file.read_text())["pid"])
        return Path(f"/proc/{pid}/exe") if Path(f"/proc/{pid}/exe").exists() else None
    except (OSError, ValueError, KeyError):
        return None


@dataclass(frozen=True)
class RunningKueue:
    """The Kueue release the sandbox runs, as read from the running controller."""

    version: str
    image: str
    """The controller pod's image."""
    binary: str
    """The binary of the process playing the pod (relative to the project when inside)."""

    def describe(self) -> str:
        return f"Kueue {self.version}: controller image {self.image}, played by {self.binary}"


def running_kueue(k: Cluster, version: str) -> RunningKueue:
    """Which Kueue ran the rehearsal (or a what-if replay): the controller pods must carry the
    stack's release tag and the process playing them must be that release's binary (a pin
    move, or a stack that sets its own kueue.version, runs at its release, not at whatever
    was built last). CheckFailed, with what runs instead, when they do not."""
    binary = kueue_pod.binary_for(f"{RELEASE_IMAGE}:{version}")
    shown = binary.relative_to(ROOT) if binary.is_relative_to(ROOT) else binary

    def check() -> RunningKueue | None:
        images = k.controller_images()
        exe = kueue_process()
        if len(images) != 1 or images[0].rpartition(":")[2] != version or exe is None:
            return None
        if not os.path.samefile(exe, binary):
            return None
        return RunningKueue(version, images[0], str(shown))

    def said() -> str:
        exe = kueue_process()
        try:
            runs = "no process" if exe is None else os.readlink(exe)
        except OSError as e:
            runs = f"unreadable ({e})"
        return f"controller pod image(s) {k.controller_images() or 'none'}; the process runs {runs}"

    return k.wait(f"Kueue {version} ({shown}) to play the controller", check, said)


class Rehearsal:
    def __init__(self, cfg: StackConfig, k: Cluster) -> None:
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
    ) -> dict[str, Any]:
        ns = team.namespace
        self.k.batch.create_namespaced_job(ns, job_manifest(name, team, shape, claim, selector))
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
        must pick, its pods Running on nodes of that flavor."""
        parts: list[str] = []
        for i, job in enumerate(p.fits):
            try:
                parts.append(self.fits_one(p, job, f"rehearse-fits-{i}"))
            except CheckFailed as e:
                where = f" (nodeSelector {_labels(job.selector)})" if job.selector else ""
                return Cell(False, f"FAIL: {job.shape.describe()}{where}", str(e))
            finally:
                self.k.delete_jobs([f"rehearse-fits-{i}"], p.team.namespace)
        for flavor, why in p.unreachable.items():
            parts.append(f"no job sent to {flavor}: {why}")
        return Cell(True, "; ".join(parts))

    def fits_one(self, p: TeamPlan, job: FitsJob, name: str) -> str:
        ns = p.team.namespace
        expected = {
            r: job.flavors[g.index]
            for g in p.groups
            if g.index in job.flavors
            for r in g.covered
            if r in job.shape.totals()
        }
        wl = self.admit(name, p.team, job.shape, self.claims.get(ns), job.selector)
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
            + (f" with nodeSelector {_labels(job.selector)}" if job.selector else "")
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
        return _nodes(nodes), notes

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
            f"{n} subject(s): create Jobs in {team.namespace} yes; in "
            f"{len(p.other_namespaces)} other team namespace(s) no; edit queues no",
        )

    def rbac_of(self, p: TeamPlan, s: Subject) -> list[str]:
        """What the subject may do that it should not, or may not do that it should."""
        ns = p.team.namespace
        expect: list[tuple[bool, str, str, str | None, str]] = [
            (True, "create", "jobs.batch", ns, "")
        ]
        expect += [
            (False, "create", "jobs.batch", other, "")
            for other in p.other_namespaces
            if not self.submits_there(s, ns, other)
        ]
        for verb in QUEUE_VERBS:
            expect.append((False, verb, "clusterqueues.kueue.x-k8s.io", None, p.team.cluster_queue))
            expect.append((False, verb, "localqueues.kueue.x-k8s.io", ns, p.team.local_queue))
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
        who = _identity(s, own_ns)
        return any(
            t.namespace == other_ns and any(_identity(o, t.namespace) == who for o in t.submitters)
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


# --- the run inside the sandbox -----------------------------------------------------------


@dataclass
class Timings:
    steps: dict[str, float] = field(default_factory=dict)

    def timed(self, what: str, fn: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return fn()
        finally:
            self.steps[what] = time.monotonic() - started

    def line(self) -> str:
        return ", ".join(f"{k} {v:.1f}s" for k, v in self.steps.items())


def say(text: str) -> None:
    print(f"rehearse: {text}", file=sys.stderr, flush=True)


def _tail(done: subprocess.CompletedProcess[str], lines: int = 40) -> str:
    """The last lines, after the first error lines (the cause scrolls out of a long tail)."""
    out = (done.stdout + done.stderr).splitlines()
    errors = list(dict.fromkeys(line.strip() for line in out if "error:" in line))[:6]
    return "\n".join([*errors, "...", *out[-lines:]] if errors else out[-lines:])


class DeployFailed(Exception):
    """`pulumi up` failed; the message has its exit status and what it said."""


def deploy(stack_name: str, source: Path, *options: str) -> None:
    """`pulumi up` of the stack file on the running sandbox, through the real CLI
    (sandbox/pulumi_stack.py, with the sandbox's kubeconfig as the connection secret). DeployFailed
    names the exit status, the first error lines and the tail of the output."""
    done = stack.pulumi(
        "up", "--yes", "--skip-preview", *options,
        stack=stack_name, source=source, check=False, capture=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise DeployFailed(
            f"pulumi up of stack {stack_name} ({source}) exited {done.returncode}:\n{_tail(done)}"
        )


def run(stack_name: str, stack_file: Path | None) -> int:
    timings = Timings()
    try:
        path = fake_cluster.stack_path(stack_name, stack_file)
        cfg = fake_cluster.load_stack(path)
    except ShapeError as e:
        print(f"rehearse: {e}", file=sys.stderr)
        return 2
    why = fake_cluster.mismatch(stack_name, path)
    if why:
        print(f"rehearse: the sandbox is not shaped like this stack: {why}", file=sys.stderr)
        return 2
    source, notes = sandbox_stack_file(stack_name, path, cfg)
    pack_config, chosen = deploy_policy_config(stack_name)
    say(f"stack {stack_name} from {path}")
    for n in notes:
        say(f"substituted {n}")
    say(f"policy pack {POLICY_PACK} with {pack_config} ({chosen})")
    pack = ["--policy-pack", POLICY_PACK, "--policy-pack-config", pack_config]

    def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
        return stack.pulumi(*args, stack=stack_name, source=source, check=False, capture=True)

    say("pulumi up ...")
    try:
        timings.timed("pulumi up", lambda: deploy(stack_name, source, *pack))
    except DeployFailed as e:
        print(f"FAIL deploy: {e}")
        return 1
    k = Cluster()
    try:
        kueue_ran: Cell = Cell(True, running_kueue(k, cfg.kueue.version).describe())
    except CheckFailed as e:
        kueue_ran = Cell(False, f"not Kueue {cfg.kueue.version}", str(e))
    say(kueue_ran.text)
    rehearsal = Rehearsal(cfg, k)
    rows: list[Row] = []

    def checks() -> None:
        for p in plan(cfg):
            say(f"team {p.team.name} ...")
            try:
                rows.append(rehearsal.team(p))
            except (CheckFailed, client.ApiException) as e:
                # Cleaning up after a check failed too: the row fails, the others still run.
                broken = Cell(False, "FAIL", f"{type(e).__name__}: {e}")
                t = p.team
                rows.append(Row(t.name, t.cluster_queue, "-", "-", broken, broken, None, broken))

    timings.timed("team checks", checks)
    say("pulumi preview --expect-no-changes ...")
    preview = timings.timed(
        "preview", lambda: pulumi("preview", "--expect-no-changes", "--diff", *pack)
    )
    print(f"\nRehearsal of stack {stack_name} ({path}) on the sandbox, {kueue_ran.text}:\n")
    print(table(rows))
    failed = 0
    if not kueue_ran.ok:
        failed += 1
        print(f"\nFAIL Kueue release: {kueue_ran.said}")
    for r in rows:
        for column, c in r.cells().items():
            if not c.ok:
                failed += 1
                print(f"\nFAIL team {r.team}, {column}: {c.said}")
    if preview.returncode != 0:
        failed += 1
        print(f"\nFAIL preview --expect-no-changes:\n{_tail(preview)}")
    else:
        print("\npulumi preview --expect-no-changes: no changes")
    print(f"timings: {timings.line()}")
    if failed:
        print(f"\nrehearsal of {stack_name}: {failed} check(s) failed")
        return 1
    print(f"\nrehearsal of {stack_name}: every row passed")
    return 0


# --- from the host --------------------------------------------------------------------------

SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]


class SandboxError(Exception):
    """The sandbox did not start; the message names the command that failed."""


def _sandbox(*args: str, quiet: bool = False) -> int:
    return subprocess.run([*SANDBOX, *args], cwd=ROOT, check=False, capture_output=quiet).returncode


@contextmanager
def fresh_sandbox(stack_name: str, stack_file: Path | None, keep: bool = False) -> Iterator[None]:
    """A sandbox started fresh, shaped like the stack file (sandbox.shape: its nodes,
    namespaces, volumes and Kueue release; any sandbox of this checkout is stopped first),
    and stopped afterwards unless `keep`. SandboxError when it does not start."""
    extra = [str(stack_file.resolve())] if stack_file else []
    _sandbox("down", quiet=True)
    started = time.monotonic()
    code = _sandbox("up", stack_name, *extra)
    if code != 0:
        shown = " ".join(["sandbox/sandbox.sh up", stack_name, *extra])
        raise SandboxError(f"`{shown}` failed (exit {code})")
    print(f"sandbox: up in {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if keep:
            print(
                "sandbox: still up: make sandbox-shell to look around, make sandbox-down",
                file=sys.stderr,
            )
        else:
            _sandbox("down", quiet=True)


def in_sandbox(*command: str) -> int:
    """Run the command inside the running sandbox's network namespace; its exit status."""
    return _sandbox("exec", *command)


def fresh(stack_name: str, stack_file: Path | None, down_after: bool) -> int:
    """Stop any sandbox, start one shaped like the stack, rehearse inside it."""
    extra = ["--stack-file", str(stack_file.resolve())] if stack_file else []
    try:
        with fresh_sandbox(stack_name, stack_file, keep=not down_after):
            return in_sandbox(
                sys.executable, "-m", "sandbox.rehearse.run", "run", stack_name, *extra
            )
    except SandboxError as e:
        say(str(e))
        return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.rehearse.run", description=__doc__)
    parser.add_argument("stack", nargs="+", help="[run] STACK")
    parser.add_argument("--stack-file", type=Path, help="default: Pulumi.<STACK>.yaml")
    parser.add_argument("--down", action="store_true", help="stop the sandbox afterwards")
    args = parser.parse_args(argv)
    if args.stack[0] == "run" and len(args.stack) == 2:
        return run(args.stack[1], args.stack_file)
    if len(args.stack) != 1:
        parser.error("give one stack name")
    return fresh(args.stack[0], args.stack_file, args.down)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
