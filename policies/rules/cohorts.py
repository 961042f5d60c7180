"""The pack's rules on cohorts: a Cohort's fields (Kueue's webhook) and the tree the Cohorts
make together (no cycle, no parent that is not a Cohort of the stack or pre-existing). The
rules are gpu_queues/kueue/cohort.py's, which the stack config check runs too; a tree's quota
against the hardware is quota-within-capacity's (it sums Cohorts' own quota with the queues')."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpu_queues.kueue.cohort import PARENT_UNDECLARED, cohort_errors, cohort_tree_errors

from ..resource import Resource, Violation, config_list, field_violation, kueue_kind
from . import COHORT_TREE_VALID, COHORT_WEBHOOK_VALID


def cohort_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """Cohort quota and fair-sharing weight Kueue's webhook would reject at apply time."""
    if kueue_kind(resource) != "Cohort":
        return []
    return [
        field_violation(COHORT_WEBHOOK_VALID, resource, error)
        for error in cohort_errors(resource.props)
    ]


def cohort_tree_valid(resources: Sequence[Resource], config: Mapping[str, Any]) -> list[Violation]:
    """The Cohorts form trees: no cycle (Kueue admits nothing in a tree with one), and every
    parentName a Cohort of the stack or one the policy config lists as pre-existing."""
    cohorts = [r for r in resources if kueue_kind(r) == "Cohort"]
    by_name = {r.k8s_name: r for r in cohorts}
    outside = set(config_list(config, "preExistingCohorts"))
    stand_ins = [
        {"kind": "Cohort", "metadata": {"name": name}, "spec": {}}
        for name in sorted(outside - set(by_name))
    ]
    found = cohort_tree_errors([*(r.props for r in cohorts), *stand_ins])
    violations = []
    for name, error in found:
        if name not in by_name:
            continue
        if error.code == PARENT_UNDECLARED:
            error = replace(
                error,
                fix=f"{error.fix}, or add it to {COHORT_TREE_VALID}.preExistingCohorts in the "
                "policy config",
            )
        violations.append(field_violation(COHORT_TREE_VALID, by_name[name], error))
    return violations
