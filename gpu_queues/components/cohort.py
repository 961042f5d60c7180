"""The Cohorts teams borrow from and lend to: the one shared cohort, or a tree of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from gpu_queues.components.objects import kueue_object
from gpu_queues.config import render
from gpu_queues.config.model import Cohort, CohortNode


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


@dataclass(frozen=True)
class CohortTreeArgs:
    cohorts: Sequence[CohortNode]
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None


class CohortTree(pulumi.ComponentResource):
    """The stack's tree of kueue.x-k8s.io/v1beta2 Cohorts (`cohorts`): each with its
    spec.parentName, own quota and fair-sharing weight, registered after its parent (Kueue
    reads a parent it has not seen yet as an empty cohort, for a moment a second tree)."""

    def __init__(
        self, name: str, args: CohortTreeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:cohort:CohortTree", name, None, opts)
        self.by_name: dict[str, pulumi.Resource] = {}
        pending = list(args.cohorts)
        while pending:  # parents first; the config check refused cycles and strangers
            node = next(
                (n for n in pending if n.parent is None or n.parent in self.by_name), pending[0]
            )
            pending.remove(node)
            parent = self.by_name.get(node.parent) if node.parent else None
            after: list[pulumi.Resource] = [parent] if parent is not None else []
            ready = after if args.ready is None else _after(args.ready, after)
            self.by_name[node.name] = kueue_object(
                f"{name}-{node.name}",
                render.cohort(node),
                pulumi.ResourceOptions(parent=self, depends_on=ready),
            )
        self.register_outputs({"cohorts": [c.name for c in args.cohorts]})


def _after(
    gate: pulumi.Input[Sequence[pulumi.Resource]], extra: list[pulumi.Resource]
) -> pulumi.Output[list[pulumi.Resource]]:
    """depends_on: the readiness gate (an Output) and the parent cohort."""

    def joined(resources: Sequence[pulumi.Resource]) -> list[pulumi.Resource]:
        return [*resources, *extra]

    return pulumi.Output.from_input(gate).apply(joined)
