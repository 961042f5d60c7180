"""What Kueue refuses in a ResourceFlavor (ValidateResourceFlavor and the CRD's CEL rules on
nodeTaints and tolerations, Kueue v0.18.3): node labels, taints, tolerations, and a topology
that needs labels. Conventions (FieldError, UNKNOWN) in gpu_queues/kueue/errors.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpu_queues.kueue.errors import (
    ENUM,
    TOO_MANY,
    FieldError,
    Path,
    child,
    hashable,
    is_unknown,
    shown,
    sized,
)
from gpu_queues.kueue.fields import is_label_value, is_qualified_name

__all__ = ["resource_flavor_errors"]

# Rule codes.
LABEL: Final = "label"
TAINT_TWICE: Final = "taint-twice"
TOLERATION: Final = "toleration"
TOPOLOGY_NEEDS_LABEL: Final = "topology-needs-label"

MAX_FLAVOR_ITEMS: Final = 8  # nodeLabels, nodeTaints, tolerations
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def resource_flavor_errors(rf: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue's CRD validation and webhook refuse in a ResourceFlavor
    (ValidateResourceFlavor and the CEL rules on nodeTaints and tolerations)."""
    spec = child(rf, "spec")
    if spec is None or is_unknown(spec):
        return []
    errors: list[FieldError] = []
    labels = child(spec, "nodeLabels")
    if isinstance(labels, Mapping):
        _node_labels(labels, errors)
    _node_taints(child(spec, "nodeTaints"), errors)
    tolerations = sized(
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


def _node_labels(labels: Mapping[Any, Any], errors: list[FieldError]) -> None:
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


def _node_taints(value: Any, errors: list[FieldError]) -> None:
    """At most 8 taints, each with a known effect, one per key and effect."""
    taints = sized(value, ("spec", "nodeTaints"), "taints", 0, MAX_FLAVOR_ITEMS, errors)
    seen: dict[tuple[Any, Any], int] = {}
    for t, taint in enumerate(taints or []):
        key, effect = hashable(child(taint, "key")), hashable(child(taint, "effect"))
        if is_unknown(key) or is_unknown(effect):
            continue
        if effect not in _EFFECTS:
            errors.append(
                FieldError(
                    ("spec", "nodeTaints", t, "effect"),
                    f"taint effect is {shown(effect)!r}",
                    f"use one of {', '.join(_EFFECTS)}",
                    ENUM,
                )
            )
        if (key, effect) in seen:
            errors.append(
                FieldError(
                    ("spec", "nodeTaints", t),
                    f"taint {shown(key)}:{shown(effect)} is already nodeTaints"
                    f"[{seen[key, effect]}]",
                    "keep one taint per key and effect",
                    TAINT_TWICE,
                )
            )
        else:
            seen[key, effect] = t


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
        add(f"operator is {shown(operator)!r}", "use Equal (the default) or Exists", "operator")
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
        add(f"effect is {shown(effect)!r}", f"use one of {', '.join(_EFFECTS)}", "effect")
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        add(
            "tolerationSeconds is set but effect is not NoExecute",
            "set effect: NoExecute, or remove tolerationSeconds",
            "tolerationSeconds",
        )
