"""The pack's rules on flavors: a ResourceFlavor's fields (Kueue's webhook), the flavors each
ClusterQueue names exist, and per flavor and resource the quotas of all queues fit the
hardware behind it (the capacity the program declares on its flavors, or the policy config).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from gpu_queues.kueue.capacity import (
    CAPACITY_ANNOTATION,
    QuotaHolder,
    declared_capacity,
    over_capacity,
    quota_totals,
)
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.kueue.resourceflavor import resource_flavor_errors
from gpu_queues.kueue.resourcegroups import undeclared_flavors

from ..resource import (
    Resource,
    Violation,
    config_list,
    field_violation,
    known_str,
    kueue_kind,
    names_of_kind,
    violation,
)
from . import FLAVOR_WEBHOOK_VALID, FLAVORS_EXIST, QUOTA_WITHIN_CAPACITY


def resourceflavor_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """ResourceFlavor labels, taints and tolerations Kueue would reject at apply time."""
    if kueue_kind(resource) != "ResourceFlavor":
        return []
    return [
        field_violation(FLAVOR_WEBHOOK_VALID, resource, error)
        for error in resource_flavor_errors(resource.props)
    ]


def clusterqueue_flavors_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every flavor a ClusterQueue (or a Cohort's own quota) names is a ResourceFlavor of the
    stack or pre-existing."""
    declared, unknown_names = names_of_kind(resources, "ResourceFlavor")
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
        if kueue_kind(resource) in ("ClusterQueue", "Cohort")
        for error in undeclared_flavors(resource.props, known)
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
