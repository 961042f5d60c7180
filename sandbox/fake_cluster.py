"""What the sandbox's simulated GPU cloud provides before the stack runs: fake nodes shaped
by the local stack's flavors (kwok keeps them Ready and runs their pods) and the static
shared volumes the cloud provisions, named after each shared volume.

The stack's own config models read Pulumi.local.yaml, so the nodes match exactly what the
program declares; nothing here is known to the program itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.config import StackConfig, load_config
from gpuq.stackfile import parse_config

NODE_ANNOTATION = "kwok.x-k8s.io/node"
# The pod count kubelets advertise by default; kwok nodes need one too or nothing schedules.
PODS_PER_NODE = "110"


def load_stack(path: Path) -> StackConfig:
    return load_config(parse_config(path.read_text(), path.name))


def node(
    flavor_name: str, labels: dict[str, str], taints: list[dict[str, Any]], capacity: dict[str, str]
) -> dict[str, Any]:
    name = f"{flavor_name}-node-0"
    resources = {**capacity, "pods": PODS_PER_NODE}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake"},
            "labels": {
                **labels,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": resources, "allocatable": resources},
    }


def manifests(stack: StackConfig) -> str:
    objs: list[dict[str, Any]] = []
    for f in stack.flavors:
        taints = [t.model_dump(by_alias=True, exclude_none=True) for t in f.node_taints or []]
        objs.append(node(f.name, dict(f.node_labels or {}), taints, dict(f.capacity or {})))
    classes = sorted({v.storage_class for v in stack.shared_storage})
    for sc in classes:
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
    return "\n---\n".join(json.dumps(o) for o in objs)


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
