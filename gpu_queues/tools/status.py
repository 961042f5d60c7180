"""What the cluster does now, per team, in the what-if's format: read-only, from the
ClusterQueues, LocalQueues and Workloads, the scheduler's word on pending pods, and Kueue's
visibility API for the position of every pending workload in its queues.

    gpuq status [--stack NAME] [--project DIR] [--kubeconfig FILE] [--json] [--eta ...]
    make status [STACK=staging]

With --stack, the cluster is the stack's: its `gpu-queues:kubernetes.kubeconfig` secret (read
through the Pulumi CLI into memory, never written anywhere) and context, and the teams are
the stack's; without it, the --kubeconfig file or $KUBECONFIG, and every ClusterQueue. The
outcome of each workload and the team figures follow the what-if's rules
(gpu_queues/whatif/report.py), with these live readings: a wait is from the workload's
creation to its last admission, GPU-hours run from the last admission to now (or to its
end), and a pending workload's message leads with its positions in the ClusterQueue and
LocalQueue. `gpuq record` (gpu_queues/tools/record.py) reads the cluster the same way, and
`--eta` (gpu_queues/tools/eta.py, `make status ARGS=--eta`) replays this snapshot forward.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import urllib3

from gpu_queues import invoked, keys
from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import ROOT, StackFileError, parse_config
from gpu_queues.kueue import stop
from gpu_queues.kueue.client import KubeconfigError, api_client, file_client
from gpu_queues.tools import pulumi_cli
from gpu_queues.tools.owners import Owners, recorded_owner
from gpu_queues.values import as_dict, as_list, as_str
from gpu_queues.whatif.markdown import team_table, workload_table
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results
from gpu_queues.whatif.workloads import (
    KubeError,
    Rest,
    classify,
    condition,
    pod_unschedulable,
    preemptions,
    workload_gpus,
)

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
# Kueue v0.18 serves its visibility API as v1beta2 and v1beta1; v1beta2 is preferred.
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
KUBECONFIG_KEY = f"{keys.PROJECT}:{keys.KEY_KUBERNETES}.kubeconfig"


class StatusError(Exception):
    """The status cannot be read; the message says why."""


def _time(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def stack_config(stack: str, project: Path) -> tuple[StackConfig, dict[str, Any]]:
    """The stack's validated config and its `gpu-queues:kubernetes` settings (unread)."""
    path = project / f"Pulumi.{stack}.yaml"
    try:
        raw = parse_config(path.read_text(encoding="utf-8"), path.name)
    except (OSError, StackFileError) as exc:
        raise StatusError(f"cannot read stack {stack!r}: {exc}") from None
    kubernetes = raw.pop(keys.KEY_KUBERNETES, None) or {}
    try:
        config = load_config(raw)
    except ConfigError as exc:
        raise StatusError(f"{path.name}: the stack config is invalid:\n{exc}") from None
    return config, kubernetes if isinstance(kubernetes, dict) else {}


def stack_connection(
    stack: str, project: Path
) -> tuple[str | None, str | None, list[tuple[str, str]]]:
    """The stack's kubeconfig (None: unset, so $KUBECONFIG), context, and (team, ClusterQueue)
    list. The kubeconfig is a Pulumi secret: the CLI decrypts it into this process's memory."""
    config, kubernetes = stack_config(stack, project)
    context = kubernetes.get("context")
    kubeconfig = None
    if kubernetes.get("kubeconfig") is not None:
        try:
            kubeconfig = pulumi_cli.config_value(KUBECONFIG_KEY, stack, cwd=project)
        except pulumi_cli.PulumiError as exc:
            raise StatusError(
                f"cannot read {KUBECONFIG_KEY} of stack {stack!r} through the Pulumi CLI: "
                f"{exc.reason or 'failed'}"
            ) from None
    return kubeconfig, context, [(t.name, t.cluster_queue) for t in config.teams]


