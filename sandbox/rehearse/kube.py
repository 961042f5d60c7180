"""The rehearsal's view of the sandbox cluster (`RehearsalClient`): the Kubernetes reads its
checks make, what the cluster said when one fails, the authorizer's answers, and waits that
take an answer standing for SETTLE seconds as the cluster's final "no". And which Kueue
release runs (`running_kueue`), for the rehearsal and the what-if alike.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client

from gpu_queues.config.model import Subject
from gpu_queues.kueue.client import file_client
from gpu_queues.release.module import RELEASE_IMAGE
from gpu_queues.whatif.workloads import condition
from sandbox import kueue_pod
from sandbox.paths import KUBECONFIG, ROOT

KUEUE = ("kueue.x-k8s.io", "v1beta2")
WAIT = 120.0  # generous: CI machines run other jobs beside the sandbox
SETTLE = 15.0  # how long a "no" from Kueue or the scheduler must stand to be final
T = TypeVar("T")


class CheckFailed(Exception):
    """A check failed; the message says what the cluster said."""


class RehearsalClient:
    """The rehearsal's client of the sandbox cluster (the kubeconfig's): its reads, what the
    cluster said, the authorizer's answers, and waits that take a standing no for an answer."""

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
        user, groups = identity(subject, team_ns)
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


def identity(subject: Subject, team_ns: str) -> tuple[str, list[str]]:
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


def running_kueue(k: RehearsalClient, version: str) -> RunningKueue:
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
