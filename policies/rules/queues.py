"""The pack's rules on queues: a ClusterQueue's structure (Kueue's CRD validation and webhook,
cpu and memory covered, whole extended resources), the namespaces it lets in, and the
ClusterQueue each LocalQueue points at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.localqueue import local_queue_errors, unselected_local_queues
from gpu_queues.kueue.resourcegroups import fractional_quotas, uncovered_resources

from ..props import child, is_unknown
from ..resource import (
    Resource,
    Violation,
    config_list,
    field_violation,
    known_str,
    kueue_kind,
    names,
    names_of_kind,
    violation,
)
from . import (
    CLUSTERQUEUE_EXISTS,
    COVERS_CPU_MEMORY,
    DEFAULT_REQUIRED_RESOURCES,
    LOCALQUEUE_NAMESPACE_SELECTED,
    LOCALQUEUE_WEBHOOK_VALID,
    NAMESPACE_SELECTOR_NOT_ALL,
    NAMESPACE_SELECTOR_SET,
    WEBHOOK_VALID,
    WHOLE_EXTENDED_RESOURCES,
)

# --- Rules 1 and 2: ClusterQueue structure (the validation core) --------------------------


def clusterqueue_covers_cpu_memory(
    resource: Resource, config: Mapping[str, Any]
) -> list[Violation]:
    """A ClusterQueue covers cpu and memory: a job requesting only GPUs is never admitted."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    required = config_list(config, "requiredResources", DEFAULT_REQUIRED_RESOURCES)
    return [
        field_violation(COVERS_CPU_MEMORY, resource, error)
        for error in uncovered_resources(resource.props, required)
    ]


def clusterqueue_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """ClusterQueue structure Kueue's CRD validation or webhook would reject at apply time."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    return [
        field_violation(WEBHOOK_VALID, resource, error)
        for error in cluster_queue_errors(resource.props)
    ]


def clusterqueue_whole_extended_resources(
    resource: Resource, config: Mapping[str, Any]
) -> list[Violation]:
    """Quotas of extended resources (nvidia.com/gpu) are whole numbers: no pod can use half
    (a ClusterQueue's, and a Cohort's own)."""
    if kueue_kind(resource) not in ("ClusterQueue", "Cohort"):
        return []
    return [
        field_violation(WHOLE_EXTENDED_RESOURCES, resource, error)
        for error in fractional_quotas(resource.props)
    ]


def localqueue_clusterqueue_exists(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every LocalQueue points at a ClusterQueue of the stack or a pre-existing one."""
    declared, unknown_names = names_of_kind(resources, "ClusterQueue")
    if unknown_names:
        return []
    known = declared | set(config_list(config, "preExistingClusterQueues"))
    violations: list[Violation] = []
    for resource in resources:
        if kueue_kind(resource) != "LocalQueue":
            continue
        target = child(resource.props, "spec", "clusterQueue")
        if is_unknown(target):
            continue
        if not known_str(target):
            violations.append(
                violation(
                    CLUSTERQUEUE_EXISTS,
                    resource,
                    "spec.clusterQueue is not set, so jobs sent to it are never admitted",
                    "set spec.clusterQueue to the name of a ClusterQueue",
                )
            )
        elif target not in known:
            violations.append(
                violation(
                    CLUSTERQUEUE_EXISTS,
                    resource,
                    f'spec.clusterQueue is "{target}", a ClusterQueue that neither this stack '
                    f"declares nor the pack config lists as pre-existing (declared: "
                    f"{names(sorted(declared))}); jobs sent to it would wait forever",
                    "point spec.clusterQueue at a declared ClusterQueue, declare it, or add it "
                    f"to {CLUSTERQUEUE_EXISTS}.preExistingClusterQueues in the policy config",
                )
            )
    return violations


# --- Rule 5 -----------------------------------------------------------------------------


def clusterqueue_namespace_selector_set(
    resource: Resource, config: Mapping[str, Any]
) -> list[Violation]:
    """namespaceSelector is set: null (the default) lets no namespace submit to the queue."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    spec = child(resource.props, "spec")
    if is_unknown(spec) or child(spec, "namespaceSelector") is not None:
        return []
    return [
        violation(
            NAMESPACE_SELECTOR_SET,
            resource,
            "spec.namespaceSelector is not set; Kueue reads that as selecting no namespace, so "
            "every workload gets 'namespace doesn't match ClusterQueue selector'",
            "set spec.namespaceSelector to a label selector for the teams' namespaces "
            "(or {} for every namespace)",
        )
    ]


def clusterqueue_namespace_selector_not_all(
    resource: Resource, config: Mapping[str, Any]
) -> list[Violation]:
    """namespaceSelector {} lets every namespace use the queue (fine in dev, not in prod)."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    selector = child(resource.props, "spec", "namespaceSelector")
    if not isinstance(selector, dict):
        return []
    labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    if is_unknown(labels) or is_unknown(expressions) or labels or expressions:
        return []
    return [
        violation(
            NAMESPACE_SELECTOR_NOT_ALL,
            resource,
            "spec.namespaceSelector is {} (no matchLabels or matchExpressions), so a job from "
            "any namespace can use this queue's quota",
            "select the teams' namespaces with matchLabels or matchExpressions (e.g. "
            "kubernetes.io/metadata.name In [team-a]); {} suits only stacks where every "
            "namespace may use the queue (this policy is advisory there)",
        )
    ]


# --- LocalQueues ------------------------------------------------------------------------


def localqueue_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """A LocalQueue's fair-sharing weight Kueue's webhook would reject at apply time."""
    if kueue_kind(resource) != "LocalQueue":
        return []
    return [
        field_violation(LOCALQUEUE_WEBHOOK_VALID, resource, error)
        for error in local_queue_errors(resource.props)
    ]


def localqueue_namespace_selected(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every LocalQueue is in a namespace its ClusterQueue's namespaceSelector selects: Kueue
    accepts one that is not, and every job sent to it waits for good."""
    by_props = {id(r.props): r for r in resources}
    return [
        field_violation(LOCALQUEUE_NAMESPACE_SELECTED, by_props[id(lq)], error)
        for lq, error in unselected_local_queues(
            [r.props for r in resources if kueue_kind(r) in ("ClusterQueue", "LocalQueue")]
        )
    ]
