"""What every Kueue object rule shares: the error a rule reports, where in an object, and a
value that is not known yet.

The rules (one module per Kueue object kind: clusterqueue, with resourcegroups and quotas,
resourceflavor, admissioncheck, multikueue) are pure functions over plain objects, one
implementation for every caller: the stack config check runs them on the objects the program
is about to register (gpu_queues/config/render.py), the policy pack on what the engine hands
it, and the quota diff uses the same capacity sum. An object is a dict as the API has it
({"apiVersion", "kind", "metadata", "spec"}). Each validator returns FieldErrors (a path inside
the object, what is wrong, how to fix it, and a code naming the rule), in the manner of Kueue's
webhook validators (pkg/webhooks: field.ErrorList).

Sources, Kueue v0.18.3: the v1beta2 CRDs (MaxItems, CEL rules, defaults), its ClusterQueue
and ResourceFlavor webhooks, and what its controllers refuse in MultiKueue objects. The project
adds rules Kueue does not have, each marked PROJECT.

A value may be UNKNOWN (only known after `pulumi up`); a check that needs it is skipped. A value
of the wrong type is reported where Kueue would refuse it; nothing here raises on bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.values import as_list

__all__ = [
    "ENUM",
    "FLAVOR_TWICE",
    "LIST_SIZE",
    "MAX_ITEMS_PER_LIST",
    "NOT_A_LIST",
    "QUANTITY",
    "TOO_MANY",
    "UNKNOWN",
    "FieldError",
    "Path",
    "Unknown",
    "bounded_name",
    "child",
    "format_path",
    "hashable",
    "is_unknown",
    "quantity",
    "shown",
    "shown_list",
    "sized",
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
    """Which rule (the constants of each rule module): callers may phrase the fix in their own
    terms."""

    @property
    def where(self) -> str:
        return format_path(self.path)


def format_path(path: Path) -> str:
    """('spec', 'resourceGroups', 0, 'name') -> 'spec.resourceGroups[0].name'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# Rule codes more than one object kind reports; each kind's own codes are in its module.
TOO_MANY: Final = "too-many"
LIST_SIZE: Final = "list-size"
NOT_A_LIST: Final = "not-a-list"
QUANTITY: Final = "quantity"
ENUM: Final = "enum"
FLAVOR_TWICE: Final = "flavor-twice"

# The CRDs' MaxItems for most lists, Kueue v0.18.
MAX_ITEMS_PER_LIST: Final = 64

_QUANTITY_FIX: Final = "write a non-negative Kubernetes quantity such as 8, 64 or 512Gi"


def shown(value: Any) -> str:
    """A value as the user wrote it (numbers lose the float the protobuf round trip adds)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shown_list(values: Iterable[Any]) -> str:
    return ", ".join(shown(v) for v in values) or "none"


def hashable(value: Any) -> Any:
    """A value usable as a dict key or set member (a list or dict becomes its repr)."""
    if is_unknown(value) or value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def quantity(value: Any, name: str, path: Path, errors: list[FieldError]) -> Fraction | None:
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
                path, f"{name} is {shown(value)}, which is negative", _QUANTITY_FIX, QUANTITY
            )
        )
        return None
    return parsed


def sized(
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


def bounded_name(
    value: Any, path: Path, what: str, high: int, errors: list[FieldError], code: str
) -> None:
    """A name that must be set and at most `high` characters long."""
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
