"""What Kueue refuses in a Topology (the v1beta2 CRD's rules on spec.levels, Kueue v0.18.3:
1 to 16 levels, each nodeLabel a label key at most 316 characters, no label twice, and
kubernetes.io/hostname only as the lowest level). Conventions in gpu_queues/kueue/errors.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpu_queues.kueue.errors import FieldError, child, is_unknown, shown, sized
from gpu_queues.kueue.fields import is_qualified_name

__all__ = ["HOSTNAME_LABEL", "topology_errors"]

# Rule codes.
LEVEL_LABEL: Final = "level-label"
LEVEL_TWICE: Final = "level-twice"
HOSTNAME_NOT_LOWEST: Final = "hostname-not-lowest"

MAX_LEVELS: Final = 16  # TopologySpec.levels MaxItems
MAX_LEVEL_LABEL: Final = 316  # TopologyLevel.nodeLabel MaxLength
# The node's own name as a label: every node is a domain of its own at this level.
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"


def topology_errors(topology: Mapping[str, Any]) -> list[FieldError]:
    """What the Topology CRD's validation refuses in spec.levels."""
    errors: list[FieldError] = []
    levels = sized(
        child(topology, "spec", "levels"), ("spec", "levels"), "levels", 1, MAX_LEVELS, errors
    )
    if levels is None:
        return errors
    seen: dict[str, int] = {}
    for i, level in enumerate(levels):
        label = child(level, "nodeLabel")
        path = ("spec", "levels", i, "nodeLabel")
        if is_unknown(label):
            continue
        if not isinstance(label, str) or not label:
            errors.append(FieldError(path, "nodeLabel is not set", "set it", LEVEL_LABEL))
            continue
        if len(label) > MAX_LEVEL_LABEL or not is_qualified_name(label):
            errors.append(
                FieldError(
                    path,
                    f"{shown(label)!r} is not a label key",
                    "write [prefix/]name, as the nodes' label is written",
                    LEVEL_LABEL,
                )
            )
        if label in seen:
            errors.append(
                FieldError(
                    path,
                    f"nodeLabel {label!r} is already level {seen[label]}",
                    "list each label once",
                    LEVEL_TWICE,
                )
            )
        else:
            seen[label] = i
        if label == HOSTNAME_LABEL and i != len(levels) - 1:
            errors.append(
                FieldError(
                    path,
                    f"{HOSTNAME_LABEL} is level {i} of {len(levels)}; Kueue takes it only as "
                    "the lowest level",
                    "move it last",
                    HOSTNAME_NOT_LOWEST,
                )
            )
    return errors
