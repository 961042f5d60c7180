"""The stack's changes at an instant of the sandbox's replay (gpu_queues.whatif.changes): each
object's spec replaced, in the change's order, as the fast engine does
(toolchain/go/whatif/changes.go), and the wait until Kueue's controllers have judged them;
Kueue's controllers do the rest (HoldAndDrain evicts through its workload controller)."""

from __future__ import annotations

import time
from typing import Any, Final

from gpu_queues.whatif.changes import StackChange
from gpu_queues.whatif.workloads import Rest

KUEUE_API: Final = "/apis/kueue.x-k8s.io/v1beta2"


def write(rest: Rest, c: StackChange) -> dict[str, int]:
    """Replace each object's spec; the generation each queue's new spec has, by its path."""
    written: dict[str, int] = {}
    for obj in c.objects:
        meta = obj["metadata"]
        plural = f"{str(obj['kind']).lower()}s"
        where = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        path = f"{KUEUE_API}{where}/{plural}/{meta['name']}"
        current = rest.get(path)
        current["spec"] = obj.get("spec") or {}
        stored = rest.replace(path, current)
        if obj["kind"] != "Cohort":  # Cohorts have no condition to tell it by
            written[path] = int((stored.get("metadata") or {}).get("generation") or 0)
    return written


def until_observed(rest: Rest, written: dict[str, int], cap: float) -> list[str]:
    """Wait until Kueue's controllers have judged each queue's new spec: its Active
    condition's observedGeneration reaches the generation the change wrote. The paths of those
    they had not judged `cap` seconds on."""
    deadline = time.monotonic() + cap
    pending = dict(written)
    while pending and time.monotonic() < deadline:
        for path, generation in list(pending.items()):
            status = rest.get(path).get("status") or {}
            active: dict[str, Any] = next(
                (c for c in status.get("conditions") or [] if c.get("type") == "Active"), {}
            )
            if int(active.get("observedGeneration") or 0) >= generation:
                del pending[path]
        time.sleep(0.05)
    return sorted(pending)
