"""A ClusterQueue's spec.resourceGroups: which resources each group covers and its flavors,
each with a quota per covered resource (those in gpu_queues/kueue/quotas.py).

Kueue's rules (the CRD's MaxItems and the ClusterQueue webhook's totals, Kueue v0.18.3) and the
project's on the same field, each marked PROJECT: cpu/memory coverage, whole numbers of
extended resources, flavors that exist. Quotas within the hardware (the capacity sum) are in
gpu_queues/kueue/capacity.py. Conventions (FieldError, UNKNOWN) in gpu_queues/kueue/errors.py.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_queues.kueue.errors import (
    FLAVOR_TWICE,
    MAX_ITEMS_PER_LIST,
    NOT_A_LIST,
    TOO_MANY,
    FieldError,
    Path,
    child,
    is_unknown,
    shown,
    shown_list,
    sized,
)
from gpu_queues.kueue.fields import is_dns_subdomain, is_qualified_name, whole_number_problem
from gpu_queues.kueue.quotas import check_quotas
from gpu_queues.values import as_list

__all__ = [
    "DEFAULT_REQUIRED_RESOURCES",
    "check_resource_groups",
    "fractional_quotas",
    "uncovered_resources",
    "undeclared_flavors",
]

# Rule codes: Kueue's, then the project's.
RESOURCE_NAME: Final = "resource-name"
COVERED_TWICE: Final = "covered-twice"
FLAVOR_NAME: Final = "flavor-name"
NOT_COVERED: Final = "not-covered"  # PROJECT
NOT_WHOLE: Final = "not-whole"  # PROJECT
FLAVOR_UNDECLARED: Final = "flavor-undeclared"  # PROJECT

# PROJECT: what every ClusterQueue must cover (the pack's requiredResources default).
DEFAULT_REQUIRED_RESOURCES: Final = ("cpu", "memory")

# Limits of the ClusterQueue CRD (MaxItems) and webhook (totals), Kueue v0.18.
MAX_RESOURCE_GROUPS: Final = 16
MAX_TOTAL_FLAVORS: Final = 256
MAX_TOTAL_COVERED: Final = 256
MAX_FLAVOR_RESOURCE_COMBINATIONS: Final = 512

_GROUPS: Final = ("spec", "resourceGroups")


@dataclass
class _Seen:
    """Across the groups: the group each resource and flavor name is first in, and totals."""

    covered_at: dict[str, int] = field(default_factory=dict)
    flavor_at: dict[str, int] = field(default_factory=dict)
    covered: int = 0
    flavors: int = 0


def check_resource_groups(
    groups: Any, has_cohort: bool, errors: list[FieldError], of_cohort: bool = False
) -> None:
    """What Kueue refuses in spec.resourceGroups; `has_cohort`: whether limits may be set (a
    ClusterQueue's cohortName, a Cohort's parentName); `of_cohort`: the groups are a Cohort's,
    whose lendingLimit Kueue lets exceed its nominalQuota (validateCohort)."""
    if is_unknown(groups):
        return
    if groups is not None and not isinstance(groups, list):
        errors.append(
            FieldError(_GROUPS, "resourceGroups is not a list", "write a list", NOT_A_LIST)
        )
    items = as_list(groups)
    if len(items) > MAX_RESOURCE_GROUPS:
        errors.append(
            FieldError(
                _GROUPS,
                f"it has {len(items)} resourceGroups, more than {MAX_RESOURCE_GROUPS}",
                f"merge resource groups until there are at most {MAX_RESOURCE_GROUPS}",
                TOO_MANY,
            )
        )
    seen = _Seen()
    for g, group in enumerate(items):
        _group(group, g, seen, (has_cohort, of_cohort), errors)
    _totals(seen, errors)


def _group(
    group: Any, g: int, seen: _Seen, limits: tuple[bool, bool], errors: list[FieldError]
) -> None:
    """One resource group: its covered resources, then each flavor and the flavor's quotas."""
    gpath: Path = (*_GROUPS, g)
    covered = sized(
        child(group, "coveredResources"),
        (*gpath, "coveredResources"),
        "resources",
        1,
        MAX_ITEMS_PER_LIST,
        errors,
    )
    flavors = sized(
        child(group, "flavors"), (*gpath, "flavors"), "flavors", 1, MAX_ITEMS_PER_LIST, errors
    )
    if covered is None or flavors is None:
        return
    seen.covered += len(covered)
    seen.flavors += len(flavors)
    for c, name in enumerate(covered):
        _covered_resource(name, (*gpath, "coveredResources", c), g, seen.covered_at, errors)
    combinations = 0
    for f, flavor in enumerate(flavors):
        fpath: Path = (*gpath, "flavors", f)
        _flavor_name(child(flavor, "name"), (*fpath, "name"), g, seen.flavor_at, errors)
        quotas = sized(
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
        check_quotas(quotas, covered, (*fpath, "resources"), *limits, errors)
    if combinations > MAX_FLAVOR_RESOURCE_COMBINATIONS:
        errors.append(
            FieldError(
                gpath,
                f"the group has {combinations} flavor-resource combinations",
                f"keep at most {MAX_FLAVOR_RESOURCE_COMBINATIONS} per resource group",
                TOO_MANY,
            )
        )


def _first_in(first: int, g: int) -> str:
    return "this resource group" if first == g else f"resourceGroups[{first}]"


def _covered_resource(
    name: Any, path: Path, g: int, covered_at: dict[str, int], errors: list[FieldError]
) -> None:
    """A resource name, covered by one group only and once."""
    if is_unknown(name):
        return
    if not isinstance(name, str) or not is_qualified_name(name):
        errors.append(
            FieldError(
                path,
                f"{shown(name)!r} is not a resource name",
                "write a resource name such as cpu, memory or nvidia.com/gpu",
                RESOURCE_NAME,
            )
        )
    elif name in covered_at:
        errors.append(
            FieldError(
                path,
                f"resource {name!r} is already covered by {_first_in(covered_at[name], g)}",
                "cover each resource in only one resource group, once",
                COVERED_TWICE,
            )
        )
    else:
        covered_at[name] = g


def _flavor_name(
    name: Any, path: Path, g: int, flavor_at: dict[str, int], errors: list[FieldError]
) -> None:
    """A flavor's name: set, a ResourceFlavor name, in one group only and once."""
    if name is None or name == "":
        errors.append(
            FieldError(
                path,
                "the flavor has no name",
                "name the ResourceFlavor this quota is for",
                FLAVOR_NAME,
            )
        )
    elif is_unknown(name):
        return
    elif not isinstance(name, str) or not is_dns_subdomain(name):
        errors.append(
            FieldError(
                path,
                f"{shown(name)!r} is not a valid ResourceFlavor name",
                "use lowercase letters, digits, '-' and '.'",
                FLAVOR_NAME,
            )
        )
    elif name in flavor_at:
        errors.append(
            FieldError(
                path,
                f"flavor {name!r} already appears in {_first_in(flavor_at[name], g)}",
                "use each flavor in only one resource group, once",
                FLAVOR_TWICE,
            )
        )
    else:
        flavor_at[name] = g


def _totals(seen: _Seen, errors: list[FieldError]) -> None:
    if seen.flavors > MAX_TOTAL_FLAVORS:
        errors.append(
            FieldError(
                _GROUPS,
                f"it has {seen.flavors} flavors in all",
                f"keep at most {MAX_TOTAL_FLAVORS} flavors",
                TOO_MANY,
            )
        )
    if seen.covered > MAX_TOTAL_COVERED:
        errors.append(
            FieldError(
                _GROUPS,
                f"it covers {seen.covered} resources in all",
                f"cover at most {MAX_TOTAL_COVERED} resources",
                TOO_MANY,
            )
        )


# --- the project's rules on resource groups -------------------------------------------------


def _quotas(obj: Any) -> Iterable[tuple[Path, Any]]:
    """(path of the flavor quota, quota) for every quota whose list is known."""
    for g, group in enumerate(as_list(child(obj, *_GROUPS))):
        for f, flavor in enumerate(as_list(child(group, "flavors"))):
            for r, quota in enumerate(as_list(child(flavor, "resources"))):
                yield (*_GROUPS, g, "flavors", f, "resources", r), quota


def uncovered_resources(cq: Mapping[str, Any], required: Sequence[str]) -> list[FieldError]:
    """PROJECT: the queue covers every resource (almost) every pod requests, cpu and memory.
    Kueue admits a job only when the queue covers every resource its pods request."""
    groups = child(cq, *_GROUPS)
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
            _GROUPS,
            f"coveredResources [{shown_list(covered)}] do not include {shown_list(missing)}, so "
            f"a job whose pods also request {shown_list(missing)} (almost every job) is never "
            "admitted",
            f"add {', '.join(repr(m) for m in missing)} to a resourceGroup's coveredResources "
            "and give every flavor of that group a nominalQuota for it",
            NOT_COVERED,
        )
    ]


def fractional_quotas(cq: Mapping[str, Any]) -> list[FieldError]:
    """PROJECT: quotas of extended resources (nvidia.com/gpu) are whole numbers: no pod can
    request half a GPU, so 0.5 of one is quota nothing can use."""
    errors: list[FieldError] = []
    for path, quota in _quotas(cq):
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
    for g, group in enumerate(as_list(child(cq, *_GROUPS))):
        for f, flavor in enumerate(as_list(child(group, "flavors"))):
            name = child(flavor, "name")
            if isinstance(name, str) and name and name not in declared:
                errors.append(
                    FieldError(
                        (*_GROUPS, g, "flavors", f, "name"),
                        f"flavor {name!r} is not declared (declared: "
                        f"{shown_list(sorted(declared))}), so Kueue would mark the queue "
                        "inactive (FlavorNotFound) and admit nothing",
                        "declare the ResourceFlavor, or fix the flavor name",
                        FLAVOR_UNDECLARED,
                    )
                )
    return errors
