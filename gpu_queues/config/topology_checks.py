"""Checks of topology-aware scheduling across the stack config (docs/topology.md): a flavor's
topologyName names a declared topology, its declared nodes carry every level of it (else
Kueue finds "no topology domains at level: <label>", kueue#5039), the levels divide the nodes
evenly, and the stack's Kueue release has topology-aware scheduling switched on. Kueue's own
rules on the Topology object are in gpu_queues/kueue/topology.py (run by rendered.py).
Run by gpu_queues/config/checks.py's cross_check, on the raw config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpu_queues import keys
from gpu_queues.config.errors import Loc, Problem
from gpu_queues.config.hardware import HOSTNAME_LABEL, counted_levels, node_count
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.pins import kueue_version
from gpu_queues.values import as_dict, as_list, as_str

TAS_GATE: Final = "TopologyAwareScheduling"


def _levels(topology: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for level in as_list(topology.get("levels")):
        name, label = as_str(as_dict(level).get("name")), as_str(as_dict(level).get("nodeLabel"))
        if name and label:
            out.append((name, label))
    return out


def _declared(raw: Mapping[str, Any], problems: list[Problem]) -> dict[str, list[tuple[str, str]]]:
    """The topologies by name (the first of a name), level names checked unique."""
    declared: dict[str, list[tuple[str, str]]] = {}
    for t, raw_topology in enumerate(as_list(raw.get(keys.KEY_TOPOLOGIES))):
        topology = as_dict(raw_topology)
        name = as_str(topology.get("name"))
        base: Loc = (keys.KEY_TOPOLOGIES, t)
        seen: set[str] = set()
        for i, level in enumerate(as_list(topology.get("levels"))):
            level_name = as_str(as_dict(level).get("name"))
            if level_name in seen:
                problems.append(
                    Problem(
                        (*base, "levels", i, "name"),
                        f"level name {level_name!r} is used twice in topology {name!r}",
                    )
                )
            if level_name:
                seen.add(level_name)
        if name and name not in declared:
            declared[name] = _levels(topology)
    return declared


def _flavor(
    base: Loc,
    flavor: Mapping[str, Any],
    declared: dict[str, list[tuple[str, str]]],
    problems: list[Problem],
) -> None:
    nodes = flavor.get("nodes")
    layout = as_dict(as_dict(nodes).get("topology"))
    topology_name = as_str(flavor.get("topologyName"))
    if topology_name is None:
        if layout:
            problems.append(
                Problem(
                    (*base, "nodes", "topology"),
                    "nodes.topology lays the nodes out by topology levels, but the flavor has "
                    "no topologyName; set topologyName to a topology under topologies, or "
                    "remove nodes.topology",
                )
            )
        return
    if topology_name not in declared:
        known = ", ".join(sorted(declared)) or "none"
        problems.append(
            Problem(
                (*base, "topologyName"),
                f"topology {topology_name!r} is not declared under {keys.KEY_TOPOLOGIES} "
                f"(declared: {known}); Kueue would leave every ClusterQueue using this flavor "
                "inactive (TopologyNotFound)",
            )
        )
        return
    levels = declared[topology_name]
    level_labels = {label for _, label in levels}
    for key in as_dict(flavor.get("nodeLabels")):
        if key in level_labels:
            problems.append(
                Problem(
                    (*base, "nodeLabels", str(key)),
                    f"{key!r} is a level of topology {topology_name!r}: each node carries its "
                    "own domain there, so the flavor cannot set it; select the flavor's nodes "
                    "by another label",
                )
            )
    if not isinstance(nodes, Mapping):
        if flavor.get("capacity") is not None:
            problems.append(
                Problem(
                    (*base, "capacity"),
                    f"the flavor uses topology {topology_name!r}, whose pods Kueue places node "
                    "by node, but only its total capacity is declared; declare its hardware "
                    "as nodes: {count, resources, topology} so the checks and the sandbox see "
                    "the nodes and their domains",
                )
            )
        return
    _layout(base, node_count(nodes), layout, topology_name, levels, problems)


def _layout(
    base: Loc,
    count: int | None,
    layout: Mapping[str, Any],
    topology_name: str,
    levels: list[tuple[str, str]],
    problems: list[Problem],
) -> None:
    loc: Loc = (*base, "nodes", "topology")
    counted = counted_levels(levels)
    names = [name for name, _ in counted]
    for key in layout:
        if key not in names:
            hostname = [name for name, label in levels if label == HOSTNAME_LABEL]
            why = (
                f"each node is a domain of its own at {HOSTNAME_LABEL}; remove it"
                if key in hostname
                else f"its levels with a count are {', '.join(names) or 'none'}"
            )
            problems.append(
                Problem((*loc, str(key)), f"{key!r} is not a level of {topology_name!r}: {why}")
            )
    domains = 1
    for name, label in counted:
        per = layout.get(name)
        if per is None:
            problems.append(
                Problem(
                    loc,
                    f"level {name!r} of topology {topology_name!r} (node label {label}) has no "
                    f"count: give {name}: N (how many per domain above), so the nodes carry "
                    f"{label}; without it Kueue finds no topology domains at level: {label}",
                )
            )
            return
        if isinstance(per, bool) or not isinstance(per, int) or per < 1:
            return  # the models report it
        domains *= per
        if count is not None and count % domains:
            problems.append(
                Problem(
                    (*loc, name),
                    f"{count} nodes do not split evenly into {domains} {name} domain(s); make "
                    f"nodes.count a multiple of {domains}, or change the counts",
                )
            )
            return


def _release(raw: Mapping[str, Any], used: Loc, problems: list[Problem]) -> None:
    """The stack's Kueue has topology-aware scheduling, and the stack does not switch it off."""
    kueue = as_dict(raw.get(keys.KEY_KUEUE))
    version = as_str(kueue.get("version")) or kueue_version()
    rel = kueue_versions.release(version)
    if rel is None:
        return  # not installable; the version check says so
    if TAS_GATE not in rel.feature_gates or rel.locked_gates.get(TAS_GATE) is False:
        problems.append(
            Problem(
                used,
                f"Kueue {version} has no topology-aware scheduling (no {TAS_GATE} feature "
                "gate); use a release that has it, or remove the topologies",
            )
        )
        return
    if as_dict(as_dict(kueue.get("manager")).get("featureGates")).get(TAS_GATE) is False:
        problems.append(
            Problem(
                (keys.KEY_KUEUE, "manager", "featureGates", TAS_GATE),
                f"{TAS_GATE} is switched off but the stack declares topologies: Kueue would "
                "ignore them and admit by quota alone; remove the gate",
            )
        )


def uses_topology(raw: Mapping[str, Any]) -> bool:
    """Whether the stack declares a topology or a flavor naming one."""
    flavors = as_list(raw.get(keys.KEY_FLAVORS))
    named = any(as_dict(f).get("topologyName") is not None for f in flavors)
    return bool(as_list(raw.get(keys.KEY_TOPOLOGIES))) or named


def topology_problems(raw: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    declared = _declared(raw, problems)
    for j, flavor in enumerate(as_list(raw.get(keys.KEY_FLAVORS))):
        _flavor((keys.KEY_FLAVORS, j), as_dict(flavor), declared, problems)
    if uses_topology(raw):
        used: Loc = (keys.KEY_TOPOLOGIES,) if declared else (keys.KEY_FLAVORS,)
        _release(raw, used, problems)
    return problems
