"""Reading Kueue's and the scheduler's own words off the objects (plain dicts, as the API
returns them): which flavor a workload was admitted to, why it waits, why it was evicted,
why its pods do not schedule. The what-if replay and `gpuq status` both read them here, so a
prediction and the live cluster speak the same language."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import urllib3

from gpu_queues import yamlio
from gpu_queues.values import as_dict, as_list
from gpu_queues.whatif.gpus import is_gpu, pod_gpus
from gpu_queues.whatif.report import Outcome


def condition(obj: Mapping[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for c in as_list(as_dict(as_dict(obj).get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def is_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def holds_quota(wl: Mapping[str, Any]) -> bool:
    """Quota reserved and not finished: the workload counts against its ClusterQueue."""
    return is_true(wl, "QuotaReserved") and not is_true(wl, "Finished")


def assigned_flavors(wl: Mapping[str, Any] | None) -> dict[str, dict[str, str]]:
    """Pod set -> resource -> the flavor Kueue assigned it (the workload's admission; empty
    while it has none). The what-if's, `gpuq status`'s and the rehearsal's reader."""
    assignments = as_list(
        as_dict(as_dict(as_dict(wl).get("status")).get("admission")).get("podSetAssignments")
    )
    out: dict[str, dict[str, str]] = {}
    for assignment in map(as_dict, assignments):
        flavors = as_dict(assignment.get("flavors")).items()
        out[str(assignment.get("name"))] = {str(r): f for r, f in flavors if isinstance(f, str)}
    return out


def admitted_flavor(wl: Mapping[str, Any]) -> str | None:
    """The flavor of the workload's admission: the GPUs' flavor when it has GPUs, else the
    flavors its resources got (comma-separated when they differ)."""
    gpu: list[str] = []
    other: list[str] = []
    for flavors in assigned_flavors(wl).values():
        for resource, flavor in flavors.items():
            target = gpu if is_gpu(resource) else other
            if flavor not in target:
                target.append(flavor)
    chosen = gpu or other
    return ", ".join(chosen) if chosen else None


def pending_message(wl: Mapping[str, Any]) -> str | None:
    """Kueue's reason the workload has no quota: the QuotaReserved=False message, or why it
    is inactive."""
    c = condition(wl, "QuotaReserved")
    if c is not None and c.get("status") == "False" and c.get("message"):
        return str(c["message"])
    if as_dict(as_dict(wl).get("spec")).get("active") is False:
        d = condition(wl, "Evicted")
        return str(d.get("message")) if d and d.get("message") else "deactivated"
    return None


