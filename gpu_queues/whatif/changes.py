"""A change of the stack at an instant of the replay: "what if team research is drained at
14:00?", "what if the research division's weight goes to 3 at noon?". The change is a stack
file, as the PR that makes it would leave it (`--change 14h=Pulumi.prod-drained.yaml`); from
that instant on, the replay runs it.

What may change mid-replay is what `pulumi up` changes on a running Kueue without anything
else moving: the spec of Cohorts, ClusterQueues and LocalQueues (quotas, lending and
borrowing limits, fair-sharing weights, stopPolicy, preemption, flavor fungibility). The
nodes, namespaces, flavors, priority classes and the Kueue release and manager settings stay
as they were (a manager restart, new nodes or a new release are not a queue change), and no
queue comes or goes; a change file that alters any of those, or nothing, is refused, naming
what. The change file is validated as the program validates any stack file (every rule once,
in gpu_queues.config), so a change the program would refuse is refused here too.

Both engines make a change the same way, at its instant after the instant's ends and before
its submissions: every object it changes gets its new spec, Cohorts first, then
ClusterQueues, then LocalQueues, each by name; Kueue does the rest (HoldAndDrain evicts
through Kueue's own workload controller). The fast engine takes them as its input's
`changes` (toolchain/go/whatif/changes.go); the sandbox engine replaces each object's spec on
the API server (sandbox/replay/timeline.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.config.model import StackConfig
from gpu_queues.config.render import kueue_objects
from gpu_queues.whatif.durations import DurationError, format_duration, parse_duration
from gpu_queues.whatif.engine_input import namespaces
from gpu_queues.whatif.nodes import NodeNameClash, nodes

# The kinds a change may alter, in the order both engines apply them.
QUEUE_KINDS: Final = ("Cohort", "ClusterQueue", "LocalQueue")
ALTERABLE: Final = "the spec of Cohorts, ClusterQueues and LocalQueues"
Key = tuple[str, str, str]  # (kind, namespace, name)


class ChangeError(Exception):
    """A change cannot be replayed; the message names the change and what is wrong."""


@dataclass(frozen=True)
class StackChange:
    """One change: when, from which file, and the objects whose spec it changes (as the
    program renders them for the changed stack), in the order they are applied."""

    at: float
    source: str
    objects: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "source": self.source, "objects": list(self.objects)}

    @classmethod
    def from_json(cls, data: object) -> StackChange:
        """One change as to_json wrote it (ChangeError when it is not)."""
        if not isinstance(data, Mapping):
            raise ChangeError("a change is not a mapping of at, source and objects")
        at, source, objects = data.get("at"), data.get("source"), data.get("objects")
        if isinstance(at, bool) or not isinstance(at, int | float) or at < 0:
            raise ChangeError(f"a change's `at` is not a number of seconds: {at!r}")
        if not isinstance(objects, list) or not all(
            isinstance(o, dict) and o.get("kind") in QUEUE_KINDS for o in objects
        ):
            raise ChangeError("a change's `objects` are not Cohorts, ClusterQueues, LocalQueues")
        return cls(float(at), str(source or ""), tuple(objects))

    @property
    def names(self) -> list[str]:
        """What it changes, as `kind name` (`kind namespace/name` for a LocalQueue)."""
        return [f"{o['kind']} {shown(key_of(o))}" for o in self.objects]


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))


def shown(key: Key) -> str:
    _, namespace, name = key
    return f"{namespace}/{name}" if namespace else name


def parse_flag(value: str) -> tuple[float, str]:
    """`AT=STACK_FILE` (`--change 14h=Pulumi.prod-drained.yaml`): the instant and the path."""
    at, sep, path = value.partition("=")
    if not sep or not at.strip() or not path.strip():
        raise ChangeError(
            f"--change {value!r}: expected AT=STACK_FILE, an instant of the replay and the "
            "stack file from then on (e.g. 14h=Pulumi.prod-drained.yaml)"
        )
    try:
        return parse_duration(at.strip()), path.strip()
    except DurationError as exc:
        raise ChangeError(f"--change {value!r}: the instant {at.strip()!r}: {exc}") from None


def _queues(config: StackConfig) -> dict[Key, dict[str, Any]]:
    return {key_of(o): o for o in kueue_objects(config) if o.get("kind") in QUEUE_KINDS}


def _fixed(config: StackConfig, where: str) -> dict[str, Any]:
    """Everything else a replay is given, by what a message calls it."""
    try:
        declared = nodes(config)
    except NodeNameClash as exc:
        raise ChangeError(f"{where}: {exc}") from None
    out: dict[str, Any] = {
        "the Kueue release or its manager's settings (gpu-queues:kueue)": config.kueue.model_dump(
            mode="json"
        ),
        "the teams' namespaces": namespaces(config),
        "the nodes its flavors declare": declared,
    }
    for o in kueue_objects(config):
        if o.get("kind") not in QUEUE_KINDS:
            out[f"{o.get('kind')} {shown(key_of(o))}"] = o
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def queue_updates(
    before: StackConfig, after: StackConfig, where: str
) -> tuple[dict[str, Any], ...]:
    """The queue objects `after` renders otherwise than `before`, in the order they are
    applied; ChangeError naming what else it changes (or that it changes nothing)."""
    old, new = _queues(before), _queues(after)
    added = [f"{k[0]} {shown(k)}" for k in new if k not in old]
    removed = [f"{k[0]} {shown(k)}" for k in old if k not in new]
    if added or removed:
        said = "; ".join(
            part
            for part in (
                f"adds {', '.join(added)}" if added else "",
                f"removes {', '.join(removed)}" if removed else "",
            )
            if part
        )
        raise ChangeError(
            f"{where} {said}: a change mid-replay alters the stack's queues, it does not add "
            "or remove them"
        )
    fixed_before, fixed_after = _fixed(before, where), _fixed(after, where)
    moved = [
        label
        for label in [*fixed_before, *(k for k in fixed_after if k not in fixed_before)]
        if _canonical(fixed_before.get(label)) != _canonical(fixed_after.get(label))
    ]
    if moved:
        raise ChangeError(
            f"{where} changes {', '.join(moved)}: a change mid-replay may alter only {ALTERABLE}"
        )
    changed = [
        new[k]
        for k in sorted(new, key=lambda k: (QUEUE_KINDS.index(k[0]), k[1], k[2]))
        if _canonical(new[k].get("spec")) != _canonical(old[k].get("spec"))
    ]
    if not changed:
        raise ChangeError(f"{where} changes nothing the replay runs: no {ALTERABLE}")
    return tuple(changed)


def changed_over(
    config: StackConfig, changes: Iterable[tuple[float, str, StackConfig]]
) -> list[StackChange]:
    """The changes (instant, source, the stack from then on), in time order (ties: as given),
    each against the stack before it."""
    out: list[StackChange] = []
    before = config
    for at, source, after in sorted(changes, key=lambda c: c[0]):
        where = f"the change at {format_duration(at)} ({source})"
        out.append(StackChange(at, source, queue_updates(before, after, where)))
        before = after
    return out


def notes(changes: Sequence[StackChange]) -> list[str]:
    """What the report says of each change."""
    return [
        f"at {format_duration(c.at)} the stack changed ({c.source}): {', '.join(c.names)}"
        for c in changes
    ]
