"""The guardrails of the gpu-queues policy pack, as plain functions on plain data.

Each rule takes a Resource (or every Resource of the stack) and its policy's config, and
returns Violations. A message names the object, the rule and the fix. Values that are unknown
during preview (see values.py) never cause a violation: the check waits for `pulumi up`.
The Kueue rules themselves (ClusterQueue and ResourceFlavor structure, coverage, whole numbers,
flavors that exist) and the capacity sum are the project's one validation core, one module
per Kueue object kind in gpu_queues/kueue/ (clusterqueue, resourcegroups, quotas, resourceflavor,
admissioncheck, multikueue) and gpu_queues/kueue/capacity.py, which the stack config check
runs too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final

from gpu_queues.kueue import multikueue as kueue_multikueue
from gpu_queues.kueue import resourcegroups as kueue_resourcegroups
from gpu_queues.kueue.admissioncheck import (
    MULTIKUEUE_CONTROLLER,
    admission_check_errors,
    missing_multikueue_config,
    multikueue_check_placement,
    undeclared_admission_checks,
)
from gpu_queues.kueue.capacity import (
    CAPACITY_ANNOTATION,
    QuotaHolder,
    declared_capacity,
    over_capacity,
    quota_totals,
)
from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.kueue.resourceflavor import resource_flavor_errors
from gpu_queues.kueue.resourcegroups import (
    fractional_quotas,
    uncovered_resources,
    undeclared_flavors,
)

from .resource import (
    Resource,
    Violation,
    config_list,
    config_str,
    field_violation,
    known_str,
    kueue_kind,
    names,
    violation,
)
from .values import child, is_unknown

__all__ = [
    "CAPACITY_ANNOTATION",
    "Resource",
    "ResourceRule",
    "StackRule",
    "Violation",
    "kueue_kind",
]

# Policy names: what `--policy-pack-config` files and violation reports use.
COVERS_CPU_MEMORY: Final = "clusterqueue-covers-cpu-memory"
WEBHOOK_VALID: Final = "clusterqueue-webhook-valid"
WHOLE_EXTENDED_RESOURCES: Final = "clusterqueue-whole-extended-resources"
FLAVOR_WEBHOOK_VALID: Final = "resourceflavor-webhook-valid"
FLAVORS_EXIST: Final = "clusterqueue-flavors-exist"
CLUSTERQUEUE_EXISTS: Final = "localqueue-clusterqueue-exists"
NAMESPACE_SELECTOR_SET: Final = "clusterqueue-namespace-selector-set"
NAMESPACE_SELECTOR_NOT_ALL: Final = "clusterqueue-namespace-selector-not-all"
QUOTA_WITHIN_CAPACITY: Final = "quota-within-capacity"
SHARED_PVC: Final = "shared-pvc-rwx-bound"
KUEUE_RELEASE_PINNED: Final = "kueue-release-pinned"
KUEUE_RELEASE_CHECKSUM: Final = "kueue-release-checksum"
JOB_QUEUED_SUSPENDED: Final = "job-queued-suspended"
ADMISSION_CHECKS_EXIST: Final = "clusterqueue-admission-checks-exist"
MULTIKUEUE_WEBHOOK_VALID: Final = "multikueue-webhook-valid"
MULTIKUEUE_REFERENCES_EXIST: Final = "multikueue-references-exist"

# Defaults of the config keys (the pack's config schema in catalog.py repeats them).
DEFAULT_REQUIRED_RESOURCES: Final = kueue_resourcegroups.DEFAULT_REQUIRED_RESOURCES
DEFAULT_SHARED_STORAGE_CLASS: Final = "shared-wekafs"
DEFAULT_KUEUE_NAMESPACE: Final = "kueue-system"
DEFAULT_KUEUE_DEPLOYMENT: Final = "kueue-controller-manager"
CHECKSUM_ANNOTATION: Final = "gpu-queues.dev/manifest-sha256"
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"

_PINNED_TAG: Final = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
_SHA256: Final = re.compile(r"^(sha256:)?[0-9a-f]{64}$")

PVC_TYPE: Final = "kubernetes:core/v1:PersistentVolumeClaim"
DEPLOYMENT_TYPE: Final = "kubernetes:apps/v1:Deployment"
JOB_TYPE: Final = "kubernetes:batch/v1:Job"
SECRET_TYPE: Final = "kubernetes:core/v1:Secret"
MULTIKUEUE_KINDS: Final = ("AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster")


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
    """Quotas of extended resources (nvidia.com/gpu) are whole numbers: no pod can use half."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    return [
        field_violation(WHOLE_EXTENDED_RESOURCES, resource, error)
        for error in fractional_quotas(resource.props)
    ]


