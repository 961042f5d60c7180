"""What the sandbox's replay counts as the cluster changing (sandbox/replay/watch.py), without a
cluster: the Workload informer's count of its watch events. A settle ends after a quiet spell
with no change counted, so what counts decides when the replay moves on."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.replay.watch import watching

pytestmark = pytest.mark.unit


def pending(message: str, uid: str = "w1") -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "name": uid, "namespace": "nlp"},
        "spec": {"queueName": "nlp-lq"},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
                                   "reason": "Pending", "message": message,
                                   "lastTransitionTime": "2026-12-06T14:09:58Z"}]},
    }  # fmt: skip


def counted(events: list[dict[str, Any]]) -> list[bool]:
    informer = watching("workloads", lambda: None, lambda _: None)
    return [informer._counts("MODIFIED", wl) for wl in events]


def test_each_new_message_of_a_pending_workload_counts_once_per_settle() -> None:
    """Kueue's walk of a ClusterQueue's requeued workloads, one head per cycle: each rewrites its
    message ("3 more needed" where it said 4). Each is Kueue at work: it counts; the same
    message again, rewritten with a new timestamp only, does not."""
    informer = watching("workloads", lambda: None, lambda _: None)
    four, three = "insufficient unused quota ..., 4 more needed", "..., 3 more needed"
    assert informer._counts("ADDED", pending(four)) is True
    assert informer._counts("MODIFIED", pending(three)) is True
    assert informer._counts("MODIFIED", pending(three)) is False
    assert informer._counts("MODIFIED", pending(four, uid="w2")) is True  # another workload


def test_a_strict_fifo_head_s_round_of_messages_goes_quiet_and_counts_again_next_settle() -> None:
    """A StrictFIFO head that can never fit is retried every cycle, its message naming whichever
    resource a Go map gave first: once it has had both in a settle, its rewrites are quiet;
    after `forget_wordings` (the next settle's start) its first ones count again."""
    informer = watching("workloads", lambda: None, lambda _: None)
    cpu, gpu = "insufficient quota for cpu", "insufficient quota for nvidia.com/gpu"
    assert [informer._counts("MODIFIED", pending(m)) for m in (cpu, gpu, cpu, gpu, cpu)] == [
        True, True, False, False, False
    ]  # fmt: skip
    informer.forget_wordings()
    assert informer._counts("MODIFIED", pending(gpu)) is True


def test_other_kinds_count_every_write_and_a_deletion_always_counts() -> None:
    pods = watching("pods", lambda: None, lambda _: None)
    pod = {"metadata": {"uid": "p1"}, "status": {"phase": "Running"}}
    assert [pods._counts("MODIFIED", pod) for _ in range(2)] == [True, True]
    assert counted([pending("x"), pending("x")]) == [True, False]
    workloads = watching("workloads", lambda: None, lambda _: None)
    workloads._counts("ADDED", pending("x"))
    assert workloads._counts("DELETED", pending("x")) is True
