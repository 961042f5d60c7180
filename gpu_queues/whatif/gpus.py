"""What GPUs a workload holds: per pod (its containers together, or its largest init
container), and GPU-hours of a run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from gpu_queues.kueue.fields import is_gpu
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.values import as_dict, as_list

__all__ = ["gpu_hours", "is_gpu", "pod_gpus"]


def pod_gpus(pod_spec: Any) -> int:
    """GPUs one pod holds: its containers' together, or its largest init container's.
    An extended resource's request equals its limit; either may be written."""

    def per_container(c: Any) -> int:
        res = c.get("resources") if isinstance(c, Mapping) else None
        if not isinstance(res, Mapping):
            return 0
        total = 0
        for part in ("limits", "requests"):
            amounts = res.get(part)
            if not isinstance(amounts, Mapping):
                continue
            got = 0
            for name, value in amounts.items():
                if is_gpu(str(name)):
                    try:
                        got += math.ceil(parse_quantity(value))
                    except QuantityError:
                        continue
            total = max(total, got)
        return total

    spec = as_dict(pod_spec)
    containers = [per_container(c) for c in as_list(spec.get("containers"))]
    inits = [per_container(c) for c in as_list(spec.get("initContainers"))]
    return max(sum(containers), max(inits, default=0))


def gpu_hours(gpus: int, seconds: float) -> Fraction:
    return Fraction(gpus) * Fraction(seconds).limit_denominator(1000) / 3600
