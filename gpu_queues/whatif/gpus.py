"""What a pod asks for (its containers together, or its largest init container) and the GPUs
of it a workload holds, and GPU-hours of a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from gpu_queues.kueue.fields import is_gpu
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.values import as_dict, as_list

__all__ = ["gpu_hours", "is_gpu", "pod_gpus", "pod_requests"]


def pod_requests(pod_spec: Any) -> dict[str, Fraction]:
    """What one pod asks for, per resource, as Kueue counts it: its containers' together, or its
    largest init container's, whichever is more. A container's request is its `requests`
    entry, else its `limits` one (the API server's default; an extended resource's request
    equals its limit). A quantity that does not parse counts as nothing (the mix's checks
    refuse it first)."""

    def per_container(c: Any) -> dict[str, Fraction]:
        res = c.get("resources") if isinstance(c, Mapping) else None
        if not isinstance(res, Mapping):
            return {}
        got: dict[str, Fraction] = {}
        for part in ("limits", "requests"):  # a request wins over a limit
            amounts = res.get(part)
            if not isinstance(amounts, Mapping):
                continue
            for name, value in amounts.items():
                try:
                    got[str(name)] = parse_quantity(value)
                except QuantityError:
                    continue
        return got

    spec = as_dict(pod_spec)
    total: dict[str, Fraction] = {}
    for c in as_list(spec.get("containers")):
        for name, value in per_container(c).items():
            total[name] = total.get(name, Fraction(0)) + value
    for c in as_list(spec.get("initContainers")):
        for name, value in per_container(c).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    return total


def pod_gpus(pod_spec: Any) -> int:
    """GPUs one pod holds (`pod_requests`, over every GPU resource)."""
    return sum(math.ceil(v) for r, v in pod_requests(pod_spec).items() if is_gpu(r))


def gpu_hours(gpus: int, seconds: float) -> Fraction:
    return Fraction(gpus) * Fraction(seconds).limit_denominator(1000) / 3600
