"""The Cohort teams borrow from and lend to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from gpu_queues.components.objects import kueue_object
from gpu_queues.config import render
from gpu_queues.config.model import Cohort


@dataclass(frozen=True)
class SharedCohortArgs:
    cohort: Cohort
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None


class SharedCohort(pulumi.ComponentResource):
    """A kueue.x-k8s.io/v1beta2 Cohort; ClusterQueues join it with spec.cohortName."""

    def __init__(
        self, name: str, args: SharedCohortArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:cohort:SharedCohort", name, None, opts)
        obj = render.cohort(args.cohort)
        self.cohort = kueue_object(
            f"{name}-cohort",
            obj,
            pulumi.ResourceOptions(parent=self, depends_on=args.ready),
        )
        self.cohort_name = pulumi.Output.from_input(args.cohort.name)
        self.register_outputs({"name": self.cohort_name})