def resourceflavor_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """ResourceFlavor labels, taints and tolerations Kueue would reject at apply time."""
    if kueue_kind(resource) != "ResourceFlavor":
        return []
    return [
        field_violation(FLAVOR_WEBHOOK_VALID, resource, error)
        for error in resource_flavor_errors(resource.props)
    ]


# --- Rules 3 and 4 (stack) ------------------------------------------------------------------


def _names_of_kind(resources: Sequence[Resource], kind: str) -> tuple[set[str], bool]:
    """metadata.name of every Kueue object of a kind, and whether any name is unknown."""
    found: set[str] = set()
    any_unknown = False
    for resource in resources:
        if kueue_kind(resource) != kind:
            continue
        name = resource.k8s_name
        if is_unknown(name):
            any_unknown = True
        elif isinstance(name, str) and name:
            found.add(name)
    return found, any_unknown


def clusterqueue_flavors_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every flavor a ClusterQueue names is a ResourceFlavor of the stack or pre-existing."""
    declared, unknown_names = _names_of_kind(resources, "ResourceFlavor")
    if unknown_names:
        return []  # a flavor whose name is not known yet may be the one referenced
    known = declared | set(config_list(config, "preExistingFlavors"))
    fix = (
        "declare the ResourceFlavor in the stack, fix the flavor name, or add it to "
        f"{FLAVORS_EXIST}.preExistingFlavors in the policy config"
    )
    return [
        violation(FLAVORS_EXIST, resource, f"{error.where}: {error.message}", fix)
        for resource in resources
        if kueue_kind(resource) == "ClusterQueue"
        for error in undeclared_flavors(resource.props, known)
    ]


def localqueue_clusterqueue_exists(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every LocalQueue points at a ClusterQueue of the stack or a pre-existing one."""
    declared, unknown_names = _names_of_kind(resources, "ClusterQueue")
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


# --- Rule 6 (stack) -------------------------------------------------------------------------

Capacity = dict[tuple[str, str], tuple[Fraction, str]]


def _capacity_from_config(config: Mapping[str, Any]) -> tuple[Capacity, list[str]]:
    capacity: Capacity = {}
    problems: list[str] = []
    raw = config.get("capacity")
    if not isinstance(raw, Mapping):
        return capacity, problems
    for flavor, per_resource in raw.items():
        if not isinstance(per_resource, Mapping):
            problems.append(f"capacity.{flavor} is not an object of resource: quantity")
            continue
        for resource_name, value in per_resource.items():
            try:
                capacity[(str(flavor), str(resource_name))] = (
                    parse_quantity(value),
                    "the policy config",
                )
            except QuantityError as error:
                problems.append(f"capacity.{flavor}.{resource_name}: {error}")
    return capacity, problems