def _pending_positions(rest: Rest, cq: str) -> dict[str, tuple[int, int]] | None:
    """Workload name (namespace/name) -> (position in the ClusterQueue, in the LocalQueue);
    None when the visibility API does not answer for the ClusterQueue (not served)."""
    try:
        found = rest.get(f"{VISIBILITY}/clusterqueues/{cq}/pendingworkloads")
    except KubeError as exc:
        if exc.status in (404, 503):
            return None
        raise
    return {
        f"{w['metadata'].get('namespace')}/{w['metadata']['name']}": (
            int(w.get("positionInClusterQueue", 0)),
            int(w.get("positionInLocalQueue", 0)),
        )
        for w in found.get("items", [])
    }


def team_queues(
    rest: Rest, teams: list[tuple[str, str]] | None
) -> tuple[list[tuple[str, str]], dict[tuple[str, str], str | None]]:
    """The (team, ClusterQueue) list (None: every ClusterQueue, named by its team label) and
    each LocalQueue's ClusterQueue by (namespace, name): what a live reading is filtered by
    (`gpuq status`, and `gpuq record`'s recording). The server's answers are read as data
    of any shape (a hostile or broken one sends lists or numbers): what is not an object with
    a name is left out."""
    if teams is None:
        teams = []
        for cq in _items(rest, "clusterqueues"):
            meta = as_dict(cq.get("metadata"))
            name = as_str(meta.get("name"))
            if name:
                team = as_str(as_dict(meta.get("labels")).get(keys.LABEL_TEAM))
                teams.append((team or name, name))
    queues: dict[tuple[str, str], str | None] = {}
    for lq in _items(rest, "localqueues"):
        meta = as_dict(lq.get("metadata"))
        namespace, name = as_str(meta.get("namespace")), as_str(meta.get("name"))
        if namespace and name:
            queues[(namespace, name)] = as_str(as_dict(lq.get("spec")).get("clusterQueue"))
    return teams, queues


def _items(rest: Rest, plural: str) -> list[dict[str, Any]]:
    return [as_dict(i) for i in as_list(as_dict(rest.get(f"{KUEUE}/{plural}")).get("items"))]


def connect(
    stack: str | None, project: Path, kubeconfig: Path | None = None
) -> tuple[Rest, str, list[tuple[str, str]] | None]:
    """The live cluster to read, read-only: the stack's (its kubeconfig secret and context,
    and its teams), else a kubeconfig file, else $KUBECONFIG (and every ClusterQueue's team).
    The client, how a report names the source, and the teams."""
    if stack:
        text, context, teams = stack_connection(stack, project)
        return Rest(api_client(text, context)), f"stack {stack}", teams
    if kubeconfig is not None:
        return Rest(file_client(kubeconfig)), f"kubeconfig {kubeconfig}", None
    return Rest(api_client(None, None)), "$KUBECONFIG", None


@dataclass(frozen=True)
class Snapshot:
    """One read-only reading of the live cluster, the home of what `gpuq status` reports and
    `gpuq status --eta` (gpu_queues/tools/eta.py) replays forward."""

    now: float
    teams: list[tuple[str, str]]
    """(team, ClusterQueue) pairs read."""
    queues: dict[tuple[str, str], str | None]
    """LocalQueue (namespace, name) -> its ClusterQueue."""
    workloads: list[tuple[dict[str, Any], str, str]]
    """(Workload, its ClusterQueue, its team) of the teams' ClusterQueues, by creation."""
    positions: dict[str, tuple[int, int]]
    """namespace/name of a pending workload -> (position in its ClusterQueue, LocalQueue),
    from Kueue's visibility API (0 is the head)."""
    unanswered: tuple[str, ...] = ()
    """ClusterQueues the visibility API gave no pending list for (not served)."""


def take_snapshot(rest: Rest, teams: list[tuple[str, str]] | None, now: float) -> Snapshot:
    """The teams' queues (None: every ClusterQueue), their Workloads and Kueue's pending order."""
    teams, queues = team_queues(rest, teams)
    team_of = {cq: team for team, cq in teams}
    positions: dict[str, tuple[int, int]] = {}
    unanswered = []
    for _, name in teams:
        found = _pending_positions(rest, name)
        if found is None:
            unanswered.append(name)
        else:
            positions.update(found)
    listed = rest.get(f"{KUEUE}/workloads").get("items", [])
    workloads = []
    for wl in sorted(listed, key=lambda w: _time(w["metadata"].get("creationTimestamp")) or 0):
        cq = queues.get((wl["metadata"]["namespace"], wl.get("spec", {}).get("queueName")))
        if cq is not None and cq in team_of:
            workloads.append((wl, cq, team_of[cq]))
    return Snapshot(now, teams, queues, workloads, positions, tuple(unanswered))