def eviction(wl: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the workload's last eviction, if it carries one: Preempted
    (with Kueue's cause when it gives one, e.g. InCohortReclamation), PodsReadyTimeout, ..."""
    evicted = condition(wl, "Evicted")
    preempted = condition(wl, "Preempted")
    if preempted is not None and preempted.get("status") == "True":
        return (
            f"Preempted ({preempted.get('reason', '')})".replace(" ()", ""),
            str(preempted.get("message") or (evicted or {}).get("message") or ""),
        )
    if evicted is not None and evicted.get("status") == "True":
        return str(evicted.get("reason", "")), str(evicted.get("message") or "")
    return None


def preemptions(wl: Mapping[str, Any]) -> int:
    """How many times Kueue preempted the workload (its schedulingStats)."""
    stats = as_list(
        as_dict(as_dict(as_dict(wl).get("status")).get("schedulingStats")).get("evictions")
    )
    return sum(
        int(e.get("count", 0))
        for e in stats
        if isinstance(e, dict)
        and e.get("reason") == "Preempted"
        and isinstance(e.get("count"), int)
    )


def owner(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for ref in as_list(as_dict(as_dict(obj).get("metadata")).get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("kind") == kind:
            return ref
    return None


def pod_unschedulable(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's message for a pod it could not place (PodScheduled=False)."""
    c = condition(pod, "PodScheduled")
    if c is not None and c.get("status") == "False" and c.get("reason") == "Unschedulable":
        return str(c.get("message") or "unschedulable")
    return None


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str(as_dict(as_dict(pod).get("status")).get("phase") or "Pending")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


# --- a small REST client -----------------------------------------------------------------


# A cluster's answer is read whole; a list of 100,000 Workloads is a few hundred MB.
ANSWER_BOUNDS = yamlio.Bounds(max_bytes=2**30)


class KubeError(Exception):
    """The API server refused a request; `status` is the HTTP status, the message its own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Rest:
    """Plain JSON requests (and watch streams) over the in-memory TLS of
    gpu_queues.kueue.client.api_client: every Kubernetes and Kueue object as the dict the API
    returns, aggregated APIs (Kueue's visibility) included."""

    def __init__(self, api: Any) -> None:
        self.pool = api.rest_client.pool_manager
        self.host = str(api.configuration.host).rstrip("/")
        self.headers = {"Accept": "application/json"}
        key = (api.configuration.api_key or {}).get("BearerToken")
        if key:
            self.headers["Authorization"] = str(key)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float = 30.0,
    ) -> Any:
        headers = dict(self.headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        resp = self.pool.request(
            method,
            self.host + path,
            body=data,
            headers=headers,
            preload_content=not stream,
            timeout=urllib3.Timeout(connect=10.0, read=timeout),
            retries=False,
        )
        if resp.status >= 400:
            raw = resp.data if not stream else resp.read()
            try:
                message = str(json.loads(raw).get("message") or raw.decode(errors="replace"))
            except ValueError:
                message = raw.decode(errors="replace")
            raise KubeError(resp.status, message.strip())
        if stream or not resp.data:
            return resp if stream else None
        shown = f"the answer to {method} {path}"
        try:
            return yamlio.load_json(resp.data, shown, ANSWER_BOUNDS)
        except yamlio.YamlRefused as exc:
            raise KubeError(resp.status, str(exc)) from None
        except ValueError as exc:  # not JSON: a proxy's page, say
            raise KubeError(resp.status, f"{shown} is not JSON ({exc})") from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def create(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.request("POST", path, dict(body))

    def merge_patch(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.request("PATCH", path, dict(body), content_type="application/merge-patch+json")

    def replace(self, path: str, body: Mapping[str, Any]) -> Any:
        """PUT: the whole object, as read (its resourceVersion guards against a lost update)."""
        return self.request("PUT", path, dict(body))


# The reason of the Finished condition Kueue gives the Workload of an owner that is gone.
OWNER_GONE = "OwnerNotFound"
POD_GONE = "its pod was deleted, and nothing makes a plain Pod again"


def finished_done(wl: Mapping[str, Any]) -> bool:
    """Finished for having run: not Finished because Kueue preempted its plain Pod, which is
    then gone (Kueue finishes the Workload of an owner that is gone)."""
    c = condition(wl, "Finished")
    return c is not None and c.get("status") == "True" and c.get("reason") != OWNER_GONE


def classify(
    wl: Mapping[str, Any],
    running: bool,
    stuck: str | None,
    preempted: bool,
    *,
    gone_preempted: bool | None = None,
) -> tuple[Outcome, str | None, str | None]:
    """(outcome, flavor, message) of a workload as it stands, in the report's terms:
    finished; admitted (its pods run); unschedulable (admitted, its pods fit no node: `stuck`
    is the scheduler's message); preempted (waiting again after a preemption, or gone: Kueue
    preempts a plain Pod by deleting it, nothing makes it again, and Kueue finishes the
    Workload of an owner that is gone); pending. `gone_preempted` (`preempted` unless given):
    whether an owner gone after a preemption was gone for it (not so for a RayCluster the
    replay deletes when its time is up: its Workload is then finished)."""
    finished = condition(wl, "Finished")
    gone = preempted if gone_preempted is None else gone_preempted
    if gone and finished and finished.get("reason") == OWNER_GONE:
        why = eviction(wl)
        said = f"{why[0]}: {why[1]}" if why else "preempted"
        return "preempted", None, f"{said}; {POD_GONE}"
    if is_true(wl, "Finished"):
        return "finished", admitted_flavor(wl), None
    if holds_quota(wl):
        if running:
            return "admitted", admitted_flavor(wl), None
        return "unschedulable", admitted_flavor(wl), stuck or "admitted; its pods are not running"
    waiting = pending_message(wl)
    if preempted:
        why = eviction(wl)
        said = f"{why[0]}: {why[1]}" if why else "preempted"
        return "preempted", None, said + (f"; now: {waiting}" if waiting else "")
    return "pending", None, waiting


def workload_gpus(wl: Mapping[str, Any]) -> int:
    """GPUs the workload holds when admitted: each pod set's pods x GPUs per pod."""
    total = 0
    for ps in as_list(as_dict(as_dict(wl).get("spec")).get("podSets")):
        count = as_dict(ps).get("count", 1)
        per_pod = pod_gpus(as_dict(as_dict(ps).get("template")).get("spec"))
        total += per_pod * (count if isinstance(count, int) else 1)
    return total
