"""Record a real day: read the live cluster's Workloads and their owners (read-only, through the
same connection as `gpuq status`) and write them as a what-if mix (gpu_queues/whatif/mix.py)
that replays what the cluster was asked to admit.

    gpuq record [--stack NAME] [--project DIR] [--kubeconfig FILE] [--since 24h] --out DIR_OR_FILE
    make record STACK=prod SINCE=24h OUT=mix/

Each Workload whose owner is a Job, a plain Pod (Kueue's pod integration), a JobSet, a
StatefulSet, a LeaderWorkerSet, a Deployment (through its pod), a TrainJob (with the runtime
it names, once per file: owner_trainjob.py), an MPIJob, a RayJob, a RayCluster or a Kubeflow v1
job (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob: OWNER_PATHS) and that was created
within --since of now becomes one manifest of its owner's kind, named as its owner (namespace/name):
  gpu-queues.dev/submit-at  the owner's creation, offset from the earliest one recorded
  gpu-queues.dev/duration   from its (last) admission (QuotaReserved) to Finished, to the
                            second (at least 1s); none when it had not finished, and then
  gpu-queues.dev/running    "true": admitted and still running when recorded, or
  gpu-queues.dev/waiting    "true": waiting for quota when recorded; either runs to the end
                            of the replay once admitted
  kueue.x-k8s.io/queue-name and kueue.x-k8s.io/priority-class as on the Workload, and its pod
  set's pods (parallelism) and pod template, with only what admission depends on. A JobSet's
  replicated jobs (an MPIJob's or Kubeflow job's replica types, a Ray kind's worker groups)
  keep their replicas, parallelism and completions (numOfHosts) from the owner, each pod
  template from the Workload's pod set of its name.
A LeaderWorkerSet (a Workload per group) and a Deployment (a Workload per pod, owned by the Pod,
owned by a ReplicaSet it owns) become one manifest of their kind for all their Workloads,
checked against each of them (gpu_queues/tools/owner_sets.py): submit-at the owner's creation,
a duration from the first admission to the last Finished when all finished, else running when
all hold quota, else waiting.
A pod group (Pods labelled kueue.x-k8s.io/pod-group-name: one Workload, owned by each) becomes
its Pods, each with the template of its role's pod set and the group's label and total count,
all with the group's times: submit-at its last pod's creation (when Kueue could queue it), and
the Workload's duration (gpu_queues/whatif/podgroups.py reads them back as one workload).

What is kept of a pod template (Kueue's copy in the Workload's pod set, taken before Kueue
injected a flavor's node selector): each container's and init container's name and resource
requests and limits, a sidecar's restartPolicy, and the pod's restartPolicy, nodeSelector,
node affinity, tolerations and priorityClassName. Everything else is dropped, and each file
says so at its top: env values, args, commands, volumes (their sources) and volume mounts,
secrets, image pull secrets, the service account, probes, ports, security contexts, labels
and annotations. Images are not needed for admission: every one becomes IMAGE_PLACEHOLDER.

With --out a folder, one file per namespace (<namespace>.yaml); with a .yaml file, one file.
Documents are in creation order, then by file and name; the output is byte-identical for the
same cluster state and window. What cannot be recorded (a Workload without owner, a Job the
API no longer has, a malformed object) is a comment with the reason in its namespace's file,
and on stderr; never a traceback.

The cluster's strings are not trusted: the API server behind a kubeconfig or proxy the user
does not control may send anything. Every name written (namespace, Job or Pod, queue, priority,
container, resource, node selector key) is checked against Kubernetes' rules
(gpu_queues/kueue/fields.py) before it reaches a file or an API path; an object that fails is
one line on stderr (and a comment, where it has a file) and the rest is recorded. A file name
is <namespace>.yaml of a valid namespace, and every file lands inside OUT, links resolved
(gpu_queues/files.py); comments are one line of ASCII, so nothing read can become a line or a
document of the mix.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import urllib3
import yaml

from gpu_queues.config.stackfile import ROOT
from gpu_queues.invoked import prog
from gpu_queues.kueue.client import KubeconfigError
from gpu_queues.kueue.fields import is_dns_label
from gpu_queues.progress import Progress
from gpu_queues.tools.owner_sets import set_manifest
from gpu_queues.tools.owner_trainjob import manifest_and_runtime
from gpu_queues.tools.owners import (
    KEPT_NOTE,
    RECORDED_KINDS,
    Owners,
    Unrecordable,
    checked_name,
    comment_text,
    group_of,
    name_problem,
    pod_group_manifests,
    pod_owners,
    recorded_owner,
)
from gpu_queues.tools.record_out import HEADER, RecordError, write
from gpu_queues.tools.status import KUEUE, StatusError, connect, team_queues
from gpu_queues.values import as_dict, as_list, as_str
from gpu_queues.whatif.durations import DurationError, parse_duration
from gpu_queues.whatif.mix import (
    ANNOTATION_DURATION,
    ANNOTATION_SUBMIT_AT,
)
from gpu_queues.whatif.trainjob import runtime_key
from gpu_queues.whatif.workloads import KubeError, Rest, condition, owner

ANNOTATION_RUNNING: Final = "gpu-queues.dev/running"
ANNOTATION_WAITING: Final = "gpu-queues.dev/waiting"
DEFAULT_SINCE: Final = "24h"


@dataclass(frozen=True)
class Item:
    """One Workload of the window: its manifest, or why it is not recorded (`skipped`)."""

    namespace: str
    name: str
    """The owner's name (the Workload's when it is skipped)."""
    created: float
    manifest: dict[str, Any] | None = None
    skipped: str | None = None
    workload: str = ""
    members: tuple[dict[str, Any], ...] = ()
    """A pod group's Pod documents, written in place of `manifest` (its first)."""
    kind: str = "Workload"
    """What a comment names: the Workload, or the owner of several (owner_sets.py)."""
    runtime: dict[str, Any] | None = None
    """A TrainJob's runtime, written once in each file before the documents (owner_trainjob.py)."""

    def documents(self) -> tuple[dict[str, Any], ...]:
        """What is written of it: its manifest, or a pod group's Pods; none when skipped."""
        return self.members or ((self.manifest,) if self.manifest is not None else ())

    def key(self, single: bool) -> tuple[float, str, str]:
        # The replay submits in (submit-at, file, document) order: the same order here.
        return (self.created, self.file(single) or "", self.name)

    def file(self, single: bool) -> str | None:
        """The file it is written in ("" the single file); None when its namespace is not
        one (it is then only a line on stderr)."""
        if single:
            return ""
        return file_name(self.namespace) if is_dns_label(self.namespace) else None

    def shown(self) -> str:
        """`Workload namespace/name` (or the owner of several's kind) as one line of ASCII,
        whatever the cluster sent."""
        return f"{self.kind} {_shown(self.namespace)}/{_shown(self.workload or self.name)}"


