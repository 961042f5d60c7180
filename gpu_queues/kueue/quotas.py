"""One flavor's quotas in a ClusterQueue resource group (spec.resourceGroups[].flavors[]
.resources): one per covered resource, in the order of coveredResources, each with a
nominalQuota, and limits (borrowingLimit, lendingLimit) that need a cohort and, for lending,
stay within nominalQuota. Kueue's ClusterQueue webhook, v0.18.3; conventions (FieldError,
UNKNOWN) in gpu_queues/kueue/errors.py.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

from gpu_queues.kueue.errors import (
    FieldError,
    Path,
    child,
    hashable,
    is_unknown,
    quantity,
    shown,
    shown_list,
)

__all__ = ["check_quotas"]

# Rule codes.
QUOTA_MISSING: Final = "quota-missing"
QUOTA_NOT_COVERED: Final = "quota-not-covered"
QUOTA_TWICE: Final = "quota-twice"
QUOTA_ORDER: Final = "quota-order"
NOMINAL_MISSING: Final = "nominal-missing"
LIMIT_WITHOUT_COHORT: Final = "limit-without-cohort"
LIMIT_WITHOUT_PARENT: Final = "limit-without-parent"
LENDING_ABOVE_NOMINAL: Final = "lending-above-nominal"


def check_quotas(
    quotas: list[Any],
    covered: list[Any],
    path: Path,
    has_cohort: bool,
    of_cohort: bool,
    errors: list[FieldError],
) -> None:
    """A flavor's quotas (at `path`): one per covered resource, in their order, each with a
    nominalQuota and limits Kueue accepts (`of_cohort`: a Cohort's quotas, whose limits need a
    parent and whose lendingLimit may exceed nominalQuota)."""
    names = [hashable(child(q, "name")) for q in quotas]
    covered = [hashable(c) for c in covered]
    if not any(is_unknown(n) for n in [*names, *covered]):
        _quota_names(names, covered, path, errors)
    for r, quota in enumerate(quotas):
        if not is_unknown(quota):
            _quota_amounts(quota, (*path, r), (has_cohort, of_cohort), errors)


def _quota_names(
    names: list[Any], covered: list[Any], path: Path, errors: list[FieldError]
) -> None:
    """Each quota names a covered resource once; every covered resource has one, in order."""
    want = ", ".join(str(c) for c in covered)
    seen: set[Any] = set()
    for r, name in enumerate(names):
        problem = _quota_name_problem(name, seen, covered, want)
        if problem is not None:
            where, message, fix, code = problem
            errors.append(FieldError((*path, r, *where), message, fix, code))
        if name is not None:
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
                f"resources lists [{shown_list(names)}] but coveredResources is [{want}]",
                "list the quotas in the order of coveredResources",
                QUOTA_ORDER,
            )
        )


def _quota_name_problem(
    name: Any, seen: set[Any], covered: list[Any], want: str
) -> tuple[Path, str, str, str] | None:
    """(where below the quota, message, fix, code) of what is wrong with a quota's name."""
    if name is None:
        return (
            ("name",),
            "the quota has no name",
            "name the covered resource this quota is for",
            QUOTA_NOT_COVERED,
        )
    if name in seen:
        return (
            ("name",),
            f"a second quota for resource {shown(name)!r}",
            "give each flavor exactly one quota per covered resource",
            QUOTA_TWICE,
        )
    if name not in covered:
        return (
            (),
            f"resource {shown(name)!r} is not in coveredResources ({want})",
            "add it to coveredResources or remove this quota",
            QUOTA_NOT_COVERED,
        )
    return None


def _quota_amounts(
    quota: Any, path: Path, limits: tuple[bool, bool], errors: list[FieldError]
) -> None:
    """nominalQuota is set and a quantity; the limits are quantities, need a cohort (a parent,
    for a Cohort's), and a ClusterQueue's lendingLimit is at most nominalQuota."""
    has_cohort, of_cohort = limits
    nominal_raw = child(quota, "nominalQuota")
    nominal: Fraction | None = None
    if nominal_raw is None:
        errors.append(
            FieldError(
                (*path, "nominalQuota"),
                "the quota has no nominalQuota",
                "set nominalQuota (it is required)",
                NOMINAL_MISSING,
            )
        )
    else:
        nominal = quantity(nominal_raw, "nominalQuota", (*path, "nominalQuota"), errors)
    for limit_field in ("borrowingLimit", "lendingLimit"):
        raw = child(quota, limit_field)
        if raw is None:
            continue
        lpath: Path = (*path, limit_field)
        limit = quantity(raw, limit_field, lpath, errors)
        if not has_cohort:
            errors.append(_limit_without_cohort(lpath, limit_field, of_cohort))
        above = limit is not None and nominal is not None and limit > nominal and not of_cohort
        if limit_field == "lendingLimit" and above:
            errors.append(
                FieldError(
                    lpath,
                    f"lendingLimit {shown(raw)} is above nominalQuota {shown(nominal_raw)}",
                    "lower lendingLimit to at most nominalQuota",
                    LENDING_ABOVE_NOMINAL,
                )
            )


def _limit_without_cohort(path: Path, limit_field: str, of_cohort: bool) -> FieldError:
    if of_cohort:
        return FieldError(
            path,
            f"{limit_field} needs a parent cohort to borrow from or lend to, and the cohort has "
            "no parentName",
            f"set spec.parentName, or remove {limit_field}",
            LIMIT_WITHOUT_PARENT,
        )
    return FieldError(
        path,
        f"{limit_field} needs a cohort to borrow from or lend to, and the queue has no cohortName",
        f"set spec.cohortName, or remove {limit_field}",
        LIMIT_WITHOUT_COHORT,
    )
