"""The pack's policies: each rule of rules/ with its name, default enforcement level and
config schema. Building these objects starts nothing, so tests use this module; only
__main__.py wraps them in a PolicyPack (which starts the analyzer server).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from . import rules
from .rules import Resource, ResourceRule, StackRule
from .rules.cohorts import cohort_tree_valid, cohort_webhook_valid
from .rules.flavors import (
    clusterqueue_flavors_exist,
    quota_within_capacity,
    resourceflavor_webhook_valid,
)
from .rules.multikueue import (
    clusterqueue_admission_checks_exist,
    multikueue_references_exist,
    multikueue_webhook_valid,
)
from .rules.queues import (
    clusterqueue_covers_cpu_memory,
    clusterqueue_namespace_selector_not_all,
    clusterqueue_namespace_selector_set,
    clusterqueue_webhook_valid,
    clusterqueue_whole_extended_resources,
    localqueue_clusterqueue_exists,
    localqueue_namespace_selected,
    localqueue_webhook_valid,
)
from .rules.release import kueue_release_checksum, kueue_release_pinned
from .rules.topology import resourceflavor_topology_exists, topology_webhook_valid
from .rules.workloads import job_queued_suspended, shared_pvc_rwx_bound

PACK_NAME: Final = "gpu-queues"

_STRINGS: Final = {"type": "array", "items": {"type": "string"}}
_QUANTITY: Final = {
    "type": ["string", "number"],
    "description": "Kubernetes quantity, e.g. 8, 64, 512Gi",
}
_KUEUE_CONTROLLER: Final = {
    "namespace": {
        "type": "string",
        "default": rules.DEFAULT_KUEUE_NAMESPACE,
        "description": "namespace of the Kueue controller Deployment",
    },
    "deploymentName": {
        "type": "string",
        "default": rules.DEFAULT_KUEUE_DEPLOYMENT,
        "description": "name of the Kueue controller Deployment",
    },
}


def _is_clusterqueue(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) == "ClusterQueue"


def _is_quota_holder(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) in ("ClusterQueue", "Cohort")


def _is_cohort(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) == "Cohort"


def _is_local_queue(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) == "LocalQueue"


def _is_resource_flavor(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) == "ResourceFlavor"


def _is_topology(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) == "Topology"


def _is_kueue(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) is not None


def _is_multikueue(type_: str) -> bool:
    return rules.kueue_kind(Resource(type_, "", "", {})) in rules.MULTIKUEUE_KINDS


def _stack_resource(type_: str, name: str, urn: str, props: Any) -> Resource | None:
    """How a stack rule sees a resource: Kueue objects whole; a Secret by its metadata only
    (the MultiKueue rule needs its name and namespace, never its data); nothing else."""
    if _is_kueue(type_):
        return Resource.of(type_, name, urn, props)
    if type_ == rules.SECRET_TYPE:
        metadata = Resource.of(type_, name, urn, props).props.get("metadata")
        return Resource(type_, name, urn, {"metadata": metadata})
    return None


@dataclass(frozen=True)
class ResourcePolicySpec:
    name: str
    description: str
    rule: ResourceRule
    applies_to: Callable[[str], bool]
    level: EnforcementLevel
    config: Mapping[str, dict[str, Any]]


@dataclass(frozen=True)
class StackPolicySpec:
    name: str
    description: str
    rule: StackRule
    level: EnforcementLevel
    config: Mapping[str, dict[str, Any]]


RESOURCE_POLICIES: Final = (
    ResourcePolicySpec(
        rules.COVERS_CPU_MEMORY,
        "Every ClusterQueue covers cpu and memory; a job requesting only GPUs is never admitted.",
        clusterqueue_covers_cpu_memory,
        _is_clusterqueue,
        EnforcementLevel.MANDATORY,
        {
            "requiredResources": {
                **_STRINGS,
                "default": list(rules.DEFAULT_REQUIRED_RESOURCES),
                "description": "resources every ClusterQueue must cover",
            }
        },
    ),
    ResourcePolicySpec(
        rules.WEBHOOK_VALID,
        "ClusterQueue structure Kueue's webhook would reject at apply time.",
        clusterqueue_webhook_valid,
        _is_clusterqueue,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.WHOLE_EXTENDED_RESOURCES,
        "Quotas of extended resources such as nvidia.com/gpu are whole numbers (ClusterQueues "
        "and Cohorts).",
        clusterqueue_whole_extended_resources,
        _is_quota_holder,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.COHORT_WEBHOOK_VALID,
        "Cohort quota and fair-sharing weight Kueue's webhook would reject.",
        cohort_webhook_valid,
        _is_cohort,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.LOCALQUEUE_WEBHOOK_VALID,
        "LocalQueue fair-sharing weight Kueue's webhook would reject.",
        localqueue_webhook_valid,
        _is_local_queue,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.FLAVOR_WEBHOOK_VALID,
        "ResourceFlavor labels, taints and tolerations Kueue's webhook would reject.",
        resourceflavor_webhook_valid,
        _is_resource_flavor,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.TOPOLOGY_WEBHOOK_VALID,
        "Topology levels Kueue's CRD validation would reject.",
        topology_webhook_valid,
        _is_topology,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.NAMESPACE_SELECTOR_SET,
        "Every ClusterQueue sets namespaceSelector (null admits no namespace).",
        clusterqueue_namespace_selector_set,
        _is_clusterqueue,
        EnforcementLevel.MANDATORY,
        {},
    ),
    ResourcePolicySpec(
        rules.NAMESPACE_SELECTOR_NOT_ALL,
        "A ClusterQueue's namespaceSelector {} lets every namespace use its quota.",
        clusterqueue_namespace_selector_not_all,
        _is_clusterqueue,
        EnforcementLevel.ADVISORY,
        {},
    ),
    ResourcePolicySpec(
        rules.SHARED_PVC,
        "A claim on the shared storage class is ReadWriteMany and names its volume.",
        shared_pvc_rwx_bound,
        lambda type_: type_ == rules.PVC_TYPE,
        EnforcementLevel.MANDATORY,
        {
            "sharedStorageClass": {
                "type": "string",
                "default": rules.DEFAULT_SHARED_STORAGE_CLASS,
                "description": "storage class of the cluster's shared volume",
            }
        },
    ),
    ResourcePolicySpec(
        rules.KUEUE_RELEASE_PINNED,
        "The Kueue controller runs a pinned vX.Y.Z release.",
        kueue_release_pinned,
        lambda type_: type_.startswith(rules.DEPLOYMENT_TYPE),
        EnforcementLevel.MANDATORY,
        {
            **_KUEUE_CONTROLLER,
            "expectedVersion": {
                "type": "string",
                "pattern": r"^v[0-9]+\.[0-9]+\.[0-9]+$",
                "description": "if set, the only Kueue release allowed (e.g. v0.18.3)",
            },
        },
    ),
    ResourcePolicySpec(
        rules.KUEUE_RELEASE_CHECKSUM,
        "The Kueue release manifest is checked against a configured sha256.",
        kueue_release_checksum,
        lambda type_: type_ == rules.DEPLOYMENT_TYPE,
        EnforcementLevel.MANDATORY,
        dict(_KUEUE_CONTROLLER),
    ),
    ResourcePolicySpec(
        rules.JOB_QUEUED_SUSPENDED,
        "A Job (a CronJob's job template too) carries the kueue.x-k8s.io/queue-name label and "
        "suspend: true; any other workload asking for GPUs carries the label, in a kind Kueue "
        "manages.",
        job_queued_suspended,
        lambda type_: type_.startswith("kubernetes:"),
        EnforcementLevel.MANDATORY,
        {
            "exemptNamespaces": {
                **_STRINGS,
                "default": [],
                "description": "namespaces whose Jobs Kueue does not manage",
            }
        },
    ),
    ResourcePolicySpec(
        rules.MULTIKUEUE_WEBHOOK_VALID,
        "AdmissionCheck, MultiKueueConfig, MultiKueueCluster and ProvisioningRequestConfig "
        "fields Kueue would refuse.",
        multikueue_webhook_valid,
        _is_multikueue,
        EnforcementLevel.MANDATORY,
        {},
    ),
)

_PRE_EXISTING: Final = {
    "preExistingMultiKueueConfigs": "MultiKueueConfigs that exist outside this stack",
    "preExistingMultiKueueClusters": "MultiKueueClusters that exist outside this stack",
    "preExistingKubeconfigSecrets": "kubeconfig Secrets in Kueue's namespace made outside "
    "this stack",
}

STACK_POLICIES: Final = (
    StackPolicySpec(
        rules.FLAVORS_EXIST,
        "Every flavor a ClusterQueue or a Cohort's own quota names exists as a ResourceFlavor.",
        clusterqueue_flavors_exist,
        EnforcementLevel.MANDATORY,
        {
            "preExistingFlavors": {
                **_STRINGS,
                "default": [],
                "description": "ResourceFlavors that exist in the cluster outside this stack",
            }
        },
    ),
    StackPolicySpec(
        rules.FLAVOR_TOPOLOGY_EXISTS,
        "Every topologyName a ResourceFlavor names exists as a Topology.",
        resourceflavor_topology_exists,
        EnforcementLevel.MANDATORY,
        {
            "preExistingTopologies": {
                **_STRINGS,
                "default": [],
                "description": "Topologies that exist in the cluster outside this stack",
            }
        },
    ),
    StackPolicySpec(
        rules.CLUSTERQUEUE_EXISTS,
        "Every LocalQueue points at an existing ClusterQueue.",
        localqueue_clusterqueue_exists,
        EnforcementLevel.MANDATORY,
        {
            "preExistingClusterQueues": {
                **_STRINGS,
                "default": [],
                "description": "ClusterQueues that exist in the cluster outside this stack",
            }
        },
    ),
    StackPolicySpec(
        rules.LOCALQUEUE_NAMESPACE_SELECTED,
        "Every LocalQueue is in a namespace its ClusterQueue's namespaceSelector selects.",
        localqueue_namespace_selected,
        EnforcementLevel.MANDATORY,
        {},
    ),
    StackPolicySpec(
        rules.COHORT_TREE_VALID,
        "The Cohorts form trees: no cycle, every parent a Cohort that exists.",
        cohort_tree_valid,
        EnforcementLevel.MANDATORY,
        {
            "preExistingCohorts": {
                **_STRINGS,
                "default": [],
                "description": "Cohorts that exist in the cluster outside this stack",
            }
        },
    ),
    StackPolicySpec(
        rules.QUOTA_WITHIN_CAPACITY,
        "Per flavor and resource, the queues' nominal quotas fit the capacity.",
        quota_within_capacity,
        EnforcementLevel.MANDATORY,
        {
            "capacity": {
                "type": "object",
                "default": {},
                "additionalProperties": {"type": "object", "additionalProperties": _QUANTITY},
                "description": "flavor -> resource -> quantity of the hardware behind it",
            }
        },
    ),
    StackPolicySpec(
        rules.ADMISSION_CHECKS_EXIST,
        "Every admission check a ClusterQueue names exists; at most one MultiKueue check, "
        "for all flavors.",
        clusterqueue_admission_checks_exist,
        EnforcementLevel.MANDATORY,
        {
            "preExistingAdmissionChecks": {
                **_STRINGS,
                "default": [],
                "description": "AdmissionChecks that exist in the cluster outside this stack",
            }
        },
    ),
    StackPolicySpec(
        rules.MULTIKUEUE_REFERENCES_EXIST,
        "A MultiKueue check's config, its clusters and their kubeconfig Secrets exist.",
        multikueue_references_exist,
        EnforcementLevel.MANDATORY,
        {
            "kueueNamespace": {
                "type": "string",
                "default": rules.DEFAULT_KUEUE_NAMESPACE,
                "description": "Kueue's namespace, where MultiKueueClusters' Secrets are",
            },
            **{
                key: {**_STRINGS, "default": [], "description": text}
                for key, text in _PRE_EXISTING.items()
            },
        },
    ),
)


def _schema(config: Mapping[str, dict[str, Any]]) -> PolicyConfigSchema | None:
    return PolicyConfigSchema(properties=dict(config)) if config else None


def _resource_policy(spec: ResourcePolicySpec) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if not spec.applies_to(args.resource_type):
            return
        resource = Resource.of(args.resource_type, args.name, args.urn, args.props)
        for violation in spec.rule(resource, args.get_config()):
            report(violation.message, None)

    return ResourceValidationPolicy(
        name=spec.name,
        description=spec.description,
        validate=validate,
        enforcement_level=spec.level,
        config_schema=_schema(spec.config),
    )


def _stack_policy(spec: StackPolicySpec) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        # Only Kueue objects (and Secrets' names) matter to stack rules; skipping the rest
        # avoids copying CRDs.
        resources = [
            found
            for r in args.resources
            if (found := _stack_resource(r.resource_type, r.name, r.urn, r.props)) is not None
        ]
        for violation in spec.rule(resources, args.get_config()):
            report(violation.message, violation.urn)

    return StackValidationPolicy(
        name=spec.name,
        description=spec.description,
        validate=validate,
        enforcement_level=spec.level,
        config_schema=_schema(spec.config),
    )


def policies() -> list[Policy]:
    """Fresh Policy objects for every rule, in the order of the issue's rule list."""
    built: list[Policy] = [_resource_policy(spec) for spec in RESOURCE_POLICIES]
    built += [_stack_policy(spec) for spec in STACK_POLICIES]
    return built
