"""Kubernetes resource quantities: parse for comparison, keep the user's spelling for the API."""

from __future__ import annotations

import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

QUANTITY_HELP = "a Kubernetes quantity such as 64, 500m, 512Gi or 1e3"


def parse_quantity(text: str) -> Fraction:
    """Exact value of a quantity; ValueError when `text` is not one."""
    match = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if match is None or text.strip() != text:
        raise ValueError(f"{text!r} is not {QUANTITY_HELP}")
    number = Fraction(match["num"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * Fraction(1024) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def format_number(value: Fraction) -> str:
    """Plain rendering for messages: integers as integers, the rest as decimals."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):g}"
