"""Kubernetes resource quantities ("512Gi", "12000m", "1e3", 64) as exact fractions.

One parser for the whole project: the config models, the quota diff and the policy pack
compare quotas with each other and with capacities, so a quantity must parse the way the
API server parses it: decimal and binary SI suffixes, decimal exponents, signs, and the bare
JSON numbers that reach a policy pack as floats after the engine's protobuf round trip.
The config keeps the user's spelling for the API; parsing is only for comparison.

Not kubernetes.utils.parse_quantity: it accepts what the API server refuses (" 1", "1K",
"1_000", "inf", True); tests/unit/kueue/test_quantity.py pins each case against apimachinery.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

__all__ = [
    "QUANTITY_HELP",
    "QuantityError",
    "format_number",
    "format_quantity",
    "parse_quantity",
]

QUANTITY_HELP = "a Kubernetes quantity such as 64, 500m, 512Gi or 1e3"

# Bounds that no quota, capacity or request comes near, so that parsing stays microseconds
# whatever a stack file or manifest holds: "1e30000000" (ten characters) would otherwise
# build a 30-million-digit number, and a 5,000-digit one trips Python's int conversion limit.
MAX_LENGTH = 64
MAX_EXPONENT = 64
MAX_MAGNITUDE = Fraction(10) ** 80

# Binary suffixes are powers of 1024, decimal suffixes powers of 10 (k8s.io/apimachinery
# resource.Quantity). "" means no suffix; "E" alone is exa, "E" followed by a number is an exponent.
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(
    rf"(?P<number>{_NUMBER})"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)"
    r"|[eE](?P<exponent>[+-]?[0-9]+)"
    r"|(?P<decimal>[numkMGTPE]?))"
)


class QuantityError(ValueError):
    """The value is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Return the exact value of a Kubernetes quantity, or raise QuantityError."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is a boolean, not a quantity")
    if isinstance(value, int):
        return _bounded(Fraction(value), value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"{value!r} is not a finite number")
        # repr gives the shortest decimal that round-trips, which is what the user wrote.
        return _bounded(Fraction(repr(value)), value)
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is a {type(value).__name__}, not a quantity")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """A quantity written as text, kept by its text: a mix of 15,000 Jobs writes a handful of
    quantities, each read by the shape check and again for the pod's requests (a Fraction is
    immutable; an error is raised again, never kept)."""
    if len(value) > MAX_LENGTH:
        raise QuantityError(
            f"{value[:20]!r}... ({len(value)} characters) is too long for a quantity "
            f"(at most {MAX_LENGTH})"
        )
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(
            f"{value!r} is not a quantity (expected e.g. 64, 500m, 512Gi, 1.5G, 1e3)"
        )
    number = Fraction(match["number"])
    if match["binary"] is not None:
        return _bounded(number * _BINARY[match["binary"]], value)
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(
                f"{value!r}: the exponent {exponent} is out of range (-{MAX_EXPONENT} to "
                f"{MAX_EXPONENT})"
            )
        return _bounded(number * Fraction(10) ** exponent, value)
    return _bounded(number * _DECIMAL[match["decimal"] or ""], value)


def _bounded(parsed: Fraction, value: object) -> Fraction:
    if abs(parsed) >= MAX_MAGNITUDE:
        raise QuantityError(f"{value!r} is too large for a quantity (at most 1e80)")
    return parsed


def format_number(value: Fraction) -> str:
    """Plain rendering for messages: integers as integers, the rest as decimals."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"


def format_quantity(value: Fraction) -> str:
    """A short human form for messages: whole numbers plainly, others in milli-units or Gi."""
    if value.denominator == 1:
        whole = value.numerator
        if whole != 0 and whole % 2**30 == 0:
            return f"{whole // 2**30}Gi"
        return str(whole)
    millis = value * 1000
    if millis.denominator == 1:
        return f"{millis.numerator}m"
    return str(float(value))
