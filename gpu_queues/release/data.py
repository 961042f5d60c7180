"""What a document of a Kueue manifest may hold: JSON data, as the API server stores it
(issue 24, item 6). YAML spells more than JSON can: timestamps (an unquoted 2020-01-01),
binary, sets, keys that are numbers, booleans or null, NaN and infinities. None of them is
Kubernetes data, and each used to crash the digest with a TypeError; nesting deeper than any
release's (35 levels) would overflow the comparison's recursion. `problem` finds the first,
without recursing itself.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any, Final

# A release's objects nest 35 levels deep (its CRD schemas); far more is not a release.
MAX_DEPTH: Final = 100
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def step(path: str, key: Any) -> str:
    """`path` one mapping key deeper: `a.b`, or `a["b/c"]` for keys that are not names."""
    key = str(key)
    if _NAME.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _what(value: Any) -> str | None:
    """Why a scalar is not JSON data; None when it is."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"is {value}, which JSON cannot hold"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "is a YAML timestamp, not a string (quote it)"
    if isinstance(value, bytes):
        return "is binary data (bytes, !!binary), not a string"
    if isinstance(value, (set, frozenset)):
        return "is a YAML set (!!set), not a list"
    return f"is a {type(value).__name__}, not JSON data"


_Link = tuple[Any, Any] | None  # (parent link, key or index): a path, spelt only when needed


def _spelt(link: _Link) -> str:
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    path = ""
    for key in reversed(keys):
        path = f"{path}[{key}]" if isinstance(key, int) else step(path, key)
    return path or "(the object)"


def problem(document: Any) -> str | None:
    """The first place where `document` is not JSON data, and why; None when it all is."""
    stack: list[tuple[Any, _Link, int]] = [(document, None, 0)]
    while stack:
        node, link, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"{_spelt(link)} is nested deeper than {MAX_DEPTH} levels; no release is"
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    return (
                        f"{_spelt(link)} has key {key!r} ({type(key).__name__}): Kubernetes "
                        "keys are strings (quote it)"
                    )
                if isinstance(value, (dict, list)):
                    stack.append((value, (link, key), depth + 1))
                elif (why := _what(value)) is not None:
                    return f"{_spelt((link, key))} {why}"
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, (dict, list)):
                    stack.append((item, (link, i), depth + 1))
                elif (why := _what(item)) is not None:
                    return f"{_spelt((link, i))} {why}"
        elif (why := _what(node)) is not None:
            return f"{_spelt(link)} {why}"
    return None