@dataclass
class Recording:
    source: str
    since: str
    items: list[Item] = field(default_factory=list)
    older: int = 0
    """Workloads of the queues that were created before the window."""

    @property
    def start(self) -> float | None:
        """The earliest creation recorded: submit-at 0s."""
        return min((i.created for i in self.items if i.manifest is not None), default=None)

    def files(self, single: bool) -> dict[str, str]:
        """File name -> text; one file ("") when `single`, else one per namespace."""
        start = self.start
        groups: dict[str, list[Item]] = {}
        for item in sorted(self.items, key=lambda i: i.key(single)):
            name = item.file(single)
            if name is not None:
                groups.setdefault(name, []).append(item)
        out = {}
        for name, items in sorted(groups.items()):
            docs = _runtimes(items) if start is not None else []
            for item in items:
                if start is None:
                    continue
                for doc in item.documents():
                    manifest = _with_submit_at(doc, item.created - start)
                    docs.append(yaml.safe_dump(manifest, sort_keys=False, width=100))
            out[name] = self.header(start, items) + "---\n".join(docs)
        return out

    def header(self, start: float | None, items: list[Item]) -> str:
        recorded = sum(i.manifest is not None for i in items)
        lines = [
            f"{HEADER} from the live cluster of {comment_text(self.source)}:\n",
            f"# the Workloads created within {comment_text(self.since)} of the recording "
            f"({recorded} here),\n",
            "# as a what-if mix (docs/what-if.md).\n",
        ]
        if start is not None:
            lines.append(f"# {ANNOTATION_SUBMIT_AT} 0s is {_iso(start)}.\n")
        lines.append(KEPT_NOTE)
        for item in items:
            if item.skipped is not None:
                lines.append(f"# not recorded: {item.shown()}: {comment_text(item.skipped)}\n")
        return "".join(lines)

    def skipped(self) -> list[Item]:
        return [i for i in self.items if i.skipped is not None]


