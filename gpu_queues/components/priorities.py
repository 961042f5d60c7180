"""WorkloadPriorityClasses: the priorities jobs name in their `kueue.x-k8s.io/priority-class`
label (rendered by gpu_queues/config/render.py). Kueue orders a queue by them and, where a team's
`preemption` allows it, preempts lower ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from gpu_queues.config import render
from gpu_queues.config.model import PriorityClass


@dataclass(frozen=True)
class PriorityClassesArgs:
    classes: Sequence[PriorityClass]
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    """Kueue readiness gate (KueueReady.dependency): the CRD and its webhook must serve."""


class PriorityClasses(pulumi.ComponentResource):
    """One kueue.x-k8s.io/v1beta2 WorkloadPriorityClass per configured class."""

    by_name: dict[str, pulumi.CustomResource]

    def __init__(
        self, name: str, args: PriorityClassesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:priorities:PriorityClasses", name, None, opts)
        self.by_name = {}
        for pc in args.classes:
            obj = render.workload_priority_class(pc)
            # The kind keeps `value` at the top level, which the SDK's CustomResource (spec
            # only) cannot carry: register it under the provider's type token for the kind,
            # with the object itself as the inputs, as that class does internally.
            self.by_name[pc.name] = pulumi.CustomResource(
                f"kubernetes:{obj['apiVersion']}:{obj['kind']}",
                f"{name}-{pc.name}",
                obj,
                pulumi.ResourceOptions(parent=self, depends_on=args.ready),
            )
        self.names = pulumi.Output.from_input(list(self.by_name))
        self.register_outputs({"names": self.names})
