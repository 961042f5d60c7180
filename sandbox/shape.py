"""What the sandbox's simulated cloud provides before a stack runs, shaped like that stack:
fake nodes (one kwok node per node the stack's flavors declare, with their labels (a TAS
flavor's nodes also its topology levels, `<level>-<index>`: docs/topology.md), taints
and allocatable; kwok keeps them Ready and runs their pods), a system node for Kueue's
controller, the PriorityClass the controller names (kueue.controller.priorityClassName), the
namespaces the stack adopts, and the static shared volumes the cloud provisions, named after
each shared volume.

The stack's own config models read the stack file, so the nodes match exactly what the
program declares; nothing here is known to the program itself. Which stack shaped the
running sandbox is recorded in .sandbox/shape.json, so a sandbox shaped like one stack is
never silently used for another (`sandbox.sh up` and the rehearsal check it).

Command line (sandbox.sh runs it on the host, before anything starts):
  python -m sandbox.shape check STACK [FILE]   validate, print the shape it would build
  python -m sandbox.shape same STACK [FILE]    exit 1, saying why, unless the running
                                                      sandbox was shaped from exactly that file
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.capacity import encode_capacity
from gpu_queues.kueue.fields import ALWAYS_PRESENT_NAMESPACES
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.kueue.versions import supported, unsupported_message
from gpu_queues.release.module import RELEASE_IMAGE
from sandbox.autoscaler import provisioning_request_crd
from sandbox.kueue_pod import binary_for
from sandbox.paths import ROOT, STATE

NODE_ANNOTATION = "kwok.x-k8s.io/node"
# Which flavor a fake node stands for. An annotation, not a label: it must not change what
# the scheduler or Kueue see. The rehearsal reads it to say which flavor a pod landed on.
FLAVOR_ANNOTATION = "sandbox.gpu-queues.dev/flavor"
SYSTEM_NODE = "sandbox-system-0"
# The pod count kubelets advertise by default; kwok nodes need one too or nothing schedules.
PODS_PER_NODE = "110"
# The value of the PriorityClass the sandbox creates when the stack's controller names one:
# a platform class, above workloads and below Kubernetes' own (2,000,000,000 and up).
SYSTEM_PRIORITY = 1_000_000
# A modest system node, as clouds give a system pool; grown if the controller asks for more.
SYSTEM_NODE_RESOURCES: dict[str, Fraction] = {"cpu": Fraction(16), "memory": Fraction(64 * 2**30)}
# What the release manifest's controller requests when the stack does not say (Kueue v0.18).
KUEUE_DEFAULT_REQUESTS: dict[str, Fraction] = {
    "cpu": Fraction(1, 2),
    "memory": Fraction(512 * 2**20),
}
SHAPE_FILE = STATE / "shape.json"
STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class ShapeError(Exception):
    """The stack cannot shape a sandbox, or the running sandbox has another shape."""


# --- reading a stack --------------------------------------------------------------------


def stack_path(stack: str, stack_file: Path | None = None) -> Path:
    """The stack file: the given one, else Pulumi.<stack>.yaml at the project root."""
    if not STACK_NAME.match(stack):
        raise ShapeError(
            f"stack name {stack!r} is not a Pulumi stack name (letters, digits, '-', '_', '.')"
        )
    path = (stack_file or ROOT / f"Pulumi.{stack}.yaml").resolve()
    if not path.is_file():
        known = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))
        raise ShapeError(
            f"no stack file {path}; stacks here: {', '.join(known)} (or pass STACK_FILE=...)"
        )
    return path


def load_stack(path: Path) -> StackConfig:
    """The stack's config through the program's own models (ShapeError naming every problem)."""
    try:
        return load_config(parse_config(path.read_text(), path.name))
    except ConfigError as e:
        raise ShapeError(f"{path}: the stack config is invalid:\n{e}") from e


# --- the simulated cloud ----------------------------------------------------------------


def node(
    name: str,
    labels: dict[str, str],
    taints: list[dict[str, Any]],
    resources: dict[str, str],
    flavor: str | None,
) -> dict[str, Any]:
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
    found = [*flavor_nodes(stack), system_node(stack)]
    counted = Counter(n["metadata"]["name"] for n in found)  # once each: a cluster may have 10^5
    clashes = sorted(name for name, times in counted.items() if times > 1)
    if clashes:
        raise ShapeError(
            f"node names clash: {', '.join(clashes)} (a flavor's nodes are named "
            f"<flavor>-<index>; the system node is {SYSTEM_NODE}); rename a flavor"
        )
    return found


def adopted_namespaces(stack: StackConfig) -> list[str]:
    """Namespaces the stack adopts: the cloud made them before the stack ever ran."""
    return sorted(
        {
            t.namespace
            for t in stack.teams
            if t.adopt_namespace and t.namespace not in ALWAYS_PRESENT_NAMESPACES
        }
    )


def objects(stack: StackConfig) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = list(nodes(stack))
    if stack.provisioning is not None:
        # The cloud's autoscaler serves ProvisioningRequests before Kueue starts, or Kueue
        # runs no provisioning controller (sandbox/autoscaler.py).
        objs.insert(0, provisioning_request_crd())
    for ns in adopted_namespaces(stack):
        objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if (priority := stack.kueue.controller.priority_class_name) is not None:
        # the cluster's own PriorityClass the controller names (kueue.controller): without it
        # the API server refuses the controller's pods
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": priority},
                "value": SYSTEM_PRIORITY,
                "description": "the platform's, as the stack's kueue.controller names it",
            }
        )
    for sc in sorted({v.storage_class for v in stack.shared_storage}):
        objs.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": sc},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "Immediate",
                "reclaimPolicy": "Retain",
            }
        )
    for v in stack.shared_storage:
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {
                    "name": v.volume_name,
                    "labels": {"gpu-queues.dev/shared-volume": "true"},
                },
                "spec": {
                    "capacity": {"storage": v.size},
                    "accessModes": [v.access_mode],
                    "storageClassName": v.storage_class,
                    "persistentVolumeReclaimPolicy": "Retain",
                    # A shared filesystem export, as the cloud provisions it. Nothing mounts it:
                    # kwok plays the kubelet, so the address is never dialled.
                    "nfs": {"server": "127.0.0.1", "path": f"/exports/{v.volume_name}"},
                },
            }
        )
    return objs


def manifests(stack: StackConfig) -> str:
    return "\n---\n".join(json.dumps(o) for o in objects(stack))


def nodes_ready(kubectl: Callable[..., str]) -> bool:
    out = json.loads(kubectl("get", "nodes", "-o", "json"))
    items = out.get("items", [])
    return bool(items) and all(
        any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in n.get("status", {}).get("conditions", [])
        )
        for n in items
    )


# --- which stack shaped the sandbox ------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    stack: str
    file: str
    sha256: str
    kueue_version: str
    flavor_nodes: dict[str, int]
    hardless_flavors: list[str]
    """Flavors declaring neither nodes nor capacity: the sandbox has no node for them."""
    volumes: list[str]

    def describe(self) -> str:
        per = ", ".join(f"{f}: {n}" for f, n in self.flavor_nodes.items()) or "no flavors"
        text = (
            f"stack {self.stack!r} ({self.file}): {sum(self.flavor_nodes.values())} flavor "
            f"node(s) ({per}) + {SYSTEM_NODE}, {len(self.volumes)} shared volume(s), "
            f"Kueue {self.kueue_version}"
        )
        if self.hardless_flavors:
            text += (
                f"; flavor(s) {', '.join(self.hardless_flavors)} declare no nodes or capacity, "
                "so the sandbox has no node for them (jobs admitted there cannot run)"
            )
        return text


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kueue_release_problem(stack_name: str, version: str) -> str | None:
    """Why the sandbox cannot run the stack's Kueue release (None when it can). The sandbox
    runs the controller binary of whatever release the stack's manifest names (sandbox.kueue_pod
    picks it by the image tag), so any supported release rehearses: the pin, or a stack that
    sets its own `kueue.version` ahead of the pin (docs/upgrading.md)."""
    if version not in supported():
        return f"stack {stack_name!r} runs Kueue {version}: {unsupported_message(version)}"
    return None


def kueue_binary_problem(version: str) -> str | None:
    """Why the release's controller binary is missing here (None when it is linked)."""
    binary = binary_for(f"{RELEASE_IMAGE}:{version}")
    if binary.is_file():
        return None
    return (
        f"{binary} is missing: `make toolchain` builds (or links from its cache) the pinned "
        f"release's controller only; to add Kueue {version}'s: "
        f"`make toolchain KUEUE_VERSIONS={version}`"
    )


