"""The guardrails of the gpu-queues policy pack, as plain functions on plain data.

Each rule takes a Resource (or every Resource of the stack) and its policy's config, and
returns Violations. A message names the object, the rule and the fix. Values that are unknown
during preview (see values.py) never cause a violation: the check waits for `pulumi up`.
Field names and limits follow Kueue v1beta2 (ClusterQueue CRD and webhook, Kueue v0.18).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, NamedTuple

from components.quantity import QuantityError, format_quantity, parse_quantity

from .values import child, is_unknown, plain

# Policy names: what `--policy-pack-config` files and violation reports use.
COVERS_CPU_MEMORY: Final = "clusterqueue-covers-cpu-memory"
WEBHOOK_VALID: Final = "clusterqueue-webhook-valid"
FLAVORS_EXIST: Final = "clusterqueue-flavors-exist"
CLUSTERQUEUE_EXISTS: Final = "localqueue-clusterqueue-exists"
NAMESPACE_SELECTOR_SET: Final = "clusterqueue-namespace-selector-set"
NAMESPACE_SELECTOR_NOT_ALL: Final = "clusterqueue-namespace-selector-not-all"
QUOTA_WITHIN_CAPACITY: Final = "quota-within-capacity"
SHARED_PVC: Final = "shared-pvc-rwx-bound"
KUEUE_RELEASE_PINNED: Final = "kueue-release-pinned"
KUEUE_RELEASE_CHECKSUM: Final = "kueue-release-checksum"
JOB_QUEUED_SUSPENDED: Final = "job-queued-suspended"

# Defaults of the config keys (the pack's config schema in catalog.py repeats them).
DEFAULT_REQUIRED_RESOURCES: Final = ("cpu", "memory")
DEFAULT_SHARED_STORAGE_CLASS: Final = "shared-wekafs"
DEFAULT_KUEUE_NAMESPACE: Final = "kueue-system"
DEFAULT_KUEUE_DEPLOYMENT: Final = "kueue-controller-manager"
CHECKSUM_ANNOTATION: Final = "gpu-queues.dev/manifest-sha256"
CAPACITY_ANNOTATION: Final = "gpu-queues.dev/capacity"
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"

# Limits of the ClusterQueue CRD (MaxItems) and webhook (totals), Kueue v0.18.
MAX_RESOURCE_GROUPS: Final = 16
MAX_ITEMS_PER_LIST: Final = 64
MAX_TOTAL_FLAVORS: Final = 256
MAX_TOTAL_COVERED: Final = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS: Final = 512

_QUANTITY_FIX: Final = "write a non-negative Kubernetes quantity such as 8, 64 or 512Gi"
_KUEUE_TYPE = re.compile(r"^kubernetes:kueue\.x-k8s\.io/v1beta[12]:(?P<kind>[A-Za-z]+)$")
_PINNED_TAG = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
_SHA256 = re.compile(r"^(sha256:)?[0-9a-f]{64}$")

PVC_TYPE: Final = "kubernetes:core/v1:PersistentVolumeClaim"
DEPLOYMENT_TYPE: Final = "kubernetes:apps/v1:Deployment"
JOB_TYPE: Final = "kubernetes:batch/v1:Job"


@dataclass(frozen=True)
class Resource:
    """One resource as a policy sees it: Pulumi type token, Pulumi name, URN, plain props."""

    type: str
    name: str
    urn: str
    props: dict[str, Any]

    @classmethod
    def of(cls, type_: str, name: str, urn: str, props: Mapping[str, Any]) -> Resource:
        """Build from what the runtime passes (props may be the unknown-checking proxy)."""
        return cls(type_, name, urn, plain(props))

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def k8s_name(self) -> Any:
        """metadata.name (UNKNOWN or None when not known or not set)."""
        return child(self.props, "metadata", "name")

    def label(self) -> str:
        """How messages name the object: its Kubernetes name and its Pulumi resource name."""
        name = self.k8s_name
        namespace = child(self.props, "metadata", "namespace")
        shown = name if isinstance(name, str) and name else "<name not known yet>"
        if isinstance(namespace, str) and namespace:
            shown = f"{namespace}/{shown}"
        return f'{self.kind} "{shown}" (Pulumi resource "{self.name}")'


class Violation(NamedTuple):
    urn: str | None
    message: str


def _violation(rule: str, resource: Resource, problem: str, fix: str) -> Violation:
    return Violation(resource.urn, f"[{rule}] {resource.label()}: {problem}. Fix: {fix}.")


def kueue_kind(resource: Resource) -> str | None:
    """The Kueue kind of a kueue.x-k8s.io custom resource, else None."""
    match = _KUEUE_TYPE.match(resource.type)
    return match["kind"] if match else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _names(values: Iterable[Any]) -> str:
    return ", ".join(str(v) for v in values) or "none"


def _known_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _config_list(config: Mapping[str, Any], key: str, default: Sequence[str] = ()) -> list[str]:
    value = config.get(key, list(default))
    if not isinstance(value, Sequence) or isinstance(value, str):
        return list(default)
    return [str(v) for v in value]


def _config_str(config: Mapping[str, Any], key: str, default: str) -> str:
    value = config.get(key, default)
    return value if isinstance(value, str) and value else default


# --- Rule 1 -----------------------------------------------------------------------------


def clusterqueue_covers_cpu_memory(
    resource: Resource, config: Mapping[str, Any]
) -> list[Violation]:
    """A ClusterQueue covers cpu and memory: a job requesting only GPUs is never admitted."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    groups = child(resource.props, "spec", "resourceGroups")
    if is_unknown(groups):
        return []
    covered: list[str] = []
    for group in _list(groups):
        resources = child(group, "coveredResources")
        if is_unknown(resources):
            return []
        for name in _list(resources):
            if is_unknown(name):
                return []
            covered.append(str(name))
    required = _config_list(config, "requiredResources", DEFAULT_REQUIRED_RESOURCES)
    missing = [name for name in required if name not in covered]
    if not missing:
        return []
    return [
        _violation(
            COVERS_CPU_MEMORY,
            resource,
            f"coveredResources [{_names(covered)}] do not include {_names(missing)}, so a job "
            f"whose pods also request {_names(missing)} (almost every job) is never admitted",
            f"add {_names(repr(m) for m in missing)} to a resourceGroup's coveredResources and "
            "give every flavor of that group a nominalQuota for it",
        )
    ]


