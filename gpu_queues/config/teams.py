"""The stack config's teams and cohorts: a team's namespaces, ClusterQueue and LocalQueues
(quotas, preemption, fair sharing, flavor fungibility, stop policy, admission scope, who may
submit), and the cohorts teams join: the one-cohort form and the tree (`cohorts`). Part of the
typed config (gpu_queues/config/model.py, which re-exports these models); the relations
between them are cross-checks (checks.py), Kueue's rules on what they render run in
rendered.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from gpu_queues.config import render
from gpu_queues.config.base import Model
from gpu_queues.kueue.fieldtypes import (
    LabelName,
    LocalQueueName,
    ObjectName,
    Quantity,
    ResourceName,
)


class Cohort(Model):
    """The one-cohort form (`gpu-queues:cohort`): a root without quota of its own."""

    name: ObjectName


class ResourceQuota(Model):
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(Model):
    name: ObjectName = Field(description="a flavor declared under flavors")
    resources: dict[ResourceName, ResourceQuota] = Field(
        description="one entry per covered resource of the group"
    )


class ResourceGroup(Model):
    covered_resources: list[ResourceName] = Field(min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=64)


class FairSharingWeight(Model):
    """Kueue's `fairSharing` of a ClusterQueue, Cohort or LocalQueue."""

    weight: Quantity = Field(
        description="share of unused quota relative to siblings (Kueue's default 1); 0: "
        "borrows only what no sibling with a weight wants"
    )


class CohortNode(Model):
    """A Cohort of the tree (`gpu-queues:cohorts`), rendered as Kueue's Cohort object."""

    name: ObjectName
    parent: ObjectName | None = Field(
        default=None, description="another cohort of the list (spec.parentName); unset: a root"
    )
    resource_groups: list[ResourceGroup] | None = Field(
        default=None,
        max_length=16,
        description="quota that belongs to the cohort itself, shared by its subtree (limits "
        "need a parent)",
    )
    fair_sharing: FairSharingWeight | None = None


class TeamLocalQueue(Model):
    """One of a team's LocalQueues (`localQueues`), pointing at the team's ClusterQueue."""

    name: LocalQueueName
    namespace: LabelName = Field(description="one of the team's namespaces")
    fair_sharing: FairSharingWeight | None = Field(
        default=None,
        description="the queue's weight in admission fair sharing (the team's admissionScope)",
    )


class FlavorFungibility(Model):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] | None = None
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] | None = None


class AdmissionScope(Model):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


class BorrowWithinCohort(Model):
    policy: Literal["Never", "LowerPriority"]
    max_priority_threshold: int | None = None


class Preemption(Model):
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = None
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None = (
        None
    )
    borrow_within_cohort: BorrowWithinCohort | None = None


class Subject(Model):
    kind: Literal["User", "Group", "ServiceAccount"]
    name: str = Field(min_length=1)
    namespace: LabelName | None = Field(
        default=None, description="ServiceAccount only; default: the team namespace"
    )


def _one_of_each_form(schema: dict[str, Any]) -> None:
    """In the JSON schema a team needs `namespace` or `namespaces`, and `localQueue` or
    `localQueues` (the model fills the default one from the list)."""
    required = schema.get("required", [])
    schema["required"] = [k for k in required if k not in ("namespace", "localQueue")]
    schema["allOf"] = [
        {"anyOf": [{"required": ["namespace"]}, {"required": ["namespaces"]}]},
        {"anyOf": [{"required": ["localQueue"]}, {"required": ["localQueues"]}]},
    ]


class Team(Model):
    """A team: its namespaces, one ClusterQueue and its LocalQueues. `namespace` and
    `localQueue` are the one-namespace, one-queue form; with `namespaces` or `localQueues`
    they default to the first namespace and queue (the team's default, which tools that name
    one queue per team use)."""

    name: LabelName
    namespace: LabelName = Field(
        description="the team's (default) namespace; with namespaces: one of them (default "
        "the first LocalQueue's, else the first)"
    )
    namespaces: list[LabelName] | None = Field(
        default=None,
        min_length=1,
        description="every namespace the team owns (its ClusterQueue selects exactly these)",
    )
    adopt_namespace: bool = Field(
        default=False,
        description="true: the namespaces already exist; adopt them, never delete them",
    )
    cluster_queue: ObjectName
    local_queue: LocalQueueName = Field(
        description="the team's (default) LocalQueue; with localQueues: the first of them"
    )
    local_queues: list[TeamLocalQueue] | None = Field(
        default=None, min_length=1, description="several LocalQueues in the team's namespaces"
    )
    namespace_selector: Literal["team", "all"] = Field(
        default="team",
        description="team: only the team's namespaces; all: {} (every namespace)",
    )
    cohort: ObjectName | None = Field(
        default=None, description="the cohort the team's ClusterQueue joins (a leaf or any node)"
    )
    resource_groups: list[ResourceGroup] = Field(min_length=1, max_length=16)
    preemption: Preemption | None = None
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] | None = None
    fair_sharing: FairSharingWeight | None = Field(
        default=None, description="the ClusterQueue's fair-sharing weight among its siblings"
    )
    flavor_fungibility: FlavorFungibility | None = None
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] | None = Field(
        default=None,
        description="Hold: admit nothing new; HoldAndDrain: also evict what runs; None: admit",
    )
    admission_scope: AdmissionScope | None = Field(
        default=None,
        description="admission fair sharing among the team's LocalQueues (needs "
        "kueue.manager.admissionFairSharing)",
    )
    submitters: list[Subject] = Field(default_factory=list)

    model_config = ConfigDict(json_schema_extra=_one_of_each_form)

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """Fill the default namespace and LocalQueue from namespaces/localQueues (the
        relations between them are cross-checks, gpu_queues/config/checks.py)."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        queues = data.get("localQueues")
        first = queues[0] if isinstance(queues, list) and queues else None
        first = first if isinstance(first, Mapping) else {}
        names = data.get("namespaces")
        if data.get("namespace") is None:
            if first.get("namespace") is not None:
                data["namespace"] = first["namespace"]
            elif isinstance(names, list) and names:
                data["namespace"] = names[0]
        if data.get("localQueue") is None and first.get("name") is not None:
            data["localQueue"] = first["name"]
        return data

    @property
    def queues(self) -> list[tuple[str, str]]:
        """Every LocalQueue of the team as (name, namespace), by the rule the rendering follows
        (render.team_local_queues)."""
        return [
            (str(q.get("name")), str(q.get("namespace")))
            for q in render.team_local_queues(render.config_form(self))
        ]

    @property
    def all_namespaces(self) -> list[str]:
        """Every namespace the team owns, its default first (render.team_namespaces)."""
        return [str(n) for n in render.team_namespaces(render.config_form(self))]
