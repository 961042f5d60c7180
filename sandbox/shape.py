"""What the sandbox's simulated cloud provides before a stack runs, shaped like that stack:
fake nodes (the nodes the stack declares, gpu_queues.whatif.nodes, the same the fast what-if
places pods on: one kwok node per node the stack's flavors declare, with their labels (a TAS
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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.fields import ALWAYS_PRESENT_NAMESPACES
from gpu_queues.release.module import RELEASE_IMAGE
from gpu_queues.release.stack_release import kueue_release_problem
from gpu_queues.whatif.nodes import SYSTEM_NODE, NodeNameClash, nodes, on_demand_flavors
from sandbox.autoscaler import provisioning_request_crd
from sandbox.kueue_pod import binary_for
from sandbox.paths import ROOT, STATE

# The value of the PriorityClass the sandbox creates when the stack's controller names one:
# a platform class, above workloads and below Kubernetes' own (2,000,000,000 and up).
SYSTEM_PRIORITY = 1_000_000
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


def adopted_namespaces(stack: StackConfig) -> list[str]:
    """Namespaces the stack adopts: the cloud made them before the stack ever ran."""
    return sorted(
        {
            ns
            for t in stack.teams
            if t.adopt_namespace
            for ns in t.all_namespaces
            if ns not in ALWAYS_PRESENT_NAMESPACES
        }
    )


def stack_nodes(stack: StackConfig) -> list[dict[str, Any]]:
    """The nodes the stack declares (gpu_queues.whatif.nodes), as the cloud's kwok nodes."""
    try:
        return nodes(stack)
    except NodeNameClash as exc:
        raise ShapeError(str(exc)) from None


def objects(stack: StackConfig) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = list(stack_nodes(stack))
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
    stack_nodes(stack)  # name clashes are refused before anything starts
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
