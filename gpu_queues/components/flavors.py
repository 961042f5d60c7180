"""ResourceFlavors: the classes of nodes quotas are counted against (rendered by
gpu_queues/config/render.py, with the capacity annotation the policy pack checks quotas against),
and the Topologies their topologyName names (docs/topology.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_queues.components.objects import kueue_object
from gpu_queues.config import render
from gpu_queues.config.model import Flavor, Topology


@dataclass(frozen=True)
class FlavorsArgs:
    flavors: Sequence[Flavor]
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    """Kueue readiness gate (KueueReady.dependency)."""
    topologies: Sequence[Topology] = ()


class Flavors(pulumi.ComponentResource):
    """One kueue.x-k8s.io/v1beta2 ResourceFlavor per configured flavor."""

    by_name: dict[str, k8s.apiextensions.CustomResource]
    topologies: dict[str, k8s.apiextensions.CustomResource]

    def __init__(
        self, name: str, args: FlavorsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:flavors:Flavors", name, None, opts)
        self.by_name = {}
        self.topologies = {
            t.name: kueue_object(
                f"{name}-topology-{t.name}",
                render.topology(t),
                pulumi.ResourceOptions(parent=self, depends_on=args.ready),
            )
            for t in args.topologies
        }
        for flavor in args.flavors:
            obj = render.resource_flavor(flavor)  # what the config check validated
            # A TAS flavor after its Topology: Kueue reads the levels when the flavor appears.
            used = self.topologies.get(flavor.topology_name or "")
            self.by_name[flavor.name] = kueue_object(
                f"{name}-{flavor.name}",
                obj,
                pulumi.ResourceOptions(
                    parent=self, depends_on=[used] if used is not None else args.ready
                ),
            )
        self.names = pulumi.Output.from_input(list(self.by_name))
        self.register_outputs({"names": self.names})
