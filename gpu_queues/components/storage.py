"""Shared storage: claims bound to the cluster's static PersistentVolumes.

A PersistentVolume binds to exactly one claim, so each entry of `sharedStorage` is one
static volume and one claim in one team namespace. A second namespace is refused with a
config error (see gpu_queues/config/checks.py) instead of creating extra PersistentVolumes here:
the volume source (CSI driver, handle, mount options) belongs to the platform that made
the static volume, and copying it by guesswork could mount the wrong data. To share the
same storage with another namespace, have the platform create a second static volume on it
and add a second entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from gpu_queues import keys
from gpu_queues.config.model import SharedVolume

# Wait for Bound even for WaitForFirstConsumer classes (the provider would stop at Pending).
WAIT_FOR_BOUND = "jsonpath={.status.phase}=Bound"


def claim_spec(volume: SharedVolume) -> dict[str, object]:
    return {
        "accessModes": [volume.access_mode],
        "storageClassName": volume.storage_class,
        "volumeName": volume.volume_name,
        "resources": {"requests": {"storage": volume.size}},
    }


@dataclass(frozen=True)
class SharedStorageArgs:
    volumes: Sequence[SharedVolume]
    namespaces: Mapping[str, pulumi.Resource] = field(default_factory=dict)
    """Team namespace name -> the resource that creates or adopts it."""


class SharedStorage(pulumi.ComponentResource):
    """One PersistentVolumeClaim per static shared volume, protected unless allowDestroy."""

    claims: dict[str, k8s.core.v1.PersistentVolumeClaim]

    def __init__(
        self, name: str, args: SharedStorageArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:storage:SharedStorage", name, None, opts)
        self.claims = {}
        for volume in args.volumes:
            ref = f"{volume.namespace}/{volume.claim_name}"
            namespace = args.namespaces.get(volume.namespace)
            self.claims[ref] = k8s.core.v1.PersistentVolumeClaim(
                f"{name}-{volume.namespace}-{volume.claim_name}",
                metadata={
                    "name": volume.claim_name,
                    "namespace": volume.namespace,
                    "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT},
                    "annotations": {"pulumi.com/waitFor": WAIT_FOR_BOUND},
                },
                spec=claim_spec(volume),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    protect=not volume.allow_destroy,
                    depends_on=[namespace] if namespace is not None else [],
                    custom_timeouts=pulumi.CustomTimeouts(create="5m"),
                ),
            )
        self.claim_refs = pulumi.Output.from_input(list(self.claims))
        self.register_outputs({"claims": self.claim_refs})
