"""The one capacity sum: nominal quotas per flavor and resource, against the hardware.

The program writes each flavor's capacity (from its nodes or declared totals) on the
ResourceFlavor as CAPACITY_ANNOTATION; the config check, the policy pack and the quota diff
all sum quotas with `quota_totals` and compare with `over_capacity`. Objects are plain dicts
as in the object rules (gpu_queues/kueue/errors.py); UNKNOWN values withhold a verdict instead
of guessing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from gpu_queues.kueue.errors import FieldError, Path, child, is_unknown
from gpu_queues.kueue.quantity import QuantityError, format_quantity, parse_quantity
from gpu_queues.values import as_list

__all__ = [
    "CAPACITY_ANNOTATION",
    "Capacity",
    "Overrun",
    "QuotaHolder",
    "QuotaTotals",
    "declared_capacity",
    "encode_capacity",
    "over_capacity",
    "quota_totals",
]

CAPACITY_ANNOTATION_INVALID: Final = "capacity-annotation"


CAPACITY_ANNOTATION: Final = "gpu-queues.dev/capacity"
"""On a ResourceFlavor: JSON object resource -> quantity of the hardware behind the flavor."""

Capacity = dict[str, Fraction]


def _exact_quantity(value: Fraction) -> str:
    """An exact quantity string: 8, 4Ti, 1500m, 250n. Finer values are rounded up to the next
    nano unit, as the API server does (resource.ParseQuantity)."""
    if (value * 10**9).denominator != 1:
        value = Fraction(math.ceil(value * 10**9), 10**9)
    if value.denominator == 1:
        whole = value.numerator
        for suffix, size in (
            ("Ei", 2**60),
            ("Pi", 2**50),
            ("Ti", 2**40),
            ("Gi", 2**30),
            ("Mi", 2**20),
            ("Ki", 2**10),
        ):
            if whole != 0 and whole % size == 0:
                return f"{whole // size}{suffix}"
        return str(whole)
    for suffix, scale in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = value * scale
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    raise AssertionError("unreachable: rounded to nano units above")  # pragma: no cover


def encode_capacity(capacity: Mapping[str, Fraction]) -> str:
    """The CAPACITY_ANNOTATION value: exact quantities, keys sorted (a stable diff)."""
    return json.dumps(
        {name: _exact_quantity(value) for name, value in sorted(capacity.items())},
        separators=(",", ":"),
    )


def declared_capacity(rf: Mapping[str, Any]) -> tuple[Capacity, list[FieldError]]:
    """The capacity a ResourceFlavor declares in its annotation (empty when it has none)."""
    path: Path = ("metadata", "annotations", CAPACITY_ANNOTATION)
    raw = child(rf, *(str(p) for p in path))
    if not isinstance(raw, str):
        return {}, []
    fix = "write a JSON object of resource: quantity"
    try:
        parsed = json.loads(raw)
    except ValueError as error:
        return {}, [FieldError(path, f"it is not JSON: {error}", fix, CAPACITY_ANNOTATION_INVALID)]
    if not isinstance(parsed, dict):
        return {}, [FieldError(path, "it is not a JSON object", fix, CAPACITY_ANNOTATION_INVALID)]
    capacity: Capacity = {}
    errors: list[FieldError] = []
    for name, value in parsed.items():
        try:
            capacity[str(name)] = parse_quantity(value)
        except QuantityError as error:
            errors.append(FieldError(path, f"{name}: {error}", fix, CAPACITY_ANNOTATION_INVALID))
    return capacity, errors


@dataclass(frozen=True)
class QuotaHolder:
    """One object's nominal quota of one resource in one flavor."""

    kind: str
    name: str
    amount: Fraction


@dataclass
class QuotaTotals:
    """Nominal quotas per (flavor, resource), summed over ClusterQueues and Cohorts."""

    holders: dict[tuple[str, str], list[QuotaHolder]] = field(default_factory=dict)
    undecidable: set[tuple[str, str]] = field(default_factory=set)
    """Keys whose sum is not known (an unknown or invalid quota): no verdict on them."""
    undecidable_flavors: set[str] = field(default_factory=set)
    any_flavor_unknown: bool = False
    """A flavor name is unknown: it may be any flavor, so no verdict at all."""

    def total(self, key: tuple[str, str]) -> Fraction:
        return sum((h.amount for h in self.holders.get(key, [])), Fraction(0))

    def decidable(self, key: tuple[str, str]) -> bool:
        return not (
            self.any_flavor_unknown or key in self.undecidable or key[0] in self.undecidable_flavors
        )


def quota_totals(objects: Iterable[Mapping[str, Any]]) -> QuotaTotals:
    """The one capacity sum: nominal quotas of every ClusterQueue and Cohort (a Cohort's own
    quota is an extra shared pool), per flavor and resource."""
    totals = QuotaTotals()
    for obj in objects:
        kind = child(obj, "kind")
        if kind not in ("ClusterQueue", "Cohort"):
            continue
        name = child(obj, "metadata", "name")
        owner = name if isinstance(name, str) and name else "<name not known yet>"
        for group in as_list(child(obj, "spec", "resourceGroups")):
            for flavor in as_list(child(group, "flavors")):
                flavor_name = child(flavor, "name")
                quotas = child(flavor, "resources")
                if is_unknown(flavor_name):
                    totals.any_flavor_unknown = True
                    continue
                if is_unknown(quotas):
                    totals.undecidable_flavors.add(str(flavor_name))
                    continue
                for quota in as_list(quotas):
                    key = (str(flavor_name), str(child(quota, "name")))
                    try:
                        amount = parse_quantity(child(quota, "nominalQuota"))
                    except QuantityError:
                        totals.undecidable.add(key)  # unknown, or invalid (reported elsewhere)
                        continue
                    totals.holders.setdefault(key, []).append(QuotaHolder(kind, owner, amount))
    return totals


@dataclass(frozen=True)
class Overrun:
    """Nominal quotas of a resource in a flavor that add up to more than its capacity."""

    flavor: str
    resource: str
    total: Fraction
    capacity: Fraction
    holders: tuple[QuotaHolder, ...]

    def describe(self, label: Any = None) -> str:
        """`label(holder) -> str` names each holder (default: its kind and name)."""
        name = label or (lambda h: f"{h.kind} {h.name}")
        parts = ", ".join(f"{name(h)} {format_quantity(h.amount)}" for h in self.holders)
        return (
            f"nominal quotas of {self.resource} in flavor {self.flavor!r} add up to "
            f"{format_quantity(self.total)} ({parts}), above the declared capacity "
            f"{format_quantity(self.capacity)}"
        )


def over_capacity(
    totals: QuotaTotals, capacity: Mapping[tuple[str, str], Fraction]
) -> list[Overrun]:
    """Every (flavor, resource) whose summed nominal quotas exceed its capacity."""
    overruns = []
    for key, limit in sorted(capacity.items()):
        if limit < 0:  # not a capacity (refused where it is written): nothing to sum against
            continue
        if key not in totals.holders:  # no quota names it: nothing adds up (a negative
            continue  # capacity, say, is the node's problem, not the quotas')
        total = totals.total(key)
        if totals.decidable(key) and total > limit:
            overruns.append(Overrun(*key, total, limit, tuple(totals.holders[key])))
    return overruns
