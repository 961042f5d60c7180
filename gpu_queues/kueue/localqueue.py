"""What Kueue refuses in a LocalQueue (its fair-sharing weight, the same webhook rule as a
ClusterQueue's), and the project's rule that a LocalQueue's namespace is one its ClusterQueue's
namespaceSelector selects: Kueue accepts such a LocalQueue, and every job sent to it then waits
with "workload namespace doesn't match ClusterQueue selector" (or, with a selector of {}, runs
on quota meant for other namespaces). Conventions in gpu_queues/kueue/errors.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from gpu_queues.kueue.clusterqueue import fair_sharing_errors
from gpu_queues.kueue.errors import FieldError, child, hashable, is_unknown
from gpu_queues.values import as_list

__all__ = ["local_queue_errors", "selector_matches", "unselected_local_queues"]

# Rule codes.
NAMESPACE_NOT_SELECTED: Final = "namespace-not-selected"  # PROJECT

# The label every namespace carries with its own name (the API server sets it).
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


def local_queue_errors(lq: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue refuses in a LocalQueue's spec (its fair-sharing weight)."""
    spec = child(lq, "spec")
    return [] if is_unknown(spec) else fair_sharing_errors(spec)


def selector_matches(selector: Any, namespace: str) -> bool | None:
    """Whether a namespaceSelector selects `namespace` by its name label; None when it cannot
    be told from the name alone (another label, an unknown value). null selects nothing."""
    if selector is None:
        return False
    if not isinstance(selector, Mapping):
        return None
    labels = {NAMESPACE_NAME_LABEL: namespace}
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return None
    verdict: bool | None = True
    for key, value in match_labels.items():
        if key != NAMESPACE_NAME_LABEL or is_unknown(value):
            verdict = None
        elif labels[key] != value:
            return False
    for expression in as_list(selector.get("matchExpressions")):
        result = _expression(expression, labels)
        if result is False:
            return False
        if result is None:
            verdict = None
    return verdict


def _expression(expression: Any, labels: Mapping[str, str]) -> bool | None:
    key, operator = child(expression, "key"), child(expression, "operator")
    values = child(expression, "values")
    if key != NAMESPACE_NAME_LABEL or is_unknown(values) or is_unknown(operator):
        return None
    present = key in labels
    if operator == "In":
        return present and labels[key] in as_list(values)
    if operator == "NotIn":
        return not present or labels[key] not in as_list(values)
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return None


def unselected_local_queues(
    objects: Iterable[Mapping[str, Any]],
) -> list[tuple[Mapping[str, Any], FieldError]]:
    """PROJECT: (LocalQueue, error) for each LocalQueue whose ClusterQueue (one of `objects`)
    does not select the LocalQueue's namespace."""
    items = list(objects)
    queues: dict[Any, Mapping[str, Any] | None] = {}
    for obj in items:
        if child(obj, "kind") == "ClusterQueue":
            name = hashable(child(obj, "metadata", "name"))
            # Two queues of one name: which one a LocalQueue means is not known (the duplicate
            # is refused elsewhere), so no verdict on it.
            queues[name] = None if name in queues else obj
    errors = []
    for lq in items:
        if child(lq, "kind") != "LocalQueue":
            continue
        namespace, target = child(lq, "metadata", "namespace"), child(lq, "spec", "clusterQueue")
        cq = queues.get(target) if isinstance(target, str) else None
        if cq is None or not isinstance(namespace, str):
            continue
        selector = child(cq, "spec", "namespaceSelector")
        if is_unknown(selector) or selector_matches(selector, namespace) is not False:
            continue
        errors.append(
            (
                lq,
                FieldError(
                    ("metadata", "namespace"),
                    f"namespace {namespace!r} is not selected by ClusterQueue {target!r}'s "
                    "namespaceSelector, so every job sent to this LocalQueue waits with "
                    '"workload namespace doesn\'t match ClusterQueue selector"',
                    "put the LocalQueue in a namespace the ClusterQueue selects, or select its "
                    "namespace",
                    NAMESPACE_NOT_SELECTED,
                ),
            )
        )
    return errors