# --- Rule 2 -----------------------------------------------------------------------------


def _quantity_problem(value: Any, field: str) -> tuple[Fraction | None, str | None]:
    """Parse a quota field: (value, None), (None, problem), or (None, None) when unknown."""
    if is_unknown(value):
        return None, None
    try:
        parsed = parse_quantity(value)
    except QuantityError as error:
        return None, f"{field} {error}"
    if parsed < 0:
        return None, f"{field} is {value}, which is negative"
    return parsed, None


def clusterqueue_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """ClusterQueue structure Kueue's CRD validation or webhook would reject at apply time."""
    if kueue_kind(resource) != "ClusterQueue":
        return []
    spec = child(resource.props, "spec")
    groups = child(spec, "resourceGroups")
    if is_unknown(spec) or is_unknown(groups):
        return []
    cohort = child(spec, "cohortName")
    if cohort is None:
        cohort = child(spec, "cohort")  # the v1beta1 name of the field
    has_cohort = is_unknown(cohort) or bool(cohort)
    problems: list[tuple[str, str]] = []

    def problem(text: str, fix: str) -> None:
        problems.append((text, fix))

    groups = _list(groups)
    if len(groups) > MAX_RESOURCE_GROUPS:
        problem(
            f"it has {len(groups)} resourceGroups, more than {MAX_RESOURCE_GROUPS}",
            f"merge resource groups until there are at most {MAX_RESOURCE_GROUPS}",
        )
    seen_resources: dict[str, int] = {}
    seen_flavors: dict[str, int] = {}
    total_flavors = 0
    total_covered = 0
    for g, group in enumerate(groups):
        where = f"resourceGroups[{g}]"
        covered = child(group, "coveredResources")
        flavors = child(group, "flavors")
        if is_unknown(covered) or is_unknown(flavors):
            continue
        covered, flavors = _list(covered), _list(flavors)
        total_covered += len(covered)
        total_flavors += len(flavors)
        if not 1 <= len(covered) <= MAX_ITEMS_PER_LIST:
            problem(
                f"{where}.coveredResources has {len(covered)} entries",
                f"list between 1 and {MAX_ITEMS_PER_LIST} resources",
            )
        if not 1 <= len(flavors) <= MAX_ITEMS_PER_LIST:
            problem(
                f"{where}.flavors has {len(flavors)} entries",
                f"list between 1 and {MAX_ITEMS_PER_LIST} flavors",
            )
        for name in covered:
            if is_unknown(name):
                continue
            if name in seen_resources:
                problem(
                    f"resource {name!r} is covered by resourceGroups[{seen_resources[name]}] "
                    f"and {where}",
                    "cover each resource in only one resource group",
                )
            else:
                seen_resources[name] = g
        combinations = 0
        for f, flavor in enumerate(flavors):
            fwhere = f"{where}.flavors[{f}]"
            flavor_name = child(flavor, "name")
            if flavor_name is None or flavor_name == "":
                problem(f"{fwhere} has no name", "name the ResourceFlavor this quota is for")
            elif not is_unknown(flavor_name):
                fwhere = f"{where}.flavors[{f}] ({flavor_name})"
                if flavor_name in seen_flavors:
                    problem(
                        f"flavor {flavor_name!r} appears in resourceGroups"
                        f"[{seen_flavors[flavor_name]}] and {where}",
                        "use each flavor in only one resource group",
                    )
                else:
                    seen_flavors[flavor_name] = g
            quotas = child(flavor, "resources")
            if is_unknown(quotas):
                continue
            quotas = _list(quotas)
            combinations += len(quotas)
            quota_names = [child(q, "name") for q in quotas]
            if not any(is_unknown(n) for n in quota_names) and quota_names != covered:
                problem(
                    f"{fwhere}.resources lists [{_names(quota_names)}] but coveredResources is "
                    f"[{_names(covered)}]",
                    "give each flavor exactly one quota per covered resource, in the order of "
                    "coveredResources",
                )
            for r, quota in enumerate(quotas):
                rname = child(quota, "name")
                rwhere = f"{fwhere}.resources[{r}]" + (
                    f" ({rname})" if isinstance(rname, str) else ""
                )
                nominal_raw = child(quota, "nominalQuota")
                if nominal_raw is None:
                    problem(f"{rwhere} has no nominalQuota", "set nominalQuota (it is required)")
                    nominal = None
                else:
                    nominal, bad = _quantity_problem(nominal_raw, f"{rwhere}.nominalQuota")
                    if bad:
                        problem(bad, _QUANTITY_FIX)
                for limit_field in ("borrowingLimit", "lendingLimit"):
                    raw = child(quota, limit_field)
                    if raw is None:
                        continue
                    limit, bad = _quantity_problem(raw, f"{rwhere}.{limit_field}")
                    if bad:
                        problem(bad, _QUANTITY_FIX)
                    if not has_cohort:
                        problem(
                            f"{rwhere}.{limit_field} is set but the queue has no cohortName",
                            f"set spec.cohortName, or remove {limit_field}",
                        )
                    if (
                        limit_field == "lendingLimit"
                        and limit is not None
                        and nominal is not None
                        and limit > nominal
                    ):
                        problem(
                            f"{rwhere}.lendingLimit {raw} is above nominalQuota {nominal_raw}",
                            "lower lendingLimit to at most nominalQuota",
                        )
        if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
            problem(
                f"{where} has {combinations} flavor-resource combinations",
                f"keep at most {MAX_FLAVOR_RESOURCE_COMBINATIONS} per resource group",
            )
    if total_flavors > MAX_TOTAL_FLAVORS:
        problem(
            f"it has {total_flavors} flavors in all", f"keep at most {MAX_TOTAL_FLAVORS} flavors"
        )
    if total_covered > MAX_TOTAL_COVERED:
        problem(
            f"it covers {total_covered} resources in all",
            f"cover at most {MAX_TOTAL_COVERED} resources",
        )
    reclaim = child(spec, "preemption", "reclaimWithinCohort")
    borrow = child(spec, "preemption", "borrowWithinCohort", "policy")
    if reclaim == "Never" and isinstance(borrow, str) and borrow != "Never":
        problem(
            f"preemption.reclaimWithinCohort is Never but borrowWithinCohort.policy is {borrow}",
            "set borrowWithinCohort.policy to Never, or allow reclaimWithinCohort",
        )
    return [_violation(WEBHOOK_VALID, resource, text, fix) for text, fix in problems]