def _runtimes(items: list[Item]) -> list[str]:
    """The Trainer runtimes of a file's TrainJobs, each once, as YAML documents: no workloads,
    so no submit-at (the mix reads them before any TrainJob that names them)."""
    seen: dict[tuple[str, str, str], str] = {}
    for item in items:
        if item.runtime is not None and item.manifest is not None:
            key = runtime_key(item.runtime, item.namespace)
            seen.setdefault(key, yaml.safe_dump(item.runtime, sort_keys=False, width=100))
    return list(seen.values())


def file_name(namespace: str) -> str:
    """The file of a namespace's Workloads; only for a valid namespace (a DNS label), so it
    is one plain name in OUT, never a path."""
    if not is_dns_label(namespace):
        raise ValueError(f"{namespace!r} is not a namespace")
    return f"{namespace}.yaml"


def _shown(name: str) -> str:
    """A name as read when it is plain (ASCII, no spaces), else quoted with its escapes."""
    return name if name == comment_text(name) and " " not in name else comment_text(repr(name))


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def exact_duration(seconds: float) -> str:
    """Whole seconds in the mix's units, every unit kept (1h2m3s; gpu_queues.whatif.durations
    reads it back exactly)."""
    left = max(round(seconds), 0)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts) or "0s"


def _with_submit_at(manifest: dict[str, Any], offset: float) -> dict[str, Any]:
    meta = dict(manifest["metadata"])
    meta["annotations"] = {
        ANNOTATION_SUBMIT_AT: exact_duration(offset),
        **meta.get("annotations", {}),
    }
    return {**manifest, "metadata": meta}


# --- reading the cluster --------------------------------------------------------------


def _stamp(value: Any, what: str) -> float:
    if not isinstance(value, str) or not value:
        raise Unrecordable(f"malformed: {what} is missing")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise Unrecordable(f"malformed: {what} {value!r} is not a time") from None


def _true_since(wl: Mapping[str, Any], kind: str) -> float | None:
    """When the condition last turned True; None when it is not True."""
    c = condition(wl, kind)
    if c is None or c.get("status") != "True":
        return None
    return _stamp(c.get("lastTransitionTime"), f"the {kind} condition's lastTransitionTime")