def shape_of(stack_name: str, path: Path, stack: StackConfig) -> Shape:
    why = kueue_release_problem(stack_name, stack.kueue.version)
    if why:
        raise ShapeError(why)
    nodes(stack)  # name clashes are refused before anything starts
    return Shape(
        stack=stack_name,
        file=str(path),
        sha256=_sha256(path),
        kueue_version=stack.kueue.version,
        flavor_nodes={
            f.name: 0 if f.name in on_demand_flavors(stack) else len(f.node_list())
            for f in stack.flavors
        },
        hardless_flavors=[f.name for f in stack.flavors if not f.node_list()],
        volumes=[v.volume_name for v in stack.shared_storage],
    )


def write_shape(shape: Shape) -> None:
    SHAPE_FILE.write_text(json.dumps(asdict(shape), indent=2))


def read_shape() -> Shape | None:
    if not SHAPE_FILE.exists():
        return None
    return Shape(**json.loads(SHAPE_FILE.read_text()))


def mismatch(stack_name: str, path: Path) -> str | None:
    """Why the running sandbox is not shaped from this stack file (None when it is)."""
    shape = read_shape()
    if shape is None:
        return "the running sandbox records no shape (it predates shape records); restart it"
    if shape.stack != stack_name or Path(shape.file) != path:
        return f"the running sandbox is shaped like {shape.describe()}"
    if shape.sha256 != _sha256(path):
        return f"{path} changed since it shaped the running sandbox"
    return None


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ("check", "same"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        path = stack_path(argv[1], Path(argv[2]) if len(argv) == 3 else None)
        stack = load_stack(path)
        shape = shape_of(argv[1], path, stack)
        missing = kueue_binary_problem(stack.kueue.version) if argv[0] == "check" else None
        if missing:
            raise ShapeError(missing)
    except ShapeError as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 1
    if argv[0] == "check":
        print(f"sandbox: shaping it like {shape.describe()}")
        return 0
    why = mismatch(argv[1], path)
    if why:
        print(
            f"sandbox: refusing to use it for stack {argv[1]!r} ({path}): {why}.\n"
            "  Stop it first (make sandbox-down), then start it shaped like this stack; "
            "`make rehearse` always starts a fresh one.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
