"""The stack config's Kueue Topologies (`topologies`, docs/topology.md): levels as node labels,
widest first; their cross checks are topology_checks.py."""

from __future__ import annotations

from pydantic import Field

from gpu_queues.config.base import Model
from gpu_queues.kueue.fieldtypes import LabelName, ObjectName, QualifiedName


class TopologyLevel(Model):
    """One level of a Topology: the node label whose value names a node's domain there."""

    name: LabelName = Field(
        description="what the stack calls the level (nodes.topology keys, the sandbox's label "
        "values <name>-<index>)"
    )
    node_label: QualifiedName = Field(
        description="the node label holding the domain, e.g. cloud.example.com/topology-rack, "
        "or kubernetes.io/hostname (lowest level only)"
    )


class Topology(Model):
    """A Kueue Topology: levels from the widest (e.g. block) to the narrowest (e.g. host)."""

    name: ObjectName
    levels: list[TopologyLevel] = Field(min_length=1, max_length=16)
