"""Kueue's rules for the objects this project declares, as pure functions over plain objects.

One implementation for every caller: the stack config check runs them on the objects the
program is about to register (gpu_queues/config/render.py), the policy pack on what the engine hands
it, and the quota diff uses the same capacity sum. An object is a dict as the API has it
({"apiVersion", "kind", "metadata", "spec"}). Each validator returns FieldErrors (a path inside
the object, what is wrong, how to fix it, and a code naming the rule), in the manner of
Kueue's webhook validators (pkg/webhooks: field.ErrorList).

Sources, Kueue v0.18.3: the v1beta2 CRDs (MaxItems, CEL rules, defaults), its ClusterQueue
and ResourceFlavor webhooks, and what its controllers refuse in MultiKueue objects (an
AdmissionCheck's parameters, a MultiKueueConfig's clusters, a MultiKueueCluster's kubeconfig
source; pkg/controller/admissionchecks/multikueue and pkg/cache/scheduler/clusterqueue.go:
one MultiKueue check per ClusterQueue, never per flavor). The project adds rules Kueue does
not have, each marked PROJECT: cpu/memory coverage, whole numbers of extended resources,
flavors, admission checks and MultiKueue references that exist (Kueue would only mark the
queue or check inactive), quotas within the hardware (that last one, the capacity sum, is in
gpu_queues/kueue/capacity.py).

A value may be UNKNOWN (only known after `pulumi up`); a check that needs it is skipped. A value
of the wrong type is reported where Kueue would refuse it; nothing here raises on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from gpu_queues.kueue.fields import (
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
    is_qualified_name,
    whole_number_problem,
)
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.values import as_list

__all__ = [
    "MULTIKUEUE_CONTROLLER",
    "UNKNOWN",
    "FieldError",
    "Unknown",
    "admission_check_errors",
    "admission_check_names",
    "child",
    "cluster_queue_errors",
    "format_path",
    "fractional_quotas",
    "is_unknown",
    "missing_kubeconfig_secret",
    "missing_multikueue_clusters",
    "missing_multikueue_config",
    "multikueue_check_placement",
    "multikueue_cluster_errors",
    "multikueue_config_errors",
    "resource_flavor_errors",
    "uncovered_resources",
    "undeclared_admission_checks",
    "undeclared_flavors",
]

Path = tuple[str | int, ...]


class Unknown:
    """A value that is only known after the update (e.g. another resource's output)."""

    _instance: Unknown | None = None

    def __new__(cls) -> Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = Unknown()


def is_unknown(value: object) -> bool:
    return value is UNKNOWN


def child(value: Any, *path: str) -> Any:
    """Follow keys through plain data: None where a key is missing, UNKNOWN where unknown."""
    for key in path:
        if is_unknown(value):
            return UNKNOWN
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


@dataclass(frozen=True)
class FieldError:
    """One rule broken at one place of an object."""

    path: Path
    """Inside the object, e.g. ('spec', 'resourceGroups', 0, 'flavors', 1, 'name')."""
    message: str
    fix: str
    code: str
    """Which rule (the constants below): callers may phrase the fix in their own terms."""

    @property
    def where(self) -> str:
        return format_path(self.path)


def format_path(path: Path) -> str:
    """('spec', 'resourceGroups', 0, 'name') -> 'spec.resourceGroups[0].name'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# Rule codes. Kueue's own rules first, then the project's.
TOO_MANY: Final = "too-many"
LIST_SIZE: Final = "list-size"
NOT_A_LIST: Final = "not-a-list"
RESOURCE_NAME: Final = "resource-name"
COVERED_TWICE: Final = "covered-twice"
FLAVOR_NAME: Final = "flavor-name"
FLAVOR_TWICE: Final = "flavor-twice"
QUOTA_MISSING: Final = "quota-missing"
QUOTA_NOT_COVERED: Final = "quota-not-covered"
QUOTA_TWICE: Final = "quota-twice"
QUOTA_ORDER: Final = "quota-order"
NOMINAL_MISSING: Final = "nominal-missing"
QUANTITY: Final = "quantity"
LIMIT_WITHOUT_COHORT: Final = "limit-without-cohort"
LENDING_ABOVE_NOMINAL: Final = "lending-above-nominal"
ENUM: Final = "enum"
BORROW_NEEDS_RECLAIM: Final = "borrow-needs-reclaim"
FUNGIBILITY_PREFERENCE: Final = "fungibility-preference"
FAIR_SHARING_WEIGHT: Final = "fair-sharing-weight"
LABEL: Final = "label"
TAINT_TWICE: Final = "taint-twice"
TOLERATION: Final = "toleration"
TOPOLOGY_NEEDS_LABEL: Final = "topology-needs-label"
CHECK_NAME: Final = "check-name"
CHECK_TWICE: Final = "check-twice"
CONTROLLER_NAME: Final = "controller-name"
CHECK_PARAMETERS: Final = "check-parameters"
MULTIKUEUE_CHECKS: Final = "multikueue-checks"
CLUSTER_NAME: Final = "cluster-name"
CLUSTER_TWICE: Final = "cluster-twice"
CLUSTER_SOURCE: Final = "cluster-source"
KUBECONFIG_LOCATION: Final = "kubeconfig-location"
NOT_COVERED: Final = "not-covered"  # PROJECT
NOT_WHOLE: Final = "not-whole"  # PROJECT
FLAVOR_UNDECLARED: Final = "flavor-undeclared"  # PROJECT
CHECK_UNDECLARED: Final = "check-undeclared"  # PROJECT
MULTIKUEUE_REFERENCE: Final = "multikueue-reference"  # PROJECT

# PROJECT: what every ClusterQueue must cover (the pack's requiredResources default).
DEFAULT_REQUIRED_RESOURCES: Final = ("cpu", "memory")

# Limits of the ClusterQueue CRD (MaxItems) and webhook (totals), Kueue v0.18.
MAX_RESOURCE_GROUPS: Final = 16
MAX_ITEMS_PER_LIST: Final = 64
MAX_TOTAL_FLAVORS: Final = 256
MAX_TOTAL_COVERED: Final = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS: Final = 512
MAX_FLAVOR_ITEMS: Final = 8  # ResourceFlavor nodeLabels, nodeTaints, tolerations
MAX_ADMISSION_CHECKS: Final = 64  # ClusterQueue admissionChecksStrategy.admissionChecks
MAX_MULTIKUEUE_CLUSTERS: Final = 20  # MultiKueueConfig clusters
MAX_MULTIKUEUE_NAME: Final = 256  # MultiKueueConfig cluster names, kubeConfig location

# Kueue's MultiKueue admission check controller and the one kind its parameters may name.
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
# Kueue v0.19 reads a kubeconfig given by path only from under here (gate
# MultiKueueKubeConfigPathValidation, on by default); earlier versions read any path in
# their pod, which holds no such file unless mounted. A Secret is the portable source.
KUBECONFIG_PATH_PREFIX: Final = "/etc/multikueue/kubeconfigs/"
_PARAMETERS_KIND: Final = re.compile(r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$")

# CRD enums (and defaults, which the API server fills in before any webhook runs).
_ENUMS: Final[tuple[tuple[Path, tuple[str, ...]], ...]] = (
    (("queueingStrategy",), ("BestEffortFIFO", "StrictFIFO")),
    (("stopPolicy",), ("None", "Hold", "HoldAndDrain")),
    (("preemption", "reclaimWithinCohort"), ("Never", "LowerPriority", "Any")),
    (("preemption", "withinClusterQueue"), ("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
    (("preemption", "borrowWithinCohort", "policy"), ("Never", "LowerPriority")),
    (("flavorFungibility", "whenCanBorrow"), ("MayStopSearch", "TryNextFlavor")),
    (("flavorFungibility", "whenCanPreempt"), ("MayStopSearch", "TryNextFlavor")),
    (("flavorFungibility", "preference"), ("BorrowingOverPreemption", "PreemptionOverBorrowing")),
)
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_QUANTITY_FIX: Final = "write a non-negative Kubernetes quantity such as 8, 64 or 512Gi"


def _show(value: Any) -> str:
    """A value as the user wrote it (numbers lose the float the protobuf round trip adds)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _names(values: Iterable[Any]) -> str:
    return ", ".join(_show(v) for v in values) or "none"


def _key(value: Any) -> Any:
    """A value usable as a dict key or set member (a list or dict becomes its repr)."""
    if is_unknown(value) or value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def _quantity(value: Any, name: str, path: Path, errors: list[FieldError]) -> Fraction | None:
    """Parse a quota field; None (and an error unless unknown) when it is not a quantity."""
    if is_unknown(value):
        return None
    try:
        parsed = parse_quantity(value)
    except QuantityError as error:
        errors.append(FieldError(path, f"{name} {error}", _QUANTITY_FIX, QUANTITY))
        return None
    if parsed < 0:
        errors.append(
            FieldError(
                path, f"{name} is {_show(value)}, which is negative", _QUANTITY_FIX, QUANTITY
            )
        )
        return None
    return parsed


def _sized(
    value: Any, path: Path, what: str, low: int, high: int, errors: list[FieldError]
) -> list[Any] | None:
    """The list at `path` when it is one (size errors reported); None when unknown."""
    if is_unknown(value):
        return None
    if value is not None and not isinstance(value, list):
        errors.append(
            FieldError(path, f"{path[-1]} is not a list", f"write a list of {what}", NOT_A_LIST)
        )
        return []
    items = as_list(value)
    if not low <= len(items) <= high:
        errors.append(
            FieldError(
                path,
                f"{path[-1]} has {len(items)} entries",
                f"list between {low} and {high} {what}",
                LIST_SIZE,
            )
        )
    return items


# --- ClusterQueue ------------------------------------------------------------------------


def _has_cohort(spec: Any) -> bool:
    cohort = child(spec, "cohortName")
    if cohort is None:
        cohort = child(spec, "cohort")  # the v1beta1 name of the field
    return is_unknown(cohort) or bool(cohort)


def _quota_list(
    quotas: list[Any], covered: list[Any], path: Path, has_cohort: bool, errors: list[FieldError]
) -> None:
    names = [_key(child(q, "name")) for q in quotas]
    covered = [_key(c) for c in covered]
    if not any(is_unknown(n) for n in [*names, *covered]):
        want = ", ".join(str(c) for c in covered)
        seen: set[Any] = set()
        for r, name in enumerate(names):
            if name is None:
                errors.append(
                    FieldError(
                        (*path, r, "name"),
                        "the quota has no name",
                        "name the covered resource this quota is for",
                        QUOTA_NOT_COVERED,
                    )
                )
                continue
            if name in seen:
                errors.append(
                    FieldError(
                        (*path, r, "name"),
                        f"a second quota for resource {_show(name)!r}",
                        "give each flavor exactly one quota per covered resource",
                        QUOTA_TWICE,
                    )
                )
            elif name not in covered:
                errors.append(
                    FieldError(
                        (*path, r),
                        f"resource {_show(name)!r} is not in coveredResources ({want})",
                        "add it to coveredResources or remove this quota",
                        QUOTA_NOT_COVERED,
                    )
                )
            seen.add(name)
        missing = [c for c in covered if c not in seen]
        for name in missing:
            errors.append(
                FieldError(
                    path,
                    f"no quota for covered resource {name!r}",
                    f"give each flavor exactly one quota per covered resource: {want}",
                    QUOTA_MISSING,
                )
            )
        if not missing and seen <= set(covered) and len(seen) == len(names) and names != covered:
            errors.append(
                FieldError(
                    path,
                    f"resources lists [{_names(names)}] but coveredResources is [{want}]",
                    "list the quotas in the order of coveredResources",
                    QUOTA_ORDER,
                )
            )
    for r, quota in enumerate(quotas):
        rpath: Path = (*path, r)
        if is_unknown(quota):
            continue
        nominal_raw = child(quota, "nominalQuota")
        nominal: Fraction | None = None
        if nominal_raw is None:
            errors.append(
                FieldError(
                    (*rpath, "nominalQuota"),
                    "the quota has no nominalQuota",
                    "set nominalQuota (it is required)",
                    NOMINAL_MISSING,
                )
            )
        else:
            nominal = _quantity(nominal_raw, "nominalQuota", (*rpath, "nominalQuota"), errors)
        for limit_field in ("borrowingLimit", "lendingLimit"):
            raw = child(quota, limit_field)
            if raw is None:
                continue
            lpath: Path = (*rpath, limit_field)
            limit = _quantity(raw, limit_field, lpath, errors)
            if not has_cohort:
                errors.append(
                    FieldError(
                        lpath,
                        f"{limit_field} needs a cohort to borrow from or lend to, and the queue "
                        "has no cohortName",
                        f"set spec.cohortName, or remove {limit_field}",
                        LIMIT_WITHOUT_COHORT,
                    )
                )
            if limit_field == "lendingLimit" and None not in (limit, nominal):
                assert limit is not None and nominal is not None
                if limit > nominal:
                    errors.append(
                        FieldError(
                            lpath,
                            f"lendingLimit {_show(raw)} is above nominalQuota {_show(nominal_raw)}",
                            "lower lendingLimit to at most nominalQuota",
                            LENDING_ABOVE_NOMINAL,
                        )
                    )


def _resource_groups(groups: Any, has_cohort: bool, errors: list[FieldError]) -> None:
    path: Path = ("spec", "resourceGroups")
    if is_unknown(groups):
        return
    if groups is not None and not isinstance(groups, list):
        errors.append(FieldError(path, "resourceGroups is not a list", "write a list", NOT_A_LIST))
    items = as_list(groups)
    if len(items) > MAX_RESOURCE_GROUPS:
        errors.append(
            FieldError(
                path,
                f"it has {len(items)} resourceGroups, more than {MAX_RESOURCE_GROUPS}",
                f"merge resource groups until there are at most {MAX_RESOURCE_GROUPS}",
                TOO_MANY,
            )
        )
    covered_at: dict[str, int] = {}
    flavor_at: dict[str, int] = {}
    total_flavors = total_covered = 0
    for g, group in enumerate(items):
        gpath: Path = (*path, g)
        covered = _sized(
            child(group, "coveredResources"),
            (*gpath, "coveredResources"),
            "resources",
            1,
            MAX_ITEMS_PER_LIST,
            errors,
        )
        flavors = _sized(
            child(group, "flavors"), (*gpath, "flavors"), "flavors", 1, MAX_ITEMS_PER_LIST, errors
        )
        if covered is None or flavors is None:
            continue
        total_covered += len(covered)
        total_flavors += len(flavors)
        for c, name in enumerate(covered):
            cpath: Path = (*gpath, "coveredResources", c)
            if is_unknown(name):
                continue
            if not isinstance(name, str) or not is_qualified_name(name):
                errors.append(
                    FieldError(
                        cpath,
                        f"{_show(name)!r} is not a resource name",
                        "write a resource name such as cpu, memory or nvidia.com/gpu",
                        RESOURCE_NAME,
                    )
                )
            elif name in covered_at:
                where = (
                    "this resource group"
                    if covered_at[name] == g
                    else (f"resourceGroups[{covered_at[name]}]")
                )
                errors.append(
                    FieldError(
                        cpath,
                        f"resource {name!r} is already covered by {where}",
                        "cover each resource in only one resource group, once",
                        COVERED_TWICE,
                    )
                )
            else:
                covered_at[name] = g
        combinations = 0
        for f, flavor in enumerate(flavors):
            fpath: Path = (*gpath, "flavors", f)
            name = child(flavor, "name")
            if name is None or name == "":
                errors.append(
                    FieldError(
                        (*fpath, "name"),
                        "the flavor has no name",
                        "name the ResourceFlavor this quota is for",
                        FLAVOR_NAME,
                    )
                )
            elif not is_unknown(name):
                if not isinstance(name, str) or not is_dns_subdomain(name):
                    errors.append(
                        FieldError(
                            (*fpath, "name"),
                            f"{_show(name)!r} is not a valid ResourceFlavor name",
                            "use lowercase letters, digits, '-' and '.'",
                            FLAVOR_NAME,
                        )
                    )
                elif name in flavor_at:
                    where = (
                        "this resource group"
                        if flavor_at[name] == g
                        else (f"resourceGroups[{flavor_at[name]}]")
                    )
                    errors.append(
                        FieldError(
                            (*fpath, "name"),
                            f"flavor {name!r} already appears in {where}",
                            "use each flavor in only one resource group, once",
                            FLAVOR_TWICE,
                        )
                    )
                else:
                    flavor_at[name] = g
            quotas = _sized(
                child(flavor, "resources"),
                (*fpath, "resources"),
                "quotas",
                1,
                MAX_ITEMS_PER_LIST,
                errors,
            )
            if quotas is None:
                continue
            combinations += len(quotas)
            _quota_list(quotas, covered, (*fpath, "resources"), has_cohort, errors)
        if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
            errors.append(
                FieldError(
                    gpath,
                    f"the group has {combinations} flavor-resource combinations",
                    f"keep at most {MAX_FLAVOR_RESOURCE_COMBINATIONS} per resource group",
                    TOO_MANY,
                )
            )
    if total_flavors > MAX_TOTAL_FLAVORS:
        errors.append(
            FieldError(
                path,
                f"it has {total_flavors} flavors in all",
                f"keep at most {MAX_TOTAL_FLAVORS} flavors",
                TOO_MANY,
            )
        )
    if total_covered > MAX_TOTAL_COVERED:
        errors.append(
            FieldError(
                path,
                f"it covers {total_covered} resources in all",
                f"cover at most {MAX_TOTAL_COVERED} resources",
                TOO_MANY,
            )
        )


def _enums(spec: Any, errors: list[FieldError]) -> None:
    for path, allowed in _ENUMS:
        value = child(spec, *(str(p) for p in path))
        if value is None or is_unknown(value) or value in allowed:
            continue
        errors.append(
            FieldError(
                ("spec", *path),
                f"{path[-1]} is {_show(value)!r}",
                f"use one of {', '.join(allowed)}",
                ENUM,
            )
        )


def _preemption(spec: Any, errors: list[FieldError]) -> None:
    preemption = child(spec, "preemption")
    reclaim = child(preemption, "reclaimWithinCohort")
    borrow = child(preemption, "borrowWithinCohort", "policy")
    if is_unknown(reclaim) or is_unknown(borrow) or borrow in (None, "Never"):
        return
    # The CRD defaults reclaimWithinCohort to Never before the webhook (and its CEL rule) runs.
    if reclaim not in (None, "Never"):
        return
    shown = "Never" if reclaim == "Never" else "not set (Kueue defaults it to Never)"
    errors.append(
        FieldError(
            ("spec", "preemption", "borrowWithinCohort", "policy"),
            f"borrowWithinCohort.policy is {_show(borrow)} but reclaimWithinCohort is {shown}; "
            "Kueue refuses preempting to borrow without reclaiming",
            "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy "
            "to Never",
            BORROW_NEEDS_RECLAIM,
        )
    )


def _fungibility(spec: Any, errors: list[FieldError]) -> None:
    fungibility = child(spec, "flavorFungibility")
    preference = child(fungibility, "preference")
    if preference is None or is_unknown(preference):
        return
    # CRD defaults: whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor.
    borrow = child(fungibility, "whenCanBorrow") or "MayStopSearch"
    preempt = child(fungibility, "whenCanPreempt") or "TryNextFlavor"
    if is_unknown(borrow) or is_unknown(preempt):
        return
    if borrow != "TryNextFlavor" or preempt != "TryNextFlavor":
        errors.append(
            FieldError(
                ("spec", "flavorFungibility", "preference"),
                f"preference {_show(preference)} needs whenCanBorrow and whenCanPreempt both "
                f"TryNextFlavor (they are {_show(borrow)} and {_show(preempt)})",
                "set both to TryNextFlavor, or remove preference",
                FUNGIBILITY_PREFERENCE,
            )
        )


def _fair_sharing(spec: Any, errors: list[FieldError]) -> None:
    raw = child(spec, "fairSharing", "weight")
    if raw is None or is_unknown(raw):
        return
    path: Path = ("spec", "fairSharing", "weight")
    weight = _quantity(raw, "weight", path, errors)
    if weight is not None and 0 < weight <= Fraction(1, 10**9):
        errors.append(
            FieldError(
                path,
                f"weight {_show(raw)} is above zero but at most 1n, which Kueue cannot tell "
                "from zero",
                "use 0, or a weight above 1n",
                FAIR_SHARING_WEIGHT,
            )
        )


def _admission_checks_strategy(spec: Any, errors: list[FieldError]) -> None:
    """admissionChecksStrategy: 1-64 checks, a map keyed by name, onFlavors a set of names."""
    strategy = child(spec, "admissionChecksStrategy")
    if strategy is None or is_unknown(strategy):
        return
    path: Path = ("spec", "admissionChecksStrategy", "admissionChecks")
    checks = _sized(
        child(strategy, "admissionChecks"),
        path,
        "admission checks",
        1,
        MAX_ADMISSION_CHECKS,
        errors,
    )
    seen: dict[Any, int] = {}
    for i, check in enumerate(checks or []):
        name = _key(child(check, "name"))
        if is_unknown(name):
            continue
        if not isinstance(name, str) or not name:
            errors.append(
                FieldError(
                    (*path, i, "name"),
                    "the admission check has no name",
                    "name the AdmissionCheck",
                    CHECK_NAME,
                )
            )
        elif name in seen:
            errors.append(
                FieldError(
                    (*path, i, "name"),
                    f"admission check {name!r} is already admissionChecks[{seen[name]}]",
                    "list each admission check once",
                    CHECK_TWICE,
                )
            )
        else:
            seen[name] = i
        flavors = _sized(
            child(check, "onFlavors"),
            (*path, i, "onFlavors"),
            "flavors",
            0,
            MAX_ITEMS_PER_LIST,
            errors,
        )
        names = [_key(f) for f in flavors or []]
        if any(names.count(f) > 1 for f in names if not is_unknown(f)):
            errors.append(
                FieldError(
                    (*path, i, "onFlavors"),
                    "onFlavors names a flavor twice",
                    "list each flavor once",
                    FLAVOR_TWICE,
                )
            )


def cluster_queue_errors(cq: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue's CRD validation and webhook refuse in a ClusterQueue (ValidateClusterQueue)."""
    spec = child(cq, "spec")
    if is_unknown(spec):
        return []
    errors: list[FieldError] = []
    _resource_groups(child(spec, "resourceGroups"), _has_cohort(spec), errors)
    _enums(spec, errors)
    _preemption(spec, errors)
    _fungibility(spec, errors)
    _fair_sharing(spec, errors)
    _admission_checks_strategy(spec, errors)
    return errors


def _quotas(obj: Any) -> Iterable[tuple[Path, Any, Any]]:
    """(path of the flavor quota, flavor name, quota) for every quota whose list is known."""
    for g, group in enumerate(as_list(child(obj, "spec", "resourceGroups"))):
        for f, flavor in enumerate(as_list(child(group, "flavors"))):
            for r, quota in enumerate(as_list(child(flavor, "resources"))):
                yield (
                    ("spec", "resourceGroups", g, "flavors", f, "resources", r),
                    child(flavor, "name"),
                    quota,
                )


def uncovered_resources(cq: Mapping[str, Any], required: Sequence[str]) -> list[FieldError]:
    """PROJECT: the queue covers every resource (almost) every pod requests, cpu and memory.
    Kueue admits a job only when the queue covers every resource its pods request."""
    groups = child(cq, "spec", "resourceGroups")
    if is_unknown(groups):
        return []
    covered: list[str] = []
    for group in as_list(groups):
        resources = child(group, "coveredResources")
        if is_unknown(resources) or any(is_unknown(r) for r in as_list(resources)):
            return []
        covered += [str(r) for r in as_list(resources)]
    missing = [name for name in required if name not in covered]
    if not missing:
        return []
    return [
        FieldError(
            ("spec", "resourceGroups"),
            f"coveredResources [{_names(covered)}] do not include {_names(missing)}, so a job "
            f"whose pods also request {_names(missing)} (almost every job) is never admitted",
            f"add {', '.join(repr(m) for m in missing)} to a resourceGroup's coveredResources "
            "and give every flavor of that group a nominalQuota for it",
            NOT_COVERED,
        )
    ]


def fractional_quotas(cq: Mapping[str, Any]) -> list[FieldError]:
    """PROJECT: quotas of extended resources (nvidia.com/gpu) are whole numbers: no pod can
    request half a GPU, so 0.5 of one is quota nothing can use."""
    errors: list[FieldError] = []
    for path, _, quota in _quotas(cq):
        name = child(quota, "name")
        if not isinstance(name, str):
            continue
        for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
            problem = whole_number_problem(name, child(quota, key))
            if problem:
                errors.append(
                    FieldError(
                        (*path, key),
                        f"{key}: {problem}",
                        f"write a whole number of {name}",
                        NOT_WHOLE,
                    )
                )
    return errors


def undeclared_flavors(cq: Mapping[str, Any], declared: Collection[str]) -> list[FieldError]:
    """PROJECT: every flavor the queue names exists; Kueue would otherwise mark the queue
    inactive (FlavorNotFound) and admit nothing."""
    errors: list[FieldError] = []
    for g, group in enumerate(as_list(child(cq, "spec", "resourceGroups"))):
        for f, flavor in enumerate(as_list(child(group, "flavors"))):
            name = child(flavor, "name")
            if isinstance(name, str) and name and name not in declared:
                errors.append(
                    FieldError(
                        ("spec", "resourceGroups", g, "flavors", f, "name"),
                        f"flavor {name!r} is not declared (declared: "
                        f"{_names(sorted(declared))}), so Kueue would mark the queue inactive "
                        "(FlavorNotFound) and admit nothing",
                        "declare the ResourceFlavor, or fix the flavor name",
                        FLAVOR_UNDECLARED,
                    )
                )
    return errors


# --- ResourceFlavor ------------------------------------------------------------------------


def resource_flavor_errors(rf: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue's CRD validation and webhook refuse in a ResourceFlavor
    (ValidateResourceFlavor and the CEL rules on nodeTaints and tolerations)."""
    spec = child(rf, "spec")
    if spec is None or is_unknown(spec):
        return []
    errors: list[FieldError] = []
    labels = child(spec, "nodeLabels")
    if isinstance(labels, Mapping):
        if len(labels) > MAX_FLAVOR_ITEMS:
            errors.append(
                FieldError(
                    ("spec", "nodeLabels"),
                    f"nodeLabels has {len(labels)} entries",
                    f"keep at most {MAX_FLAVOR_ITEMS}",
                    TOO_MANY,
                )
            )
        for key, value in labels.items():
            if not is_qualified_name(str(key)):
                errors.append(
                    FieldError(
                        ("spec", "nodeLabels", str(key)),
                        f"{key!r} is not a valid label key",
                        "write [prefix/]name",
                        LABEL,
                    )
                )
            if isinstance(value, str) and not is_label_value(value):
                errors.append(
                    FieldError(
                        ("spec", "nodeLabels", str(key)),
                        f"{value!r} is not a valid label value",
                        "at most 63 letters, digits, '-', '_' or '.'",
                        LABEL,
                    )
                )
    taints = _sized(
        child(spec, "nodeTaints"), ("spec", "nodeTaints"), "taints", 0, MAX_FLAVOR_ITEMS, errors
    )
    seen: dict[tuple[Any, Any], int] = {}
    for t, taint in enumerate(taints or []):
        key, effect = _key(child(taint, "key")), _key(child(taint, "effect"))
        if is_unknown(key) or is_unknown(effect):
            continue
        if effect not in _EFFECTS:
            errors.append(
                FieldError(
                    ("spec", "nodeTaints", t, "effect"),
                    f"taint effect is {_show(effect)!r}",
                    f"use one of {', '.join(_EFFECTS)}",
                    ENUM,
                )
            )
        if (key, effect) in seen:
            errors.append(
                FieldError(
                    ("spec", "nodeTaints", t),
                    f"taint {_show(key)}:{_show(effect)} is already nodeTaints"
                    f"[{seen[key, effect]}]",
                    "keep one taint per key and effect",
                    TAINT_TWICE,
                )
            )
        else:
            seen[key, effect] = t
    tolerations = _sized(
        child(spec, "tolerations"),
        ("spec", "tolerations"),
        "tolerations",
        0,
        MAX_FLAVOR_ITEMS,
        errors,
    )
    for t, toleration in enumerate(tolerations or []):
        _toleration(toleration, ("spec", "tolerations", t), errors)
    topology = child(spec, "topologyName")
    if topology and not is_unknown(topology) and not is_unknown(labels) and not labels:
        errors.append(
            FieldError(
                ("spec", "topologyName"),
                "topologyName is set but the flavor has no nodeLabels",
                "add at least one nodeLabel",
                TOPOLOGY_NEEDS_LABEL,
            )
        )
    return errors


def _toleration(toleration: Any, path: Path, errors: list[FieldError]) -> None:
    if is_unknown(toleration) or not isinstance(toleration, Mapping):
        return
    key = toleration.get("key")
    operator = toleration.get("operator")
    if any(is_unknown(v) for v in toleration.values()):
        return

    def add(message: str, fix: str, where: str) -> None:
        errors.append(FieldError((*path, where), message, fix, TOLERATION))

    if operator not in (None, "Equal", "Exists"):
        add(f"operator is {_show(operator)!r}", "use Equal (the default) or Exists", "operator")
    if not key and operator != "Exists":
        add(
            "a toleration without a key matches every taint, which needs operator Exists",
            "set operator: Exists, or give the key",
            "operator",
        )
    if operator == "Exists" and toleration.get("value") not in (None, ""):
        add(
            "a value is set but operator is Exists, which matches any value",
            "remove the value, or use operator Equal",
            "value",
        )
    effect = toleration.get("effect")
    if effect not in (None, "", *_EFFECTS):
        add(f"effect is {_show(effect)!r}", f"use one of {', '.join(_EFFECTS)}", "effect")
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        add(
            "tolerationSeconds is set but effect is not NoExecute",
            "set effect: NoExecute, or remove tolerationSeconds",
            "tolerationSeconds",
        )


# --- admission checks and MultiKueue ---------------------------------------------------------


def _checks(cq: Any) -> Iterable[tuple[Path, Any, Any]]:
    """(path, name, rule) of every admission check a ClusterQueue lists."""
    path: Path = ("spec", "admissionChecksStrategy", "admissionChecks")
    checks = child(cq, *(str(p) for p in path))
    for i, check in enumerate(as_list(checks)):
        yield (*path, i), child(check, "name"), check


def admission_check_names(cq: Mapping[str, Any]) -> list[str]:
    """The names of the admission checks a ClusterQueue lists (unknown ones left out)."""
    return [name for _, name, _ in _checks(cq) if isinstance(name, str) and name]


def undeclared_admission_checks(
    cq: Mapping[str, Any], declared: Collection[str]
) -> list[FieldError]:
    """PROJECT: every admission check a ClusterQueue names exists; Kueue would otherwise mark
    the queue inactive (AdmissionCheckNotFound) and admit nothing."""
    return [
        FieldError(
            (*path, "name"),
            f"admission check {name!r} is not declared (declared: {_names(sorted(declared))}), "
            "so Kueue would mark the queue inactive (AdmissionCheckNotFound) and admit nothing",
            "declare the AdmissionCheck, or fix the name",
            CHECK_UNDECLARED,
        )
        for path, name, _ in _checks(cq)
        if isinstance(name, str) and name and name not in declared
    ]


def multikueue_check_placement(
    cq: Mapping[str, Any], multikueue_checks: Collection[str]
) -> list[FieldError]:
    """Kueue makes a ClusterQueue inactive with more than one MultiKueue admission check
    (MultipleMultiKueueAdmissionChecks) or with one limited to some flavors
    (MultiKueueAdmissionCheckAppliedPerFlavor). `multikueue_checks`: the AdmissionChecks whose
    controllerName is kueue.x-k8s.io/multikueue."""
    errors: list[FieldError] = []
    found = [(p, n, c) for p, n, c in _checks(cq) if n in multikueue_checks]
    if len(found) > 1:
        errors.append(
            FieldError(
                ("spec", "admissionChecksStrategy", "admissionChecks"),
                f"it lists {len(found)} MultiKueue admission checks "
                f"({_names(n for _, n, _ in found)}); Kueue allows one and would mark the queue "
                "inactive",
                "keep one MultiKueue admission check; put every worker in its MultiKueueConfig",
                MULTIKUEUE_CHECKS,
            )
        )
    for path, name, check in found:
        flavors = child(check, "onFlavors")
        if is_unknown(flavors) or not as_list(flavors):
            continue
        errors.append(
            FieldError(
                (*path, "onFlavors"),
                f"MultiKueue admission check {name!r} is limited to flavors "
                f"{_names(as_list(flavors))}; Kueue runs MultiKueue for a whole queue only and "
                "would mark it inactive",
                "remove onFlavors from the MultiKueue admission check",
                MULTIKUEUE_CHECKS,
            )
        )
    return errors


def _bounded_name(
    value: Any, path: Path, what: str, high: int, errors: list[FieldError], code: str
) -> None:
    if is_unknown(value):
        return
    if not isinstance(value, str) or not value:
        errors.append(FieldError(path, f"{what} is not set", f"set {what}", code))
    elif len(value) > high:
        errors.append(
            FieldError(
                path, f"{what} has {len(value)} characters", f"keep it to at most {high}", code
            )
        )


def admission_check_errors(ac: Mapping[str, Any]) -> list[FieldError]:
    """What the AdmissionCheck CRD refuses, and what Kueue's MultiKueue controller cannot load
    (BadConfig): a MultiKueue check's parameters must name a kueue.x-k8s.io MultiKueueConfig."""
    spec = child(ac, "spec")
    if is_unknown(spec):
        return []
    errors: list[FieldError] = []
    controller = child(spec, "controllerName")
    _bounded_name(
        controller, ("spec", "controllerName"), "controllerName", 253, errors, CONTROLLER_NAME
    )
    params = child(spec, "parameters")
    if params is not None and not is_unknown(params):
        group, kind, name = (child(params, k) for k in ("apiGroup", "kind", "name"))
        path: Path = ("spec", "parameters")
        if isinstance(group, str) and not is_dns_subdomain(group):
            errors.append(
                FieldError(
                    (*path, "apiGroup"),
                    f"apiGroup {group!r} is not an API group",
                    "write a DNS subdomain",
                    CHECK_PARAMETERS,
                )
            )
        if isinstance(kind, str) and not (len(kind) <= 63 and _PARAMETERS_KIND.match(kind)):
            errors.append(
                FieldError(
                    (*path, "kind"),
                    f"kind {kind!r} is not a kind",
                    "write a kind such as MultiKueueConfig",
                    CHECK_PARAMETERS,
                )
            )
        if isinstance(name, str) and not is_dns_label(name):
            errors.append(
                FieldError(
                    (*path, "name"),
                    f"parameters name {name!r} is not a DNS label of at most 63 characters",
                    "use a shorter name of lowercase letters, digits and '-'",
                    CHECK_PARAMETERS,
                )
            )
        for key, value in (("apiGroup", group), ("kind", kind), ("name", name)):
            if value is None:
                errors.append(
                    FieldError(
                        (*path, key), f"parameters.{key} is not set", "set it", CHECK_PARAMETERS
                    )
                )
    if controller == MULTIKUEUE_CONTROLLER and not is_unknown(params):
        group, kind = child(params, "apiGroup"), child(params, "kind")
        if params is None or (
            not is_unknown(group)
            and not is_unknown(kind)
            and (group, kind) != (KUEUE_GROUP, "MultiKueueConfig")
        ):
            errors.append(
                FieldError(
                    ("spec", "parameters"),
                    "a MultiKueue admission check needs parameters naming a MultiKueueConfig "
                    "(apiGroup kueue.x-k8s.io); without them Kueue keeps it inactive (BadConfig)",
                    "set parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: ...}",
                    CHECK_PARAMETERS,
                )
            )
    return errors


def multikueue_config_errors(mkc: Mapping[str, Any]) -> list[FieldError]:
    """What the MultiKueueConfig CRD refuses: 1-20 clusters, each named once, at most 256
    characters."""
    path: Path = ("spec", "clusters")
    errors: list[FieldError] = []
    clusters = _sized(
        child(mkc, "spec", "clusters"),
        path,
        "MultiKueueCluster names",
        1,
        MAX_MULTIKUEUE_CLUSTERS,
        errors,
    )
    seen: set[Any] = set()
    for i, name in enumerate(clusters or []):
        _bounded_name(
            name, (*path, i), "the cluster name", MAX_MULTIKUEUE_NAME, errors, CLUSTER_NAME
        )
        if isinstance(name, str) and name in seen:
            errors.append(
                FieldError(
                    (*path, i), f"cluster {name!r} is listed twice", "list it once", CLUSTER_TWICE
                )
            )
        seen.add(_key(name))
    quota = child(mkc, "spec", "quotaManagement")
    if quota is not None and not is_unknown(quota) and quota not in ("Manual", "Automated"):
        errors.append(
            FieldError(
                ("spec", "quotaManagement"),
                f"quotaManagement is {_show(quota)!r}",
                "use Manual or Automated",
                ENUM,
            )
        )
    return errors


def multikueue_cluster_errors(cluster: Mapping[str, Any]) -> list[FieldError]:
    """What the MultiKueueCluster CRD refuses (exactly one of kubeConfig and clusterProfileRef;
    location 1-256 characters; locationType Secret or Path), and a Path Kueue v0.19 refuses."""
    source = child(cluster, "spec", "clusterSource")
    if is_unknown(source):
        return []
    path: Path = ("spec", "clusterSource")
    errors: list[FieldError] = []
    kubeconfig, profile = child(source, "kubeConfig"), child(source, "clusterProfileRef")
    if (kubeconfig is None) == (profile is None):
        errors.append(
            FieldError(
                path,
                "clusterSource needs exactly one of kubeConfig and clusterProfileRef",
                "set kubeConfig: {location: <Secret name>, locationType: Secret}",
                CLUSTER_SOURCE,
            )
        )
    if profile is not None and not is_unknown(profile):
        _bounded_name(
            child(profile, "name"),
            (*path, "clusterProfileRef", "name"),
            "clusterProfileRef.name",
            MAX_MULTIKUEUE_NAME,
            errors,
            CLUSTER_SOURCE,
        )
    if kubeconfig is None or is_unknown(kubeconfig):
        return errors
    kpath: Path = (*path, "kubeConfig")
    location = child(kubeconfig, "location")
    kind = child(kubeconfig, "locationType")
    _bounded_name(
        location, (*kpath, "location"), "location", MAX_MULTIKUEUE_NAME, errors, KUBECONFIG_LOCATION
    )
    if kind is not None and not is_unknown(kind) and kind not in ("Secret", "Path"):
        errors.append(
            FieldError(
                (*kpath, "locationType"),
                f"locationType is {_show(kind)!r}",
                "use Secret (the default) or Path",
                ENUM,
            )
        )
    is_text = isinstance(location, str) and bool(location)
    if kind in (None, "Secret") and is_text and not is_dns_subdomain(str(location)):
        errors.append(
            FieldError(
                (*kpath, "location"),
                f"location {location!r} is not a Secret name",
                "name a Secret in Kueue's namespace",
                KUBECONFIG_LOCATION,
            )
        )
    if kind == "Path" and is_text and not _under_kubeconfig_dir(str(location)):
        errors.append(
            FieldError(
                (*kpath, "location"),
                f"path {location!r} is outside {KUBECONFIG_PATH_PREFIX}, which Kueue v0.19 "
                "refuses (and only a file mounted into Kueue's pod can be read at all)",
                "keep the kubeconfig in a Secret (locationType: Secret), or mount it under "
                f"{KUBECONFIG_PATH_PREFIX}",
                KUBECONFIG_LOCATION,
            )
        )
    return errors


def _under_kubeconfig_dir(path: str) -> bool:
    return path.startswith(KUBECONFIG_PATH_PREFIX) and ".." not in path.split("/")


def missing_multikueue_config(ac: Mapping[str, Any], configs: Collection[str]) -> list[FieldError]:
    """PROJECT: a MultiKueue admission check's MultiKueueConfig exists; Kueue would otherwise
    keep the check inactive (BadConfig), and every queue using it admits nothing."""
    if child(ac, "spec", "controllerName") != MULTIKUEUE_CONTROLLER:
        return []
    name = child(ac, "spec", "parameters", "name")
    if not isinstance(name, str) or not name or name in configs:
        return []
    return [
        FieldError(
            ("spec", "parameters", "name"),
            f"MultiKueueConfig {name!r} is not declared (declared: {_names(sorted(configs))}), "
            "so Kueue keeps the admission check inactive and its queues admit nothing",
            "declare the MultiKueueConfig, or fix the name",
            MULTIKUEUE_REFERENCE,
        )
    ]


def missing_multikueue_clusters(
    mkc: Mapping[str, Any], clusters: Collection[str]
) -> list[FieldError]:
    """PROJECT: every worker a MultiKueueConfig names is a MultiKueueCluster; Kueue would
    report it missing (and the check inactive when none is left)."""
    return [
        FieldError(
            ("spec", "clusters", i),
            f"MultiKueueCluster {name!r} is not declared (declared: "
            f"{_names(sorted(clusters))}), so no job is ever dispatched to it",
            "declare the MultiKueueCluster, or fix the name",
            MULTIKUEUE_REFERENCE,
        )
        for i, name in enumerate(as_list(child(mkc, "spec", "clusters")))
        if isinstance(name, str) and name and name not in clusters
    ]


def missing_kubeconfig_secret(
    cluster: Mapping[str, Any], secrets: Collection[str]
) -> list[FieldError]:
    """PROJECT: the Secret a MultiKueueCluster reads its kubeconfig from exists in Kueue's
    namespace; Kueue would otherwise never connect to the worker."""
    kubeconfig = child(cluster, "spec", "clusterSource", "kubeConfig")
    location = child(kubeconfig, "location")
    if child(kubeconfig, "locationType") not in (None, "Secret"):
        return []
    if not isinstance(location, str) or not location or location in secrets:
        return []
    return [
        FieldError(
            ("spec", "clusterSource", "kubeConfig", "location"),
            f"Secret {location!r} is not declared in Kueue's namespace (declared: "
            f"{_names(sorted(secrets))}), so Kueue cannot connect to this worker",
            "declare the Secret with the worker's kubeconfig under key kubeconfig",
            MULTIKUEUE_REFERENCE,
        )
    ]
