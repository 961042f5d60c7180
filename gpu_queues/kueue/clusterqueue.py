"""What Kueue refuses in a ClusterQueue (ValidateClusterQueue and the CRD, Kueue v0.18.3): its
resource groups (gpu_queues/kueue/resourcegroups.py), the CRD's enums, preemption, flavor
fungibility, the fair-sharing weight and the admission checks strategy.

Conventions (FieldError, UNKNOWN) in gpu_queues/kueue/errors.py; the project's rules on a
queue's quotas in resourcegroups.py, on its admission checks in admissioncheck.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from gpu_queues.kueue.errors import (
    ENUM,
    FLAVOR_TWICE,
    MAX_ITEMS_PER_LIST,
    FieldError,
    Path,
    child,
    hashable,
    is_unknown,
    quantity,
    shown,
    sized,
)
from gpu_queues.kueue.resourcegroups import check_resource_groups
from gpu_queues.values import as_list

__all__ = ["cluster_queue_errors", "fair_sharing_errors"]

# Rule codes.
BORROW_NEEDS_RECLAIM: Final = "borrow-needs-reclaim"
FUNGIBILITY_PREFERENCE: Final = "fungibility-preference"
FAIR_SHARING_WEIGHT: Final = "fair-sharing-weight"
CHECK_NAME: Final = "check-name"
CHECK_TWICE: Final = "check-twice"
CHECK_FLAVOR: Final = "check-flavor"

MAX_ADMISSION_CHECKS: Final = 64  # admissionChecksStrategy.admissionChecks

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
    (
        ("admissionScope", "admissionMode"),
        ("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"),
    ),
)


def cluster_queue_errors(cq: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue's CRD validation and webhook refuse in a ClusterQueue (ValidateClusterQueue)."""
    spec = child(cq, "spec")
    if is_unknown(spec):
        return []
    errors: list[FieldError] = []
    check_resource_groups(child(spec, "resourceGroups"), _has_cohort(spec), errors)
    _enums(spec, errors)
    _preemption(spec, errors)
    _fungibility(spec, errors)
    errors += fair_sharing_errors(spec)
    _admission_checks_strategy(spec, errors)
    return errors


def _has_cohort(spec: Any) -> bool:
    cohort = child(spec, "cohortName")
    if cohort is None:
        cohort = child(spec, "cohort")  # the v1beta1 name of the field
    return is_unknown(cohort) or bool(cohort)


def _enums(spec: Any, errors: list[FieldError]) -> None:
    for path, allowed in _ENUMS:
        value = child(spec, *(str(p) for p in path))
        if value is None or is_unknown(value) or value in allowed:
            continue
        errors.append(
            FieldError(
                ("spec", *path),
                f"{path[-1]} is {shown(value)!r}",
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
    reclaim_said = "Never" if reclaim == "Never" else "not set (Kueue defaults it to Never)"
    errors.append(
        FieldError(
            ("spec", "preemption", "borrowWithinCohort", "policy"),
            f"borrowWithinCohort.policy is {shown(borrow)} but reclaimWithinCohort is "
            f"{reclaim_said}; Kueue refuses preempting to borrow without reclaiming",
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
                f"preference {shown(preference)} needs whenCanBorrow and whenCanPreempt both "
                f"TryNextFlavor (they are {shown(borrow)} and {shown(preempt)})",
                "set both to TryNextFlavor, or remove preference",
                FUNGIBILITY_PREFERENCE,
            )
        )


def fair_sharing_errors(spec: Any) -> list[FieldError]:
    """spec.fairSharing.weight as Kueue's webhooks refuse it (validateFairSharing, shared by
    ClusterQueues, Cohorts and LocalQueues): a quantity, not negative, and 0 or above 1n
    (a smaller weight collapses to zero in Kueue's arithmetic)."""
    raw = child(spec, "fairSharing", "weight")
    if raw is None or is_unknown(raw):
        return []
    errors: list[FieldError] = []
    path: Path = ("spec", "fairSharing", "weight")
    weight = quantity(raw, "weight", path, errors)
    if weight is not None and 0 < weight <= Fraction(1, 10**9):
        errors.append(
            FieldError(
                path,
                f"weight {shown(raw)} is above zero but at most 1n, which Kueue cannot tell "
                "from zero",
                "use 0, or a weight above 1n",
                FAIR_SHARING_WEIGHT,
            )
        )
    return errors


def _admission_checks_strategy(spec: Any, errors: list[FieldError]) -> None:
    """admissionChecksStrategy: 1-64 checks, a map keyed by name, onFlavors a set of names."""
    strategy = child(spec, "admissionChecksStrategy")
    if strategy is None or is_unknown(strategy):
        return
    path: Path = ("spec", "admissionChecksStrategy", "admissionChecks")
    checks = sized(
        child(strategy, "admissionChecks"),
        path,
        "admission checks",
        1,
        MAX_ADMISSION_CHECKS,
        errors,
    )
    seen: dict[Any, int] = {}
    for i, check in enumerate(checks or []):
        name = hashable(child(check, "name"))
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
        flavors = sized(
            child(check, "onFlavors"),
            (*path, i, "onFlavors"),
            "flavors",
            0,
            MAX_ITEMS_PER_LIST,
            errors,
        )
        names = [hashable(f) for f in flavors or []]
        if any(names.count(f) > 1 for f in names if not is_unknown(f)):
            errors.append(
                FieldError(
                    (*path, i, "onFlavors"),
                    "onFlavors names a flavor twice",
                    "list each flavor once",
                    FLAVOR_TWICE,
                )
            )
        _on_flavors_in_quota(spec, (*path, i, "onFlavors"), names, errors)


def _on_flavors_in_quota(spec: Any, path: Path, names: list[Any], errors: list[FieldError]) -> None:
    """The v0.18 webhook (validateAdmissionCheckOnFlavors): an onFlavors flavor is one of the
    queue's resource groups' flavors (field.NotSupported otherwise)."""
    groups = child(spec, "resourceGroups")
    if is_unknown(groups) or not isinstance(groups, list):
        return
    quota: list[Any] = []
    for group in groups:
        for flavor in as_list(child(group, "flavors")):
            name = hashable(child(flavor, "name"))
            if is_unknown(name):
                return  # the quota's flavors are not all known yet
            quota.append(name)
    for j, name in enumerate(names):
        if is_unknown(name) or name in quota:
            continue
        errors.append(
            FieldError(
                (*path, j),
                f"onFlavors names flavor {shown(name)!r}, which is not in the queue's quota "
                f"(its flavors: {', '.join(shown(f) for f in quota) or 'none'}), so Kueue "
                "refuses the ClusterQueue",
                "name a flavor the team has quota in",
                CHECK_FLAVOR,
            )
        )
