"""Per team: its namespaces, ClusterQueue, LocalQueues and the RBAC to submit Jobs to them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_queues import keys
from gpu_queues.components.objects import kueue_object
from gpu_queues.config import render
from gpu_queues.config.model import Subject, Team

SUBMIT_ROLE = "gpu-queues-submit"


def rbac_subject(subject: Subject, team_namespace: str) -> dict[str, Any]:
    if subject.kind == "ServiceAccount":
        return {
            "kind": "ServiceAccount",
            "name": subject.name,
            "namespace": subject.namespace or team_namespace,
        }
    return {"kind": subject.kind, "name": subject.name, "apiGroup": "rbac.authorization.k8s.io"}


SUBMIT_RULES: list[dict[str, Any]] = [
    # Submit, follow and clean up Jobs in the team namespace.
    {
        "apiGroups": ["batch"],
        "resources": ["jobs"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    },
    {
        "apiGroups": [""],
        "resources": ["pods", "pods/log", "events"],
        "verbs": ["get", "list", "watch"],
    },
    # Queues and workloads are read-only: quota is changed here, in stack config.
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["localqueues", "workloads"],
        "verbs": ["get", "list", "watch"],
    },
]


def queue_reader_rules(team: Team) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues"],
            "resourceNames": [team.cluster_queue],
            "verbs": ["get", "watch"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["resourceflavors"],
            "verbs": ["get", "list", "watch"],
        },
    ]


@dataclass(frozen=True)
class TeamQueuesArgs:
    team: Team
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None = None
    """Kueue readiness gate (KueueReady.dependency)."""
    uses: Sequence[pulumi.Resource] = field(default_factory=list)
    """Flavors, cohort and admission checks the ClusterQueue refers to."""
    admission_checks: Sequence[render.CheckRule] = ()
    """Admission checks of the ClusterQueue (render.admission_checks_of: a MultiKueue manager's,
    the provisioning checks)."""


class TeamQueues(pulumi.ComponentResource):
    """A team's namespaces, ClusterQueue, LocalQueues and RBAC. The team's default namespace
    and LocalQueue keep the resource names of the one-namespace form; others are named after
    their namespace (and queue)."""

    namespace: pulumi.CustomResource
    namespaces: dict[str, pulumi.CustomResource]
    cluster_queue: k8s.apiextensions.CustomResource
    local_queue: k8s.apiextensions.CustomResource
    local_queues: list[k8s.apiextensions.CustomResource]

    def __init__(
        self, name: str, args: TeamQueuesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:queues:TeamQueues", name, None, opts)
        team = args.team
        labels = {keys.LABEL_MANAGED_BY: keys.PROJECT, keys.LABEL_TEAM: team.name}
        child = pulumi.ResourceOptions(parent=self)
        self.namespaces = {}
        for namespace in team.all_namespaces:
            suffix = "" if namespace == team.namespace else f"-{namespace}"
            ns_meta = {"name": namespace, "labels": labels}
            # Existing namespace: patch our labels onto it; destroy removes them, not it.
            kind = k8s.core.v1.NamespacePatch if team.adopt_namespace else k8s.core.v1.Namespace
            self.namespaces[namespace] = kind(
                f"{name}-namespace{suffix}", metadata=ns_meta, opts=child
            )
        self.namespace = self.namespaces[team.namespace]

        self._queues(name, args)
        if team.submitters:
            for namespace in team.all_namespaces:
                self._submitter_rbac(name, team, namespace, labels)
            self._queue_reader(name, team, labels)

        # Plain values: the SDK registers them as it would Outputs of them, without an Output
        # (and its tasks) per value and team.
        self.register_outputs(
            {
                "clusterQueue": team.cluster_queue,
                "localQueue": f"{team.namespace}/{team.local_queue}",
            }
        )

    def _queues(self, name: str, args: TeamQueuesArgs) -> None:
        """The ClusterQueue, after the namespaces and what it uses; each LocalQueue after its
        namespace and the ClusterQueue."""
        team = args.team
        # The Kueue objects are registered exactly as rendered (and validated) by render.py.
        cq = render.cluster_queue(team, list(args.admission_checks))
        self.cluster_queue = kueue_object(
            f"{name}-clusterqueue",
            cq,
            pulumi.ResourceOptions(
                parent=self,
                depends_on=_gate(args.ready, [*self.namespaces.values(), *args.uses]),
            ),
        )
        self.local_queues = []
        for lq in render.local_queues(team):
            lq_name, namespace = lq["metadata"]["name"], lq["metadata"]["namespace"]
            default = (lq_name, namespace) == (team.local_queue, team.namespace)
            self.local_queues.append(
                kueue_object(
                    f"{name}-localqueue" + ("" if default else f"-{namespace}-{lq_name}"),
                    lq,
                    pulumi.ResourceOptions(
                        parent=self,
                        depends_on=_gate(
                            args.ready, [self.namespaces[namespace], self.cluster_queue]
                        ),
                        # spec.clusterQueue is immutable: pointing elsewhere means a new one.
                        replace_on_changes=["spec.clusterQueue"],
                        delete_before_replace=True,
                    ),
                )
            )
        self.local_queue = self.local_queues[0]

    def _submitter_rbac(
        self, name: str, team: Team, namespace: str, labels: dict[str, str]
    ) -> None:
        """The team's submitters may create workloads in one of its namespaces."""
        suffix = "" if namespace == team.namespace else f"-{namespace}"
        subjects = [rbac_subject(s, team.namespace) for s in team.submitters]
        role = k8s.rbac.v1.Role(
            f"{name}-submit-role{suffix}",
            metadata={"name": SUBMIT_ROLE, "namespace": namespace, "labels": labels},
            rules=SUBMIT_RULES,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespaces[namespace]]),
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-submit-binding{suffix}",
            metadata={"name": SUBMIT_ROLE, "namespace": namespace, "labels": labels},
            role_ref={
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": SUBMIT_ROLE,
            },
            subjects=subjects,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
        )

    def _queue_reader(self, name: str, team: Team, labels: dict[str, str]) -> None:
        """The team's submitters may read its ClusterQueue and the flavors."""
        subjects = [rbac_subject(s, team.namespace) for s in team.submitters]
        reader_name = f"gpu-queues-{team.name}-queue-reader"
        reader = k8s.rbac.v1.ClusterRole(
            f"{name}-queue-reader-role",
            metadata={"name": reader_name, "labels": labels},
            rules=queue_reader_rules(team),
            opts=pulumi.ResourceOptions(parent=self),
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-queue-reader-binding",
            metadata={"name": reader_name, "labels": labels},
            role_ref={
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": reader_name,
            },
            subjects=subjects,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[reader]),
        )


def _gate(
    ready: pulumi.Input[Sequence[pulumi.Resource]] | None, extra: Sequence[pulumi.Resource]
) -> pulumi.Input[Sequence[pulumi.Resource]]:
    """depends_on for Kueue objects: the readiness gate (an Output) plus direct dependencies."""
    if ready is None:
        return list(extra)
    return pulumi.Output.from_input(ready).apply(lambda gate: [*gate, *extra])
