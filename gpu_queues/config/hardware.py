"""The hardware behind a flavor: a number of identical nodes, and the capacity they add up to.

A flavor declares its hardware as `nodes: {count, resources}` (what each node offers to pods),
as `capacity` (totals only, for stacks that know no more), or both; then they must agree.
Quota checks use the effective capacity: count x per-node resources when nodes are given,
else capacity. The functions read a flavor as written in the stack config (a dict; the typed
Flavor model dumps to the same form), so the config check and the models share them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gpu_queues.kueue.fields import whole_number_problem
from gpu_queues.kueue.quantity import QuantityError, format_quantity, parse_quantity

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class FlavorHardware:
    """What one flavor's hardware amounts to, with problems located inside the flavor."""

    capacity: dict[str, Fraction] = field(default_factory=dict)
    """Effective capacity per resource."""
    source: dict[str, Loc] = field(default_factory=dict)
    """Where each resource's capacity is written, inside the flavor (for messages)."""
    detail: dict[str, str] = field(default_factory=dict)
    """How it was derived, e.g. '4 nodes x 8'."""
    problems: list[tuple[Loc, str]] = field(default_factory=list)


def _quantities(raw: Any) -> dict[str, tuple[Any, Fraction]]:
    """Parseable entries of a resource map (the models report the others)."""
    out: dict[str, tuple[Any, Fraction]] = {}
    if not isinstance(raw, Mapping):
        return out
    for name, value in raw.items():
        if isinstance(value, bool):
            continue
        try:
            out[str(name)] = (value, parse_quantity(value))
        except QuantityError:
            continue
    return out


def node_count(nodes: Any) -> int | None:
    count = nodes.get("count") if isinstance(nodes, Mapping) else None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return None
    return count


def flavor_hardware(flavor: Mapping[str, Any]) -> FlavorHardware:
    """Effective capacity of a flavor (config form) and what is wrong with its declaration."""
    result = FlavorHardware()
    capacity = _quantities(flavor.get("capacity"))
    nodes = flavor.get("nodes")
    per_node = _quantities(nodes.get("resources")) if isinstance(nodes, Mapping) else {}
    count = node_count(nodes)

    for loc, entries in ((("capacity",), capacity), (("nodes", "resources"), per_node)):
        for name, (value, _) in entries.items():
            problem = whole_number_problem(name, value)
            if problem:
                result.problems.append(((*loc, name), problem))

    if count is None:
        for name, (_, amount) in capacity.items():
            result.capacity[name] = amount
            result.source[name] = ("capacity", name)
        return result

    for name, (value, amount) in per_node.items():
        result.capacity[name] = amount * count
        result.source[name] = ("nodes", "resources", name)
        result.detail[name] = f"{count} node{'' if count == 1 else 's'} x {value}"
    for name, (value, amount) in capacity.items():
        if name not in per_node:
            result.problems.append(
                (
                    ("capacity", name),
                    f"capacity lists {name} but nodes.resources does not; give {name} per "
                    "node in nodes.resources, or remove it from capacity",
                )
            )
            continue
        derived = result.capacity[name]
        result.source[name] = ("capacity", name)
        if amount != derived:
            result.problems.append(
                (
                    ("capacity", name),
                    f"capacity {name} is {value} but the nodes add up to "
                    f"{result.detail[name]} = {format_quantity(derived)}; make them agree, or "
                    "keep only nodes (capacity follows from them)",
                )
            )
    if capacity:
        for name in per_node:
            if name not in capacity:
                result.problems.append(
                    (
                        ("nodes", "resources", name),
                        f"nodes.resources lists {name} but capacity does not; add its total "
                        f"({format_quantity(result.capacity[name])}) to capacity, or remove "
                        "capacity (it follows from the nodes)",
                    )
                )
    return result


@dataclass(frozen=True)
class Node:
    """One node of a flavor, as a fake cluster would build it."""

    name: str
    flavor: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    resources: dict[str, str]
    """What the node offers to pods (its allocatable), quantities as written."""


def _node_name(flavor: str, index: int) -> str:
    """`<flavor>-<index>`, kept to 63 characters (node names end up in label values)."""
    name = f"{flavor}-{index}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(flavor.encode()).hexdigest()[:8]
    head = flavor[: 63 - len(digest) - len(str(index)) - 2].rstrip("-.")
    return f"{head}-{digest}-{index}"


# --- topology levels (docs/topology.md) ------------------------------------------------------

HOSTNAME_LABEL = "kubernetes.io/hostname"
"""A level on the node's own name: one domain per node, so no count is declared for it."""


def level_value(level: str, index: int) -> str:
    """The value a sandbox node carries for a level: `<level name>-<index>`, e.g. rack-3; the
    index numbers that level's domains across the flavor, from 0."""
    return f"{level}-{index}"


def counted_levels(levels: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The levels nodes.topology gives a count for: all but a kubernetes.io/hostname level."""
    return [(name, label) for name, label in levels if label != HOSTNAME_LABEL]


def domain_sizes(count: int, topology: Mapping[str, Any], levels: Sequence[str]) -> list[int]:
    """How many nodes one domain of each level holds ({block: 2, rack: 4} of 16 nodes: a block
    8, a rack 2); [] when the counts are missing or do not divide `count` (the config check
    says which)."""
    sizes: list[int] = []
    domains = 1
    for level in levels:
        per = topology.get(level)
        if isinstance(per, bool) or not isinstance(per, int) or per < 1:
            return []
        domains *= per
        if count % domains:
            return []
        sizes.append(count // domains)
    return sizes


def level_labels(
    index: int, count: int, topology: Mapping[str, Any], levels: Sequence[tuple[str, str]]
) -> dict[str, str]:
    """The topology labels of node `index` of `count`: nodes fill a domain before the next."""
    counted = counted_levels(levels)
    sizes = domain_sizes(count, topology, [name for name, _ in counted])
    if len(sizes) != len(counted):
        return {}
    return {
        label: level_value(name, index // size)
        for (name, label), size in zip(counted, sizes, strict=True)
    }


def flavor_nodes(flavor: Mapping[str, Any], levels: Sequence[tuple[str, str]] = ()) -> list[Node]:
    """The flavor's nodes: `count` identical nodes when declared, one node holding the whole
    capacity when only totals are known, none when the flavor declares no hardware. With the
    (level name, node label) `levels` of the flavor's topology, each node carries the labels
    of its domains as nodes.topology lays them out."""
    name = str(flavor.get("name", ""))
    labels = {str(k): str(v) for k, v in (flavor.get("nodeLabels") or {}).items()}
    taints = [
        {str(k): str(v) for k, v in taint.items() if v is not None}
        for taint in flavor.get("nodeTaints") or []
        if isinstance(taint, Mapping)
    ]
    nodes = flavor.get("nodes")
    count = node_count(nodes)
    if count is not None and isinstance(nodes, Mapping):
        each = {str(k): str(v) for k, v in (nodes.get("resources") or {}).items()}
    elif isinstance(flavor.get("capacity"), Mapping):
        count, each = 1, {str(k): str(v) for k, v in flavor["capacity"].items()}
    else:
        return []
    layout = nodes.get("topology") if isinstance(nodes, Mapping) else None
    layout = layout if isinstance(layout, Mapping) else {}
    return [
        Node(
            _node_name(name, i),
            name,
            {**labels, **(level_labels(i, count, layout, levels) if levels else {})},
            [dict(t) for t in taints],
            dict(each),
        )
        for i in range(count)
    ]
