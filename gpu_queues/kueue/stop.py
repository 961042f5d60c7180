"""A team's ClusterQueue changing its `stopPolicy`: what that does to the team, said once here
for every place a reviewer must see it first (the preview's warnings, quota-diff and so the
PR comment).

`Hold` stops new admissions and leaves running jobs alone; `HoldAndDrain` also evicts every
admitted workload; `None` (or no stopPolicy) admits again. A change of the field is one line
of YAML that can stop a team's work or evict its running jobs, so it is never left among the
quota rows: each says which team, what happens and how many admitted workloads it touches,
read from the cluster (the ClusterQueue's status.admittedWorkloads, Kueue's own count, which
`make status` reads too) or said to be unknown when no cluster answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.values import as_dict, as_list, as_str

NONE: Final = "None"
# The block quota-diff writes its lines in, so the PR comment can keep it first
# (gpu_queues/tools/pr_comment.py lifts it above everything else).
BEGIN: Final = "<!-- stop-policy -->"
END: Final = "<!-- /stop-policy -->"


@dataclass(frozen=True)
class StopChange:
    """A team whose ClusterQueue's stopPolicy moves from `before` to `after` (unset is None)."""

    team: str
    cluster_queue: str
    before: str
    after: str

    @property
    def evicts(self) -> bool:
        return self.after == "HoldAndDrain"


def stop_changes(
    before: Iterable[tuple[str, str | None]], after: Iterable[tuple[str, str, str | None]]
) -> list[StopChange]:
    """The teams of `after` ((team, ClusterQueue, stopPolicy)) whose policy differs from the
    one `before` ((team, stopPolicy)) gave them; a new team counts as having had None."""
    old = {team: policy or NONE for team, policy in before}
    return [
        StopChange(team, cq, old.get(team, NONE), policy or NONE)
        for team, cq, policy in after
        if old.get(team, NONE) != (policy or NONE)
    ]


def _count(admitted: int | None, unknown: str) -> str:
    if admitted is None:
        return f"admitted workloads (how many is unknown: {unknown})"
    return f"{admitted} admitted workload{'' if admitted == 1 else 's'}"


def sentence(change: StopChange, admitted: int | None, unknown: str = "no cluster read") -> str:
    """The change in one plain line (callers writing Markdown escape it), `admitted` the
    ClusterQueue's admitted workloads now, None when `unknown` says why they were not read."""
    move = f"stopPolicy {change.before} → {change.after}"
    count = _count(admitted, unknown)
    if change.evicts:
        return (
            f"team {change.team}: its running jobs will be evicted and nothing new admitted "
            f"({move}); {count} to be evicted"
        )
    if change.after == "Hold":
        return (
            f"team {change.team} stops admitting: new workloads wait ({move}); its {count} "
            "keep running"
        )
    if admitted is None:
        return (
            f"team {change.team} admits again ({move}); admitted workloads now: unknown ({unknown})"
        )
    return f"team {change.team} admits again ({move}); {count} now"


@dataclass(frozen=True)
class LiveQueue:
    """A ClusterQueue as the cluster has it: its stopPolicy and admitted workloads."""

    stop_policy: str
    admitted: int | None


def live_queues(listing: Any) -> dict[str, LiveQueue]:
    """A ClusterQueue list as the API serves it, by name; read as data of any shape (what is
    not an object with a name is left out, a count that is no integer is unknown)."""
    out: dict[str, LiveQueue] = {}
    for item in as_list(as_dict(listing).get("items")):
        cq = as_dict(item)
        name = as_str(as_dict(cq.get("metadata")).get("name"))
        if not name:
            continue
        count = as_dict(cq.get("status")).get("admittedWorkloads", 0)
        admitted = count if isinstance(count, int) and not isinstance(count, bool) else None
        policy = as_str(as_dict(cq.get("spec")).get("stopPolicy")) or NONE
        out[name] = LiveQueue(policy, admitted)
    return out


def counts(queues: Mapping[str, LiveQueue]) -> dict[str, int]:
    """Admitted workloads by ClusterQueue, where the cluster gave a count."""
    return {name: q.admitted for name, q in queues.items() if q.admitted is not None}


def against_live(
    teams: Iterable[tuple[str, str, str | None]], queues: Mapping[str, LiveQueue]
) -> list[str]:
    """The preview's lines: each team whose stopPolicy differs from its live ClusterQueue's."""
    teams = list(teams)
    live = [(team, queues[cq].stop_policy) for team, cq, _ in teams if cq in queues]
    out = []
    for change in stop_changes(live, teams):
        queue = queues.get(change.cluster_queue)
        admitted = 0 if queue is None else queue.admitted  # a new ClusterQueue admits nothing yet
        out.append(sentence(change, admitted, "the cluster gave no count"))
    return out


def unread(teams: Iterable[tuple[str, str, str | None]], why: str) -> list[str]:
    """The preview's lines when the cluster could not be read: every team the stack holds or
    drains, since whether that is a change is unknown."""
    return [
        sentence(c, None, why) + " (whether it is held now is unknown too)"
        for c in stop_changes([], teams)
        if c.after != NONE
    ]


class Unreadable(Exception):
    """The cluster's ClusterQueues could not be listed; the message says why."""


def read_live(kubeconfig: str | None, context: str | None) -> dict[str, LiveQueue]:
    """The cluster's ClusterQueues: one list, read-only, through the stack's kubeconfig."""
    import urllib3
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from gpu_queues.kueue.client import KubeconfigError, api_client

    try:
        custom: Any = client.CustomObjectsApi(api_client(kubeconfig, context))
        listing = custom.list_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta2", "clusterqueues", _request_timeout=10
        )
    except KubeconfigError as exc:
        raise Unreadable(f"no usable kubeconfig: {exc}") from None
    except ApiException as exc:
        raise Unreadable(f"listing ClusterQueues: {exc.status} {exc.reason}") from None
    except (OSError, urllib3.exceptions.HTTPError) as exc:
        raise Unreadable(f"the cluster did not answer: {type(exc).__name__}") from None
    return live_queues(listing)


Reader = Callable[[str | None, str | None], Mapping[str, LiveQueue]]


def preview_lines(
    teams: Iterable[tuple[str, str, str | None]],
    kubeconfig: str | None,
    context: str | None,
    reader: Reader | None = None,
) -> list[str]:
    """What the preview warns of first: each stopPolicy change against the cluster, with the
    admitted workloads it touches. A cluster that cannot be read makes both unknown: every
    team the stack holds or drains is then named."""
    teams = list(teams)
    try:
        queues = (reader or read_live)(kubeconfig, context)
    except Unreadable as exc:
        return unread(teams, f"the cluster could not be read: {exc}")
    return against_live(teams, queues)