# --- Rules 3 and 4 (stack) ------------------------------------------------------------------


def _names_of_kind(resources: Sequence[Resource], kind: str) -> tuple[set[str], bool]:
    """metadata.name of every Kueue object of a kind, and whether any name is unknown."""
    names: set[str] = set()
    any_unknown = False
    for resource in resources:
        if kueue_kind(resource) != kind:
            continue
        name = resource.k8s_name
        if is_unknown(name):
            any_unknown = True
        elif isinstance(name, str) and name:
            names.add(name)
    return names, any_unknown


def clusterqueue_flavors_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every flavor a ClusterQueue names is a ResourceFlavor of the stack or pre-existing."""
    declared, unknown_names = _names_of_kind(resources, "ResourceFlavor")
    if unknown_names:
        return []  # a flavor whose name is not known yet may be the one referenced
    known = declared | set(_config_list(config, "preExistingFlavors"))
    violations: list[Violation] = []
    for resource in resources:
        if kueue_kind(resource) != "ClusterQueue":
            continue
        missing: list[str] = []
        for group in _list(child(resource.props, "spec", "resourceGroups")):
            for flavor in _list(child(group, "flavors")):
                name = _known_str(child(flavor, "name"))
                if name is not None and name not in known and name not in missing:
                    missing.append(name)
        if missing:
            violations.append(
                _violation(
                    FLAVORS_EXIST,
                    resource,
                    f"it names ResourceFlavor(s) {_names(missing)} that neither this stack "
                    f"declares nor the pack config lists as pre-existing (declared: "
                    f"{_names(sorted(declared))}); Kueue would mark the queue inactive with "
                    "FlavorNotFound and admit nothing",
                    "declare the ResourceFlavor in the stack, fix the flavor name, or add it to "
                    f"{FLAVORS_EXIST}.preExistingFlavors in the policy config",
                )
            )
    return violations


def localqueue_clusterqueue_exists(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every LocalQueue points at a ClusterQueue of the stack or a pre-existing one."""
    declared, unknown_names = _names_of_kind(resources, "ClusterQueue")
    if unknown_names:
        return []
    known = declared | set(_config_list(config, "preExistingClusterQueues"))
    violations: list[Violation] = []
    for resource in resources:
        if kueue_kind(resource) != "LocalQueue":
            continue
        target = child(resource.props, "spec", "clusterQueue")
        if is_unknown(target):
            continue
        if not _known_str(target):
            violations.append(
                _violation(
                    CLUSTERQUEUE_EXISTS,
                    resource,
                    "spec.clusterQueue is not set, so jobs sent to it are never admitted",
                    "set spec.clusterQueue to the name of a ClusterQueue",
                )
            )
        elif target not in known:
            violations.append(
                _violation(
                    CLUSTERQUEUE_EXISTS,
                    resource,
                    f'spec.clusterQueue is "{target}", a ClusterQueue that neither this stack '
                    f"declares nor the pack config lists as pre-existing (declared: "
                    f"{_names(sorted(declared))}); jobs sent to it would wait forever",
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
        _violation(
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
        _violation(
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


def _capacity_from_config(
    config: Mapping[str, Any],
) -> tuple[dict[tuple[str, str], tuple[Fraction, str]], list[str]]:
    capacity: dict[tuple[str, str], tuple[Fraction, str]] = {}
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


def _capacity_from_flavors(
    resources: Sequence[Resource],
) -> tuple[dict[tuple[str, str], tuple[Fraction, str]], list[tuple[Resource, str]]]:
    """Capacity the program declared on ResourceFlavors (annotation CAPACITY_ANNOTATION, JSON)."""
    capacity: dict[tuple[str, str], tuple[Fraction, str]] = {}
    problems: list[tuple[Resource, str]] = []
    for resource in resources:
        if kueue_kind(resource) != "ResourceFlavor":
            continue
        flavor = _known_str(resource.k8s_name)
        raw = child(resource.props, "metadata", "annotations", CAPACITY_ANNOTATION)
        if flavor is None or not isinstance(raw, str):
            continue
        try:
            parsed = json.loads(raw)
        except ValueError as error:
            problems.append((resource, f"annotation {CAPACITY_ANNOTATION} is not JSON: {error}"))
            continue
        if not isinstance(parsed, dict):
            problems.append((resource, f"annotation {CAPACITY_ANNOTATION} is not a JSON object"))
            continue
        for resource_name, value in parsed.items():
            try:
                capacity[(flavor, str(resource_name))] = (
                    parse_quantity(value),
                    f"ResourceFlavor {flavor}'s {CAPACITY_ANNOTATION} annotation",
                )
            except QuantityError as error:
                problems.append((resource, f"{CAPACITY_ANNOTATION} {resource_name}: {error}"))
    return capacity, problems


def quota_within_capacity(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Per flavor and resource, the nominal quotas of all queues fit the hardware behind it."""
    capacity, flavor_problems = _capacity_from_flavors(resources)
    configured, config_problems = _capacity_from_config(config)
    capacity.update(configured)  # the policy config wins over what the program declares
    violations = [
        Violation(None, f"[{QUOTA_WITHIN_CAPACITY}] policy config: {text}. Fix: correct it.")
        for text in config_problems
    ]
    violations += [
        _violation(QUOTA_WITHIN_CAPACITY, r, text, "write a JSON object of resource: quantity")
        for r, text in flavor_problems
    ]
    if not capacity:
        return violations
    totals: dict[tuple[str, str], Fraction] = {}
    holders: dict[tuple[str, str], list[str]] = {}
    undecidable: set[tuple[str, str]] = set()
    for resource in resources:
        if kueue_kind(resource) not in ("ClusterQueue", "Cohort"):
            continue
        owner = f"{resource.kind} {_known_str(resource.k8s_name) or resource.name}"
        for group in _list(child(resource.props, "spec", "resourceGroups")):
            for flavor in _list(child(group, "flavors")):
                flavor_name = child(flavor, "name")
                quotas = child(flavor, "resources")
                if is_unknown(flavor_name) or is_unknown(quotas):
                    undecidable.update(
                        key for key in capacity if is_unknown(flavor_name) or key[0] == flavor_name
                    )
                    continue
                for quota in _list(quotas):
                    key = (str(flavor_name), str(child(quota, "name")))
                    if key not in capacity:
                        continue
                    try:
                        value = parse_quantity(child(quota, "nominalQuota"))
                    except QuantityError:
                        undecidable.add(key)  # unknown, or invalid (the webhook rule reports it)
                        continue
                    totals[key] = totals.get(key, Fraction(0)) + value
                    holders.setdefault(key, []).append(f"{owner} {format_quantity(value)}")
    for key, total in sorted(totals.items()):
        limit, source = capacity[key]
        if key in undecidable or total <= limit:
            continue
        flavor, resource_name = key
        violations.append(
            Violation(
                None,
                f"[{QUOTA_WITHIN_CAPACITY}] flavor {flavor}, resource {resource_name}: nominal "
                f"quotas add up to {format_quantity(total)} ({'; '.join(holders[key])}) but the "
                f"capacity is {format_quantity(limit)} (from {source}); admitted jobs would sit "
                "Pending for want of nodes. Fix: lower the nominalQuota of these queues, or "
                "raise the capacity if the hardware grew.",
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
    shared = _config_str(config, "sharedStorageClass", DEFAULT_SHARED_STORAGE_CLASS)
    if is_unknown(spec) or storage_class != shared:
        return []
    violations: list[Violation] = []
    modes = child(spec, "accessModes")
    modes_known = not is_unknown(modes) and not any(is_unknown(m) for m in _list(modes))
    if modes_known and "ReadWriteMany" not in _list(modes):
        violations.append(
            _violation(
                SHARED_PVC,
                resource,
                f"accessModes are [{_names(_list(modes))}] on shared storage class {shared}, "
                "so pods of a job on different nodes cannot all mount it",
                "set accessModes to [ReadWriteMany]",
            )
        )
    volume = child(spec, "volumeName")
    if not is_unknown(volume) and not volume:
        violations.append(
            _violation(
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
        name == _config_str(config, "deploymentName", DEFAULT_KUEUE_DEPLOYMENT)
        and namespace == _config_str(config, "namespace", DEFAULT_KUEUE_NAMESPACE)
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
    for container in _list(containers):
        image = child(container, "image")
        cname = child(container, "name")
        if not isinstance(image, str):
            continue
        tag = image_tag(image)
        if tag is None or not _PINNED_TAG.match(tag):
            shown = "no tag" if tag is None else f"tag {tag!r}"
            violations.append(
                _violation(
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
                _violation(
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
        _violation(
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
    if isinstance(namespace, str) and namespace in _config_list(config, "exemptNamespaces"):
        return []
    violations: list[Violation] = []
    queue = child(resource.props, "metadata", "labels", QUEUE_NAME_LABEL)
    if not is_unknown(queue) and not queue:
        violations.append(
            _violation(
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
            _violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"spec.suspend is {suspend if suspend is not None else 'not set'}, so its pods "
                "start before Kueue admits it",
                "set spec.suspend: true (Kueue flips it to false on admission)",
            )
        )
    return violations


ResourceRule = Callable[[Resource, Mapping[str, Any]], list[Violation]]
StackRule = Callable[[Sequence[Resource], Mapping[str, Any]], list[Violation]]
