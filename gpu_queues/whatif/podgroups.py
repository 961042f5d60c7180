"""Pod groups in a mix: plain Pods labelled `kueue.x-k8s.io/pod-group-name` with the annotation
`kueue.x-k8s.io/pod-group-total-count`, as their user writes them. Kueue admits a group as one
Workload (named after the group, a pod set per role of its pods) once all its pods exist, lifts
their gates together and finishes it when all have succeeded; so the what-if replays a group
as one workload, one row of the report named after the group: its pods are created together
at the group's submit-at and run its duration (gpu-queues.dev/submit-at and duration, which
its pods must agree on), and it holds the GPUs of all of them. A group that names more pods
than its documents is replayed as written: Kueue makes no Workload for it, and it waits.

Both engines replay the same group (the fast one: toolchain/go/whatif/podgroup.go; the
sandbox's creates each pod at the group's time: sandbox/replay/timeline.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from gpu_queues.kueue.fields import name_problem
from gpu_queues.values import as_dict

# The mix's entries (gpu_queues.whatif.mix.Entry, which reads the mix through this module: an
# import of it here would be a circle).
Entry = Any

GROUP_LABEL: Final = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT: Final = "kueue.x-k8s.io/pod-group-total-count"


def group_name(e: Entry) -> str | None:
    """The pod group a replayable Pod entry belongs to (None: a single Pod, or no Pod)."""
    if e.kind != "Pod" or e.status != "ok":
        return None
    name = as_dict(as_dict(e.manifest.get("metadata")).get("labels")).get(GROUP_LABEL)
    return name if isinstance(name, str) and name else None


def grouped(entries: list[Entry], agree: Sequence[tuple[str, str]]) -> list[Entry]:
    """The entries with each pod group's Pods made one entry, where its first Pod was; `agree`:
    the fields its Pods must agree on (the field as the user writes it, the Entry's
    attribute)."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        if (name := group_name(e)) is not None:
            groups.setdefault((e.namespace, name), []).append(e)
    if not groups:
        return entries
    first = {members[0].index: (name, members) for (_, name), members in groups.items()}
    out = []
    for e in entries:
        if e.index in first:
            out.append(_group_entry(*first[e.index], agree))
        elif group_name(e) is None:
            out.append(e)
    return out


def _group_entry(name: str, members: list[Entry], agree: Sequence[tuple[str, str]]) -> Entry:
    head = members[0]
    problem = _problem(name, members, agree)
    if problem is not None:
        return dataclasses.replace(
            head, name=name, status="invalid", problem=problem, manifest={}, members=()
        )
    return dataclasses.replace(
        head,
        name=name,
        gpus=sum(m.gpus for m in members),
        pods=len(members),
        members=tuple(m.manifest for m in members),
    )


def _problem(name: str, members: list[Entry], agree: Sequence[tuple[str, str]]) -> str | None:
    """Why the group is not replayed as written (None: it is), naming the field."""
    said = f"pod group {name}"
    if problem := name_problem(name, "object"):
        # Kueue names the group's Workload after it; its webhook refuses a name that is none.
        return f"metadata.labels[{GROUP_LABEL}]: {problem}"
    counts = set()
    for m in members:
        value = as_dict(as_dict(m.manifest.get("metadata")).get("annotations")).get(TOTAL_COUNT)
        where = f"metadata.annotations[{TOTAL_COUNT}]"
        if value is None:
            return f"{where}: pod {m.name} of {said} has none (Kueue's webhook refuses it)"
        if not isinstance(value, str) or not value.isdigit() or int(value) < 1:
            return f"{where}: pod {m.name} of {said} has {value!r}, not a whole number above 0"
        counts.add(int(value))
    if len(counts) > 1:
        return f"metadata.annotations[{TOTAL_COUNT}]: the pods of {said} differ ({sorted(counts)})"
    if (total := counts.pop()) < len(members):
        return (
            f"metadata.annotations[{TOTAL_COUNT}]: {said} has {len(members)} pods, more than its "
            f"total count {total} (Kueue would delete the excess ones)"
        )
    for field, attribute in agree:
        if len({getattr(m, attribute) for m in members}) > 1:
            return f"{field}: the pods of {said} differ (a group is queued and runs as one)"
    return None


def missing(e: Entry) -> int:
    """How many pods the group's total count names beyond those the mix writes (0 for any
    entry but a pod group short of pods): Kueue makes no Workload for it, and it waits."""
    if not e.members:
        return 0
    value = as_dict(as_dict(e.manifest.get("metadata")).get("annotations")).get(TOTAL_COUNT)
    return max(0, int(str(value)) - len(e.members))
