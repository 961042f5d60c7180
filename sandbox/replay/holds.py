"""Every workload's hold on quota as the replay's watch saw it, change by change (`Holds`): when
each came to hold quota, and when Kueue evicted it.

An eviction is read from two signs, whichever comes first, and counted once per hold: the
Workload comes to carry Evicted=True or Preempted=True (Kueue writes them before it acts), or it
loses its quota other than by finishing. The first alone is enough for a preempted replica of a
Deployment: Kueue deletes its pod, and its Workload may reach the watch already finished, or only
as deleted, its last state before that still holding quota (seen on CI); the conditions it
carried are the only trace of the eviction then. Neither counts for a workload the replay
deleted when its time was up (gpu_queues.whatif.mix.DELETED_WHEN_DONE): that is its end.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Final

from gpu_queues.whatif.workloads import (
    admitted_flavor,
    eviction,
    finished_done,
    holds_quota,
    is_true,
)

# Kueue's conditions on a Workload it evicts (Preempted too when preemption is why).
EVICTION_CONDITIONS: Final = ("Evicted", "Preempted")
# One step: (simulated second, "admitted" or "evicted", flavor or reason, "reason: message").
Step = tuple[float, str, str, str]


def eviction_marks(wl: dict[str, Any]) -> frozenset[str]:
    """The eviction conditions the Workload carries as True."""
    return frozenset(c for c in EVICTION_CONDITIONS if is_true(wl, c))


@dataclass
class Holds:
    """The steps of each workload (by the UID the replay knows it by: Owners.key) and the order
    of the admissions among all; the watch's thread writes them, the replay reads them under
    `lock`."""

    steps: dict[str, list[Step]] = field(default_factory=dict)
    admission_order: dict[str, list[int]] = field(default_factory=dict)
    """Each workload's admissions' places among all (re-admissions included)."""
    workload_uids: dict[str, str] = field(default_factory=dict)
    """Each workload's Workload UID (the last seen)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    admitted: int = 0
    """Admissions seen so far."""
    _holds: dict[str, bool] = field(default_factory=dict)
    _evicted: set[str] = field(default_factory=set)
    """The workloads whose current hold's eviction is recorded."""
    _marks: dict[str, frozenset[str]] = field(default_factory=dict)
    """Each Workload's (by its own UID) eviction conditions when last seen."""

    def seen(self, key: str, wl: dict[str, Any], now: float, deleted_at_its_end: bool) -> None:
        """The Workload of workload `key` as a change left it (or as it was when deleted), at
        simulated second `now`; `deleted_at_its_end`: the replay deleted its owner at its
        time."""
        holds = holds_quota(wl)
        wl_uid = str((wl.get("metadata") or {}).get("uid") or "")
        marks = eviction_marks(wl)
        with self.lock:
            held = self._holds.get(key, False)
            new_marks = marks - self._marks.get(wl_uid, frozenset())
            self._marks[wl_uid] = marks
            self.workload_uids[key] = wl_uid
            steps = self.steps.setdefault(key, [])
            if holds and not held:
                steps.append((now, "admitted", admitted_flavor(wl) or "", ""))
                self.admitted += 1
                self.admission_order.setdefault(key, []).append(self.admitted)
                self._evicted.discard(key)
            elif held and key not in self._evicted and not deleted_at_its_end:
                lost = not holds and not finished_done(wl)
                if new_marks or lost:
                    why = eviction(wl)
                    said = f"{why[0]}: {why[1]}" if why else "evicted"
                    steps.append((now, "evicted", why[0] if why else "", said))
                    self._evicted.add(key)
            self._holds[key] = holds
