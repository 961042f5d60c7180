"""ResourceFlavors: the classes of nodes quotas are counted against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import keys
from components.config import Flavor


def flavor_spec(flavor: Flavor) -> dict[str, Any] | None:
    """The ResourceFlavor spec; None when the flavor sets nothing (as in the seed)."""
    spec: dict[str, Any] = {}
    if flavor.node_labels:
        spec["nodeLabels"] = dict(flavor.node_labels)
    if flavor.node_taints:
        spec["nodeTaints"] = [
            t.model_dump(by_alias=True, exclude_none=True) for t in flavor.node_taints
        ]
    if flavor.tolerations:
        spec["tolerations"] = [
            t.model_dump(by_alias=True, exclude_none=True) for t in flavor.tolerations
        ]
    return spec or None


@dataclass(frozen=True)
class FlavorsArgs:
    flavors: Sequence[Flavor]
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    """Kueue readiness gate (KueueReady.dependency)."""


class Flavors(pulumi.ComponentResource):
    """One kueue.x-k8s.io/v1beta2 ResourceFlavor per configured flavor."""

    by_name: dict[str, k8s.apiextensions.CustomResource]

    def __init__(
        self, name: str, args: FlavorsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:flavors:Flavors", name, None, opts)
        self.by_name = {}
        for flavor in args.flavors:
            self.by_name[flavor.name] = k8s.apiextensions.CustomResource(
                f"{name}-{flavor.name}",
                api_version=keys.KUEUE_API_VERSION,
                kind="ResourceFlavor",
                metadata={"name": flavor.name, "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}},
                spec=flavor_spec(flavor),
                opts=pulumi.ResourceOptions(parent=self, depends_on=args.ready),
            )
        self.names = pulumi.Output.from_input(list(self.by_name))
        self.register_outputs({"names": self.names})
