"""The pack's rules on topology-aware scheduling: a Topology's levels (Kueue's CRD rules, the
validation core's gpu_queues/kueue/topology.py), and every ResourceFlavor's topologyName names
a Topology of the stack or one the cluster has already (else Kueue leaves every ClusterQueue
using the flavor inactive: TopologyNotFound).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_queues.kueue.errors import child, is_unknown
from gpu_queues.kueue.topology import topology_errors

from ..resource import (
    Resource,
    Violation,
    config_list,
    field_violation,
    kueue_kind,
    names_of_kind,
    violation,
)
from . import FLAVOR_TOPOLOGY_EXISTS, TOPOLOGY_WEBHOOK_VALID


def topology_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """Topology levels Kueue's CRD validation would reject at apply time."""
    if kueue_kind(resource) != "Topology":
        return []
    return [
        field_violation(TOPOLOGY_WEBHOOK_VALID, resource, error)
        for error in topology_errors(resource.props)
    ]


def resourceflavor_topology_exists(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every topologyName is a Topology of the stack or pre-existing."""
    declared, unknown_names = names_of_kind(resources, "Topology")
    if unknown_names:
        return []  # a Topology whose name is not known yet may be the one referenced
    known = declared | set(config_list(config, "preExistingTopologies"))
    fix = (
        "declare the Topology in the stack (topologies), fix the topologyName, or add it to "
        f"{FLAVOR_TOPOLOGY_EXISTS}.preExistingTopologies in the policy config"
    )
    out = []
    for resource in resources:
        if kueue_kind(resource) != "ResourceFlavor":
            continue
        name = child(resource.props, "spec", "topologyName")
        if isinstance(name, str) and not is_unknown(name) and name not in known:
            problem = (
                f"spec.topologyName: Topology {name!r} does not exist (Kueue would leave every "
                "ClusterQueue using this flavor inactive: TopologyNotFound)"
            )
            out.append(violation(FLAVOR_TOPOLOGY_EXISTS, resource, problem, fix))
    return out