def read_status(rest: Rest, teams: list[tuple[str, str]] | None, now: float, source: str) -> Run:
    """The live cluster as a Run: per workload of the teams' ClusterQueues, and per team."""
    snap = take_snapshot(rest, teams, now)
    pods = _pending_pods(rest, [wl for wl, _, _ in snap.workloads])
    results = [_result(wl, cq, team, pods, snap.positions, now) for wl, cq, team in snap.workloads]
    meta_ = RunMeta(stack="", source=source)
    return Run(results, team_results(results, snap.teams), meta_)


# The owners between a pod and its Workload's owner: a JobSet's Jobs, an LWS's or a pod
# group's StatefulSet, a RayJob's RayCluster. A pending pod is filed under each of them.
BETWEEN: Final = ("Job", "StatefulSet", "RayCluster")


def _pending_pods(rest: Rest, workloads: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Pending pods of the workloads' namespaces by the uid of each of their owners, up the
    chain (BETWEEN), and their own: whichever of them owns a Workload finds them."""
    namespaces = {w["metadata"]["namespace"] for w in workloads}
    owners = Owners(rest)
    pods: dict[str, list[dict[str, Any]]] = {}
    for ns in sorted(namespaces):
        # Pending pods only: the scheduler's message is all a status needs from them.
        for pod in rest.get(f"/api/v1/namespaces/{ns}/pods?fieldSelector=status.phase%3DPending")[
            "items"
        ]:
            for uid in _up_the_chain(owners, ns, pod):
                pods.setdefault(uid, []).append(pod)
    return pods


def _up_the_chain(owners: Owners, namespace: str, obj: Mapping[str, Any]) -> list[str]:
    """The object's uid and its owners' (through those BETWEEN, at most three deep)."""
    uids = [str(as_dict(obj.get("metadata")).get("uid"))]
    for _ in range(3):
        refs = [as_dict(r) for r in as_list(as_dict(obj.get("metadata")).get("ownerReferences"))]
        uids += [str(r.get("uid")) for r in refs if r.get("uid")]
        ref = next((r for r in refs if r.get("kind") in BETWEEN), None)
        try:
            found = ref and owners.get(str(ref["kind"]), namespace, str(ref.get("name")))
        except KubeError:  # not ours to read (403): the pod stays under the owners it names
            found = None
        if not found:
            break
        obj = found
    return uids


def _workload_owner(wl: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """(kind, name, owner uids) the row names: the owner of a kind recorded, else Kueue's
    controller reference; a pod group (a Workload of several Pods) by the Workload's name,
    which Kueue gives the group's."""
    refs = [as_dict(r) for r in as_list(as_dict(wl.get("metadata")).get("ownerReferences"))]
    ref = recorded_owner(wl) or next((r for r in refs if r.get("controller")), None)
    ref = ref or (refs[0] if refs else {})
    kind = str(ref.get("kind") or "Workload")
    name = str(ref.get("name") or wl["metadata"]["name"])
    if kind == "Pod" and sum(r.get("kind") == "Pod" for r in refs) > 1:
        name = str(wl["metadata"]["name"])
    return kind, name, [str(r.get("uid")) for r in refs if r.get("uid")]


def _result(
    wl: dict[str, Any],
    cq: str,
    team: str,
    pods: dict[str, list[dict[str, Any]]],
    positions: dict[str, tuple[int, int]],
    now: float,
) -> WorkloadResult:
    """One workload: its outcome, where it waits in the queues, how long, its GPU time."""
    meta = wl["metadata"]
    queue = wl.get("spec", {}).get("queueName")
    kind, owner_name, uids = _workload_owner(wl)
    mine = [pod for uid in uids for pod in pods.get(uid, [])]
    stuck = next((m for p in mine if (m := pod_unschedulable(p))), None)
    # Only a Pod is gone for a preemption (Kueue deletes it); any other owner gone after one
    # (a RayCluster, a Job) was deleted by its user, and its Workload finished.
    preempted = preemptions(wl) > 0
    outcome, flavor, message = classify(
        wl, stuck is None, stuck, preempted, gone_preempted=preempted and kind == "Pod"
    )
    name = f"{meta['namespace']}/{meta['name']}"
    if name in positions:
        cq_pos, lq_pos = positions[name]
        where = f"position {cq_pos} in ClusterQueue {cq}, {lq_pos} in LocalQueue {queue}"
        message = f"{where}; {message}" if message else where
    created = _time(meta.get("creationTimestamp")) or now
    reserved = condition(wl, "QuotaReserved")
    admitted = _time(reserved.get("lastTransitionTime")) if reserved else None
    wait = None
    run_seconds = 0.0
    if outcome in ("admitted", "unschedulable", "finished") and admitted is not None:
        wait = max(admitted - created, 0.0)
        finished = condition(wl, "Finished")
        end = _time(finished.get("lastTransitionTime")) if finished else None
        if outcome != "unschedulable":
            run_seconds = max((end or now) - admitted, 0.0)
    return WorkloadResult(
        owner_name,
        meta["namespace"],
        queue,
        outcome,
        flavor=flavor,
        message=message,
        wait_seconds=wait,
        kind=kind,
        team=team,
        cluster_queue=cq,
        gpus=workload_gpus(wl),
        gpu_seconds=run_seconds,
        preemptions=preemptions(wl),
    )


def admitted_of(stack: str, project: Path) -> dict[str, int] | str:
    """Admitted workloads per ClusterQueue in the stack's cluster (Kueue's own count, each
    ClusterQueue's status.admittedWorkloads), or why the cluster could not be read: what
    quota-diff says a stopPolicy change touches (gpu_queues/kueue/stop.py)."""
    try:
        rest, _, _ = connect(stack, project)
        return stop.counts(stop.live_queues(rest.get(f"{KUEUE}/clusterqueues")))
    except (StatusError, KubeconfigError) as exc:
        return str(exc)
    except (KubeError, OSError, urllib3.exceptions.HTTPError) as exc:
        return f"the cluster did not answer: {exc}"


def render(run: Run) -> str:
    lines = [f"### Status: {run.meta.source}", ""]
    lines += team_table(run, None)
    lines += ["", *workload_table(run, None), ""]
    return "\n".join(lines)


ETA_HANDOFF = (
    "--eta replays the queues forward on the fast what-if engine, in gpu_queues.tools.eta, "
    "which builds on this module (so this one does not import it: tests/unit/test_layers.py): "
    "run `gpuq status --eta`, `make status ARGS=--eta` or `python -m gpu_queues.tools.eta` "
    "(docs/eta.md)"
)


def parser(prog: str = "python -m gpu_queues.tools.status") -> argparse.ArgumentParser:
    """The options of `gpuq status` (gpu_queues/tools/eta.py adds its own to the same)."""
    out = argparse.ArgumentParser(prog=invoked.prog(prog), description=__doc__)
    out.add_argument("--stack", help="the stack whose cluster and teams to read")
    out.add_argument("--project", type=Path, default=ROOT, help="where its Pulumi.<stack>.yaml is")
    out.add_argument(
        "--kubeconfig", type=Path, help="without --stack: this kubeconfig (default: $KUBECONFIG)"
    )
    out.add_argument("--json", action="store_true", help="{workloads, teams} as in report.json")
    out.add_argument(
        "--eta",
        action="store_true",
        help="a predicted admission time per pending workload (docs/eta.md)",
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.eta:
        print(f"status: {ETA_HANDOFF}", file=sys.stderr)
        return 2
    try:
        rest, source, teams = connect(args.stack, args.project, args.kubeconfig)
        run = read_status(rest, teams, datetime.now(UTC).timestamp(), f"live cluster of {source}")
    except (StatusError, KubeconfigError) as exc:
        print(f"status: {exc}", file=sys.stderr)
        return 2
    except (KubeError, OSError, urllib3.exceptions.HTTPError) as exc:
        print(f"status: the cluster did not answer: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(run.public(), indent=2) if args.json else render(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
