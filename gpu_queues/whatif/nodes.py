"""The nodes a stack declares, as Node objects: one per node its flavors declare (with their
labels, a TAS flavor's also its topology levels, `<level>-<index>`: docs/topology.md; taints
and allocatable), and a system node for Kueue's controller. Both engines place pods on them:
the fast engine (gpu_queues.whatif.engine_input) and the sandbox, whose simulated cloud makes
them kwok nodes (sandbox/shape.py)."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from typing import Any

from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.capacity import encode_capacity
from gpu_queues.kueue.quantity import QuantityError, parse_quantity

# kwok's mark of a node it keeps Ready and runs the pods of (the sandbox); the fast engine
# ignores it.
NODE_ANNOTATION = "kwok.x-k8s.io/node"
# Which flavor a fake node stands for. An annotation, not a label: it must not change what
# the scheduler or Kueue see. The rehearsal reads it to say which flavor a pod landed on.
FLAVOR_ANNOTATION = "sandbox.gpu-queues.dev/flavor"
SYSTEM_NODE = "sandbox-system-0"
# The pod count kubelets advertise by default; kwok nodes need one too or nothing schedules.
PODS_PER_NODE = "110"


class NodeNameClash(ValueError):
    """Two nodes the stack declares would have one name."""


# A modest system node, as clouds give a system pool; grown if the controller asks for more.
SYSTEM_NODE_RESOURCES: dict[str, Fraction] = {"cpu": Fraction(16), "memory": Fraction(64 * 2**30)}
# What the release manifest's controller requests when the stack does not say (Kueue v0.18).
KUEUE_DEFAULT_REQUESTS: dict[str, Fraction] = {
    "cpu": Fraction(1, 2),
    "memory": Fraction(512 * 2**20),
}


def node(
    name: str,
    labels: dict[str, str],
    taints: list[dict[str, Any]],
    resources: dict[str, str],
    flavor: str | None,
) -> dict[str, Any]:
    """One Node: the labels and taints given, `resources` (and 110 pods) allocatable, and the
    flavor it stands for in an annotation (none for the system node)."""
    allocatable = {"pods": PODS_PER_NODE, **resources}
    annotations = {NODE_ANNOTATION: "fake"}
    if flavor is not None:
        annotations[FLAVOR_ANNOTATION] = flavor
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": annotations,
            # The flavor's labels win over the defaults: Kueue selects nodes by them.
            "labels": {
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **labels,
                "kubernetes.io/hostname": name,
            },
        },
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def _quantity(value: Any) -> Fraction | None:
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def system_node(stack: StackConfig) -> dict[str, Any]:
    """Where the cloud runs system pods such as Kueue's controller: a node the controller's
    nodeSelector selects, tainted (NoSchedule) with what the controller tolerates by key, so
    that, as on a cloud's system pool, team jobs stay off it."""
    ctrl = stack.kueue.controller
    taints: list[dict[str, Any]] = []
    for t in ctrl.tolerations or []:
        if t.key is None or t.effect not in (None, "NoSchedule"):
            continue
        taint: dict[str, Any] = {"key": t.key, "effect": "NoSchedule"}
        if t.operator != "Exists" and t.value:
            taint["value"] = t.value
        if taint not in taints:
            taints.append(taint)
    # Room for every controller replica twice over (a rollout runs old and new side by side).
    requests = (ctrl.resources.requests if ctrl.resources else None) or {}
    replicas = ctrl.replicas or 1
    size = dict(SYSTEM_NODE_RESOURCES)
    for name, default in KUEUE_DEFAULT_REQUESTS.items():
        asked = _quantity(requests.get(name, "")) or default
        size[name] = max(size[name], asked * replicas * 2)
    resources = json.loads(encode_capacity(size))
    return node(SYSTEM_NODE, dict(ctrl.node_selector or {}), taints, resources, None)


def on_demand_flavors(stack: StackConfig) -> set[str]:
    """Flavors a provisioning check runs on (its onFlavors, else every flavor of the team's
    quota): the autoscaler adds their nodes when asked, so the cloud starts without them."""
    if stack.provisioning is None:
        return set()
    quota = {t.name: {f.name for g in t.resource_groups for f in g.flavors} for t in stack.teams}
    return {
        flavor
        for team in stack.provisioning.teams
        for use in team.checks
        for flavor in (use.on_flavors or quota.get(team.name, set()))
    }


def flavor_nodes(stack: StackConfig) -> list[dict[str, Any]]:
    """One node per declared node of each flavor (one holding the totals for totals only),
    labelled by its topology's levels as the flavor's nodes.topology lays them out; none yet
    for a flavor whose nodes come on demand."""
    later = on_demand_flavors(stack)
    return [
        node(n.name, n.labels, list(n.taints), n.resources, n.flavor)
        for f in stack.flavors
        if f.name not in later
        for n in f.node_list(stack.levels_of(f))
    ]


def nodes(stack: StackConfig) -> list[dict[str, Any]]:
    """Every node the stack declares and the system node, as a cluster shaped like the stack
    starts (NodeNameClash when two would have one name)."""
    found = [*flavor_nodes(stack), system_node(stack)]
    counted = Counter(n["metadata"]["name"] for n in found)  # once each: a cluster may have 10^5
    clashes = sorted(name for name, times in counted.items() if times > 1)
    if clashes:
        raise NodeNameClash(
            f"node names clash: {', '.join(clashes)} (a flavor's nodes are named "
            f"<flavor>-<index>; the system node is {SYSTEM_NODE}); rename a flavor"
        )
    return found