def _capacity_from_flavors(resources: Sequence[Resource]) -> tuple[Capacity, list[Violation]]:
    """Capacity the program declared on its ResourceFlavors (CAPACITY_ANNOTATION)."""
    capacity: Capacity = {}
    violations: list[Violation] = []
    for resource in resources:
        if kueue_kind(resource) != "ResourceFlavor":
            continue
        flavor = known_str(resource.k8s_name)
        declared, errors = declared_capacity(resource.props)
        violations += [field_violation(QUOTA_WITHIN_CAPACITY, resource, e) for e in errors]
        if flavor is None:
            continue
        source = f"ResourceFlavor {flavor}'s {CAPACITY_ANNOTATION} annotation"
        for resource_name, amount in declared.items():
            capacity[(flavor, resource_name)] = (amount, source)
    return capacity, violations


def quota_within_capacity(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Per flavor and resource, the nominal quotas of all queues fit the hardware behind it."""
    capacity, violations = _capacity_from_flavors(resources)
    configured, config_problems = _capacity_from_config(config)
    capacity.update(configured)  # the policy config wins over what the program declares
    violations += [
        Violation(None, f"[{QUOTA_WITHIN_CAPACITY}] policy config: {text}. Fix: correct it.")
        for text in config_problems
    ]
    totals = quota_totals(r.props for r in resources)
    limits = {key: amount for key, (amount, _) in capacity.items()}

    def label(holder: QuotaHolder) -> str:
        return f"{holder.kind} {holder.name}"

    for overrun in over_capacity(totals, limits):
        source = capacity[overrun.flavor, overrun.resource][1]
        violations.append(
            Violation(
                None,
                f"[{QUOTA_WITHIN_CAPACITY}] {overrun.describe(label)} (from {source}); "
                "admitted jobs would sit Pending for want of nodes. Fix: lower the nominalQuota "
                "of these queues, or raise the capacity if the hardware grew.",
            )
        )
    return violations


# --- Rule 7 -----------------------------------------------------------------------------


def shared_pvc_rwx_bound(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """A claim on the shared storage class is ReadWriteMany and names its static volume."""
    if resource.type != PVC_TYPE:
        return []
    spec = child(resource.props, "spec")
    storage_class = child(spec, "storageClassName")
    shared = config_str(config, "sharedStorageClass", DEFAULT_SHARED_STORAGE_CLASS)
    if is_unknown(spec) or storage_class != shared:
        return []
    violations: list[Violation] = []
    modes = child(spec, "accessModes")
    modes_known = not is_unknown(modes) and not any(is_unknown(m) for m in _items(modes))
    if modes_known and "ReadWriteMany" not in _items(modes):
        violations.append(
            violation(
                SHARED_PVC,
                resource,
                f"accessModes are [{names(_items(modes))}] on shared storage class {shared}, "
                "so pods of a job on different nodes cannot all mount it",
                "set accessModes to [ReadWriteMany]",
            )
        )
    volume = child(spec, "volumeName")
    if not is_unknown(volume) and not volume:
        violations.append(
            violation(
                SHARED_PVC,
                resource,
                f"spec.volumeName is not set, so the claim on {shared} does not bind to the "
                "cluster's static shared volume",
                "set spec.volumeName to the shared PersistentVolume's name",
            )
        )
    return violations


# --- Rule 8 -----------------------------------------------------------------------------


def _is_kueue_controller(resource: Resource, config: Mapping[str, Any]) -> bool:
    if resource.type != DEPLOYMENT_TYPE:
        return False
    name = child(resource.props, "metadata", "name")
    namespace = child(resource.props, "metadata", "namespace")
    return bool(
        name == config_str(config, "deploymentName", DEFAULT_KUEUE_DEPLOYMENT)
        and namespace == config_str(config, "namespace", DEFAULT_KUEUE_NAMESPACE)
    )


def image_tag(image: str) -> str | None:
    """The tag of an image reference (None without one); a registry port is not a tag."""
    reference = image.split("@", 1)[0]
    last = reference.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def kueue_release_pinned(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """The Kueue controller runs a pinned vX.Y.Z release image, not latest or a branch."""
    if not _is_kueue_controller(resource, config):
        return []
    expected = config.get("expectedVersion")
    containers = child(resource.props, "spec", "template", "spec", "containers")
    violations: list[Violation] = []
    for container in _items(containers):
        image = child(container, "image")
        cname = child(container, "name")
        if not isinstance(image, str):
            continue
        tag = image_tag(image)
        if tag is None or not _PINNED_TAG.match(tag):
            shown = "no tag" if tag is None else f"tag {tag!r}"
            violations.append(
                violation(
                    KUEUE_RELEASE_PINNED,
                    resource,
                    f"container {cname} runs image {image} with {shown}, not a pinned release "
                    "vX.Y.Z, so what runs can change under the same config",
                    "install Kueue from a versioned release manifest (kueue.version: vX.Y.Z in "
                    "the stack config, e.g. v0.18.3)",
                )
            )
        elif isinstance(expected, str) and expected and tag != expected:
            violations.append(
                violation(
                    KUEUE_RELEASE_PINNED,
                    resource,
                    f"container {cname} runs Kueue {tag} but the policy config expects {expected}",
                    "set kueue.version to the expected release, or update "
                    f"{KUEUE_RELEASE_PINNED}.expectedVersion",
                )
            )
    return violations


def kueue_release_checksum(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """The Kueue release manifest was checked against a configured sha256."""
    if not _is_kueue_controller(resource, config):
        return []
    annotations = child(resource.props, "metadata", "annotations")
    digest = child(annotations, CHECKSUM_ANNOTATION)
    if is_unknown(annotations) or is_unknown(digest):
        return []
    if isinstance(digest, str) and _SHA256.match(digest):
        return []
    problem = (
        f"annotation {CHECKSUM_ANNOTATION} is missing, so the release manifest was applied "
        "without checking its sha256"
        if digest is None
        else f"annotation {CHECKSUM_ANNOTATION} is {digest!r}, not a sha256 hex digest"
    )
    return [
        violation(
            KUEUE_RELEASE_CHECKSUM,
            resource,
            problem,
            "set gpu-queues:kueue.manifest.sha256 in the stack config to the release "
            "manifest's sha256 (sha256sum manifests.yaml)",
        )
    ]


# --- Rule 9 -----------------------------------------------------------------------------


def job_queued_suspended(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """A Job names a LocalQueue and starts suspended, so Kueue (not the scheduler) admits it."""
    if resource.type != JOB_TYPE:
        return []
    namespace = child(resource.props, "metadata", "namespace")
    if isinstance(namespace, str) and namespace in config_list(config, "exemptNamespaces"):
        return []
    violations: list[Violation] = []
    queue = child(resource.props, "metadata", "labels", QUEUE_NAME_LABEL)
    if not is_unknown(queue) and not queue:
        violations.append(
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"label {QUEUE_NAME_LABEL} is missing, so the job bypasses Kueue and runs "
                "without quota",
                f"add metadata.labels[{QUEUE_NAME_LABEL!r}] naming the team's LocalQueue",
            )
        )
    suspend = child(resource.props, "spec", "suspend")
    if not is_unknown(suspend) and suspend is not True:
        violations.append(
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"spec.suspend is {suspend if suspend is not None else 'not set'}, so its pods "
                "start before Kueue admits it",
                "set spec.suspend: true (Kueue flips it to false on admission)",
            )
        )
    return violations


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


ResourceRule = Callable[[Resource, Mapping[str, Any]], list[Violation]]
StackRule = Callable[[Sequence[Resource], Mapping[str, Any]], list[Violation]]


# --- Rules 10-12: admission checks and MultiKueue -----------------------------------------


def multikueue_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """AdmissionCheck, MultiKueueConfig and MultiKueueCluster fields Kueue's CRDs refuse or
    its MultiKueue controller cannot use."""
    kind = kueue_kind(resource)
    check = {
        "AdmissionCheck": admission_check_errors,
        "MultiKueueConfig": kueue_multikueue.multikueue_config_errors,
        "MultiKueueCluster": kueue_multikueue.multikueue_cluster_errors,
    }.get(kind or "")
    if check is None:
        return []
    return [field_violation(MULTIKUEUE_WEBHOOK_VALID, resource, e) for e in check(resource.props)]


def _multikueue_checks(resources: Sequence[Resource]) -> set[str]:
    return {
        name
        for r in resources
        if kueue_kind(r) == "AdmissionCheck"
        and child(r.props, "spec", "controllerName") == MULTIKUEUE_CONTROLLER
        and isinstance(name := r.k8s_name, str)
    }


def clusterqueue_admission_checks_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every admission check a ClusterQueue names is an AdmissionCheck of the stack or a
    pre-existing one, and a queue uses at most one MultiKueue check, for all its flavors."""
    declared, unknown_names = _names_of_kind(resources, "AdmissionCheck")
    known = declared | set(config_list(config, "preExistingAdmissionChecks"))
    multikueue = _multikueue_checks(resources)
    fix = (
        "declare the AdmissionCheck in the stack, fix the name, or add it to "
        f"{ADMISSION_CHECKS_EXIST}.preExistingAdmissionChecks in the policy config"
    )
    violations: list[Violation] = []
    for resource in resources:
        if kueue_kind(resource) != "ClusterQueue":
            continue
        if not unknown_names:  # a check whose name is not known yet may be the one named
            violations += [
                violation(ADMISSION_CHECKS_EXIST, resource, f"{e.where}: {e.message}", fix)
                for e in undeclared_admission_checks(resource.props, known)
            ]
        violations += [
            field_violation(ADMISSION_CHECKS_EXIST, resource, e)
            for e in multikueue_check_placement(resource.props, multikueue)
        ]
    return violations


def multikueue_references_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """A MultiKueue check's MultiKueueConfig, that config's MultiKueueClusters and each
    cluster's kubeconfig Secret (in Kueue's namespace) exist in the stack or are listed as
    pre-existing in the policy config."""
    namespace = config_str(config, "kueueNamespace", DEFAULT_KUEUE_NAMESPACE)
    configs, configs_unknown = _names_of_kind(resources, "MultiKueueConfig")
    clusters, clusters_unknown = _names_of_kind(resources, "MultiKueueCluster")
    secrets: set[str] = set()
    secrets_unknown = False
    for r in resources:
        if r.type != SECRET_TYPE or child(r.props, "metadata", "namespace") != namespace:
            continue
        if is_unknown(r.k8s_name):
            secrets_unknown = True
        elif isinstance(r.k8s_name, str):
            secrets.add(r.k8s_name)
    configs |= set(config_list(config, "preExistingMultiKueueConfigs"))
    clusters |= set(config_list(config, "preExistingMultiKueueClusters"))
    secrets |= set(config_list(config, "preExistingKubeconfigSecrets"))
    violations: list[Violation] = []
    for resource in resources:
        kind = kueue_kind(resource)
        if kind == "AdmissionCheck" and not configs_unknown:
            errors = missing_multikueue_config(resource.props, configs)
            what = "preExistingMultiKueueConfigs"
        elif kind == "MultiKueueConfig" and not clusters_unknown:
            errors = kueue_multikueue.missing_multikueue_clusters(resource.props, clusters)
            what = "preExistingMultiKueueClusters"
        elif kind == "MultiKueueCluster" and not secrets_unknown:
            errors = kueue_multikueue.missing_kubeconfig_secret(resource.props, secrets)
            what = "preExistingKubeconfigSecrets"
        else:
            continue
        violations += [
            violation(
                MULTIKUEUE_REFERENCES_EXIST,
                resource,
                f"{e.where}: {e.message}",
                f"{e.fix}, or add it to {MULTIKUEUE_REFERENCES_EXIST}.{what} in the policy config",
            )
            for e in errors
        ]
    return violations
