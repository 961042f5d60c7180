"""Reading resource properties safely while some of them are still unknown.

During `pulumi preview` the engine hands policies the resource's inputs wrapped in
pulumi_policy's unknown-checking proxy: reading a value that is not known yet raises
UnknownValueError, which would abort the whole policy. Rules instead convert the props to plain
data once, with every unknown value replaced by the UNKNOWN marker, and skip only the checks
that need a value that is not known. `pulumi up` runs the policies again with known values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

# One marker for the whole project: the validation core skips checks on it.
from gpu_queues.kueue.errors import UNKNOWN, Unknown, child, is_unknown

__all__ = ["UNKNOWN", "Unknown", "child", "is_unknown", "plain"]

_SENTINELS: Final = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)


def plain(value: Any) -> Any:
    """Deep-copy props (proxied or not) into dicts, lists and scalars, unknowns as UNKNOWN."""
    if isinstance(value, str):
        return UNKNOWN if value in _SENTINELS else value
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for key in value:
            try:
                result[str(key)] = plain(value[key])
            except UnknownValueError:
                result[str(key)] = UNKNOWN
        return result
    if isinstance(value, Sequence):
        items: list[Any] = []
        for index in range(len(value)):
            try:
                items.append(plain(value[index]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value
