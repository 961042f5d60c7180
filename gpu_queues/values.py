"""Reading raw, unvalidated values (a stack file's YAML, a Kubernetes object, a workload
manifest) without trusting their shape: a value of the wrong type reads as empty, so a check
can go on and report what is wrong instead of raising. One home for every such reader."""

from __future__ import annotations

from typing import Any


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