def record(
    rest: Rest,
    teams: list[tuple[str, str]] | None,
    now: float,
    since: float,
    source: str,
    since_text: str = DEFAULT_SINCE,
) -> Recording:
    """The Workloads of the teams' ClusterQueues (None: every ClusterQueue) created within
    `since` seconds of `now`, each as a manifest of the mix or skipped with the reason."""
    teams, queues = team_queues(rest, teams)
    cluster_queues = {cq for _, cq in teams}
    owners = Owners(rest)
    recording = Recording(source, since_text)
    # An owner of several Workloads (owner_sets.py), by kind, namespace and name: its Workloads.
    sets: dict[tuple[str, str, str], tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    listed = as_list(as_dict(rest.get(f"{KUEUE}/workloads")).get("items"))
    for raw in listed:
        wl = as_dict(raw)
        meta = as_dict(wl.get("metadata"))
        namespace = as_str(meta.get("namespace")) or ""
        name = as_str(meta.get("name")) or "?"
        queue = as_str(as_dict(wl.get("spec")).get("queueName"))
        if not namespace or name == "?":
            recording.items.append(
                Item(namespace or "unknown", name, now, skipped="malformed: no name or namespace")
            )
            continue
        if queue is None:
            created = _created_or(meta, now)
            if created >= now - since:
                why = "malformed: no spec.queueName"
                recording.items.append(Item(namespace, name, created, skipped=why, workload=name))
            continue
        if queues.get((namespace, queue)) not in cluster_queues:
            continue  # another team's, or a queue Kueue does not know: not this recording's
        bad = name_problem(namespace, "namespace", "its namespace") or name_problem(
            name, "object", "its name"
        )
        if bad is not None:
            created = _created_or(meta, now)
            if created >= now - since:
                recording.items.append(Item(namespace, name, created, skipped=bad, workload=name))
            continue
        item: Item | None
        try:
            in_set = _set_owner(wl, namespace, owners)
            if in_set is not None:
                kind, owner_name, found = in_set
                sets.setdefault((kind, namespace, owner_name), (found, []))[1].append(wl)
                continue
            item = _item(wl, namespace, name, owners, now, since)
        except Unrecordable as skip:
            item = Item(namespace, name, _created_or(meta, now), skipped=str(skip), workload=name)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"malformed: {exc}"
            item = Item(namespace, name, _created_or(meta, now), skipped=why, workload=name)
        # What is skipped is dated by its Workload: a broken one of last week is no comment.
        if item is None or item.created < now - since:
            recording.older += 1
            continue
        recording.items.append(item)
    for (kind, namespace, owner_name), (found, workloads) in sorted(sets.items()):
        item = _set_item(kind, namespace, owner_name, found, workloads, now, since)
        if item is None:
            recording.older += len(workloads)
            continue
        recording.items.append(item)
    return recording


def _set_owner(
    wl: Mapping[str, Any], namespace: str, owners: Owners
) -> tuple[str, str, dict[str, Any]] | None:
    """The owner of the Workload and others (owner_sets.py): its LeaderWorkerSet, or the
    Deployment of its Pod's ReplicaSet; None for another owner (the pods of a ReplicaSet that
    no Deployment owns are plain Pods). Unrecordable when one of them is gone or made again."""
    ref = recorded_owner(wl)
    if ref is None:
        return None
    if ref.get("kind") == "LeaderWorkerSet":
        return "LeaderWorkerSet", str(ref.get("name")), _owner(ref, namespace, owners)
    if ref.get("kind") != "Pod" or len(pod_owners(wl)) != 1:
        return None
    pod = _owner(ref, namespace, owners)
    replica_set = owner(pod, "ReplicaSet")
    if replica_set is None or group_of(pod) is not None:
        return None
    deployment = owner(_owner(replica_set, namespace, owners), "Deployment")
    if deployment is None:
        return None
    return "Deployment", str(deployment.get("name")), _owner(deployment, namespace, owners)


def _set_item(
    kind: str,
    namespace: str,
    name: str,
    found: dict[str, Any],
    workloads: list[dict[str, Any]],
    now: float,
    since: float,
) -> Item | None:
    """An owner of several Workloads as one manifest, submitted at its creation and running as
    they ran together (_run); None when it was created before the window."""
    created = _created_or(as_dict(found.get("metadata")), now)
    if created < now - since:
        return None
    try:
        manifest = set_manifest(kind, namespace, name, found, workloads)
        manifest["metadata"]["annotations"].update(_run(*workloads))
    except Unrecordable as skip:
        return Item(namespace, name, created, skipped=str(skip), kind=kind)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return Item(namespace, name, created, skipped=f"malformed: {exc}", kind=kind)
    return Item(namespace, name, created, manifest, kind=kind)


def _created_or(meta: Mapping[str, Any], default: float) -> float:
    try:
        return _stamp(meta.get("creationTimestamp"), "creationTimestamp")
    except Unrecordable:
        return default


def _item(
    wl: dict[str, Any], namespace: str, name: str, owners: Owners, now: float, since: float
) -> Item | None:
    """The Workload as a manifest of the mix; None when it was created before the window."""
    refs = as_list(as_dict(wl.get("metadata")).get("ownerReferences"))
    ref = recorded_owner(wl)
    if ref is None:
        if not refs:
            raise Unrecordable("it has no owner (made directly, not by a Job): nothing to submit")
        kinds = ", ".join(sorted({str(as_dict(r).get("kind")) for r in refs}))
        raise Unrecordable(f"its owner is a {kinds}; the mix records {RECORDED_KINDS}")
    kind = str(ref.get("kind"))
    others = sorted({str(as_dict(r).get("kind")) for r in refs} - {kind})
    if kind == "Pod" and others:
        # A group of pods whose Workload an owner of a kind not recorded owns too: no group a
        # user wrote (a StatefulSet's and an LWS's are read as it: OWNER_PATHS).
        raise Unrecordable(f"its owner is a {', '.join(others)}; the mix records {RECORDED_KINDS}")
    found = _owner(ref, namespace, owners)
    owner_name = str(ref.get("name"))
    members: tuple[dict[str, Any], ...] = ()
    runtime = None
    if kind == "Pod" and group_of(found) is not None:
        # A pod group: the Workload, named after the group, is owned by each of its Pods.
        # It was queued once its last Pod existed, when Kueue made it: that is its submit-at.
        pods = [_owner(r, namespace, owners) for r in pod_owners(wl)]
        created = max(_created(p, "Pod") for p in pods)
        if created < now - since:
            return None
        members = tuple(pod_group_manifests(wl, namespace, pods))
        owner_name, manifest = str(group_of(found)), members[0]
    else:
        created = _created(found, kind)
        if created < now - since:
            return None
        manifest, runtime = manifest_and_runtime(wl, kind, namespace, owner_name, found, owners.get)
    durations = _run(wl)
    for doc in members or (manifest,):
        doc["metadata"]["annotations"].update(durations)
    return Item(
        namespace, owner_name, created, manifest, workload=name, members=members, runtime=runtime
    )


def _owner(ref: Mapping[str, Any], namespace: str, owners: Owners) -> dict[str, Any]:
    """The owner an ownerReference names, as the API has it now; Unrecordable when it is not
    there or was made again."""
    kind, owner_name = str(ref.get("kind")), as_str(ref.get("name"))
    if not owner_name:
        raise Unrecordable("malformed: its ownerReference has no name")
    checked_name(owner_name, "job" if kind == "Job" else "object", f"its {kind}'s name")
    found = owners.get(kind, namespace, owner_name)
    if found is None:
        raise Unrecordable(f"its {kind} {namespace}/{owner_name} is no longer in the API (deleted)")
    owner_meta = as_dict(found.get("metadata"))
    if ref.get("uid") and owner_meta.get("uid") != ref.get("uid"):
        raise Unrecordable(
            f"its {kind} {namespace}/{owner_name} was deleted and made again (new uid)"
        )
    return found


def _created(found: Mapping[str, Any], kind: str) -> float:
    meta = as_dict(found.get("metadata"))
    return _stamp(meta.get("creationTimestamp"), f"the {kind}'s creationTimestamp")


def _run(*workloads: Mapping[str, Any]) -> dict[str, str]:
    """How the Workload ran (or an owner's several together: owner_sets.py), as the mix's
    annotations: its duration, from the first admission to the last Finished, when all
    finished; else running when all hold quota; else waiting."""
    admitted = [_true_since(wl, "QuotaReserved") for wl in workloads]
    finished = [_true_since(wl, "Finished") for wl in workloads]
    ends = [f for f in finished if f is not None]
    starts = [a for a in admitted if a is not None]
    if len(ends) == len(workloads):
        if len(starts) != len(workloads):
            raise Unrecordable("it finished without being admitted: it never held quota")
        return {ANNOTATION_DURATION: exact_duration(max(math.floor(max(ends) - min(starts)), 1))}
    if len(starts) == len(workloads):
        return {ANNOTATION_RUNNING: "true"}
    return {ANNOTATION_WAITING: "true"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m gpu_queues.tools.record"),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", help="the stack whose cluster and teams to read")
    parser.add_argument(
        "--project", type=Path, default=ROOT, help="where its Pulumi.<stack>.yaml is"
    )
    parser.add_argument(
        "--kubeconfig", type=Path, help="without --stack: this kubeconfig (default: $KUBECONFIG)"
    )
    parser.add_argument(
        "--since", default=DEFAULT_SINCE, help=f"how far back (default {DEFAULT_SINCE})"
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="a folder (a file per namespace) or a .yaml file"
    )
    args = parser.parse_args(argv)
    try:
        since = parse_duration(args.since)
    except DurationError as exc:
        print(f"record: --since: {exc}", file=sys.stderr)
        return 2
    try:
        # On a terminal, a line says it is reading (a large cluster takes a while).
        with Progress("record") as progress:
            progress.update("connecting")
            rest, source, teams = connect(args.stack, args.project, args.kubeconfig)
            source = comment_text(source)  # from a kubeconfig: one line, whatever it holds
            progress.update(f"reading Workloads and their owners from {source}")
            now = datetime.now(UTC).timestamp()
            recording = record(rest, teams, now, since, source, args.since)
    except (StatusError, KubeconfigError) as exc:
        print(f"record: {exc}", file=sys.stderr)
        return 2
    except (KubeError, OSError, urllib3.exceptions.HTTPError) as exc:
        print(f"record: the cluster did not answer: {exc}", file=sys.stderr)
        return 2
    try:
        written = write(recording, args.out)
    except (RecordError, OSError) as exc:
        print(f"record: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    for item in recording.skipped():
        print(
            f"record: not recorded: {item.shown()}: {comment_text(item.skipped or '')}",
            file=sys.stderr,
        )
    kept = sum(i.manifest is not None for i in recording.items)
    where = ", ".join(map(str, written)) or f"nothing written to {args.out}"
    print(
        f"record: {kept} workloads created within {args.since} from {source}: {where}"
        + (f"; {len(recording.skipped())} not recorded" if recording.skipped() else "")
        + (f"; {recording.older} created before the window" if recording.older else ""),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
