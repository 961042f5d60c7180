"""Durations as the what-if writes them: numbers with units d, h, m, s, combined as in Go
(1h30m, 90s, 1.5h, 1d), read from a mix's annotations and shown in its report.
"""

from __future__ import annotations

import math
import re
from typing import Final

from gpu_queues.kueue.fields import GO_DURATION_MAX_SECONDS

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(d|h|m|s)")
_UNIT_SECONDS: Final = {"d": 86400, "h": 3600, "m": 60, "s": 1}


class DurationError(ValueError):
    """A duration the replay cannot read."""


def parse_duration(text: object) -> float:
    """Seconds in `2h`, `1h30m`, `90s`, `1.5h`, `1d`, `0s`; DurationError otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise DurationError(f"{text!r} is not a duration (write e.g. 90s, 15m, 2h, 1h30m, 1d)")
    s = text.strip()
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(s):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(s) or pos == 0:
        raise DurationError(
            f"{text!r} is not a duration (numbers with units d, h, m or s, e.g. 90s, 15m, "
            "2h, 1h30m, 1d)"
        )
    if not math.isfinite(total) or total > GO_DURATION_MAX_SECONDS:
        raise DurationError(
            f"{text!r} is longer than Go's time.Duration holds (about 292 years), which "
            "Kubernetes, Kueue and the engines count time in"
        )
    return total


def format_duration(seconds: float | None) -> str:
    """`2h10m`, `45s`, `1d3h`; `-` for None. Rounded to the second."""
    if seconds is None:
        return "-"
    left = round(seconds)
    if left == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts[:2])  # two units are plenty for a wait (1d3h, 2h10m, 5m30s)
