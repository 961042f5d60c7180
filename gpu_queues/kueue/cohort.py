"""What Kueue refuses in a Cohort (validateCohort, Kueue v0.18.3, the same in v0.18.4 and
v0.19.2), and the project's rules on the cohort tree the Cohorts make together.

A Cohort's own resourceGroups are quota that belongs to it (a pool its subtree shares, on top of
its members'); its limits need a parentName, and unlike a ClusterQueue's its lendingLimit may
exceed its nominalQuota. The tree: Kueue stops admitting in every member of a tree with a cycle
until the cycle is gone (pkg/cache/hierarchy: HasCycle), and reads a parentName that names no
Cohort as an implicit Cohort without quota or limits; the project refuses both (PROJECT), so a
typo in a parent cannot split an organisation into two trees. Kueue sets no limit on a tree's
depth (the three supported releases have none: the hierarchy code checks cycles only), so
neither does the project. Conventions (FieldError, UNKNOWN) in gpu_queues/kueue/errors.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from gpu_queues.kueue.clusterqueue import fair_sharing_errors
from gpu_queues.kueue.errors import FieldError, child, hashable, is_unknown, shown
from gpu_queues.kueue.resourcegroups import check_resource_groups

__all__ = ["cohort_errors", "cohort_tree_errors", "parents"]

# Rule codes (PROJECT: the tree).
PARENT_UNDECLARED: Final = "parent-undeclared"  # PROJECT
COHORT_CYCLE: Final = "cohort-cycle"  # PROJECT


def cohort_errors(cohort: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue's Cohort webhook refuses: its fair-sharing weight and resource groups."""
    spec = child(cohort, "spec")
    if is_unknown(spec):
        return []
    errors = fair_sharing_errors(spec)
    parent = child(spec, "parentName")
    has_parent = is_unknown(parent) or bool(parent)
    check_resource_groups(child(spec, "resourceGroups"), has_parent, errors, of_cohort=True)
    return errors


def parents(objects: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Each Cohort's name -> its parentName (None for a root); None when a name is unknown."""
    tree: dict[str, Any] = {}
    for obj in objects:
        if child(obj, "kind") != "Cohort":
            continue
        name = child(obj, "metadata", "name")
        if not isinstance(name, str):
            return None
        parent = hashable(child(obj, "spec", "parentName"))
        tree[name] = parent or None
    return tree


def cohort_tree_errors(objects: Iterable[Mapping[str, Any]]) -> list[tuple[str, FieldError]]:
    """PROJECT: (Cohort name, error) for a parentName that names no Cohort of `objects` and
    for each Cohort on a cycle. No verdict while a name or parent is unknown."""
    tree = parents(objects)
    if tree is None or any(is_unknown(p) for p in tree.values()):
        return []
    path = ("spec", "parentName")
    errors: list[tuple[str, FieldError]] = []
    for name, parent in tree.items():
        if parent is not None and parent not in tree:
            errors.append(
                (
                    name,
                    FieldError(
                        path,
                        f"parent {shown(parent)!r} is not a declared cohort (declared: "
                        f"{', '.join(sorted(tree))}); Kueue would make it an empty cohort of "
                        "its own, a second tree",
                        "declare the parent cohort, or fix its name",
                        PARENT_UNDECLARED,
                    ),
                )
            )
            continue
        loop = _loop_from(name, tree)
        if loop:
            errors.append(
                (
                    name,
                    FieldError(
                        path,
                        f"the cohorts form a cycle ({' -> '.join([*loop, loop[0]])}); Kueue "
                        "admits nothing in a tree with a cycle",
                        "make one cohort of the cycle a root (no parent), or point it elsewhere",
                        COHORT_CYCLE,
                    ),
                )
            )
    return errors


def _loop_from(name: str, tree: Mapping[str, Any]) -> list[str]:
    """The cycle `name` is on (starting at it), or [] when its ancestors end at a root."""
    seen = [name]
    current = tree.get(name)
    while isinstance(current, str) and current in tree:
        if current == name:
            return seen
        if current in seen:
            return []  # a cycle above, not through this cohort: reported at its members
        seen.append(current)
        current = tree[current]
    return []
