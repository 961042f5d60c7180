"""A positive signal that Kueue has made its decisions after a change, for the e2e checks
that something does *not* happen (a held job stays held, an admitted one is not evicted).

Looking again after a sleep proves nothing on a slow machine: Kueue may not have looked yet.
Instead a probe, a job submitted to the same LocalQueue after the change, is waited for until
Kueue has decided it (its Workload carries a QuotaReserved condition). Kueue orders a
ClusterQueue's queue by priority, then by creation time, and puts its inadmissible workloads
back in that queue when a change could let them in: the probe, created last at the same
priority, is decided after anything the change made admissible, by the controller running now.
The caller then checks that the state is still the one it expects.

The probe must not have the shape of a held workload (here: another GPU count). Kueue v0.18
sets aside a workload of the same scheduling shape as one found inadmissible, undecided
(SchedulingEquivalenceHashing, on by default): such a probe never gets its condition.
"""

from __future__ import annotations

from typing import Any

from sandbox.walkthrough import KubeSession, condition, job


def quota_held(flavor: str, more: int) -> str:
    """Kueue's message on a one-pod-set Job's Workload held for want of GPUs in a flavor."""
    return (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        f"in flavor {flavor}, {more} more needed"
    )


def probe(
    k: KubeSession, name: str, *, namespace: str, queue: str, gpus: int, claim: str | None = None
) -> dict[str, Any]:
    """Submit the probe job and return its QuotaReserved condition once Kueue has set it."""
    k.submit(job(name, namespace=namespace, queue=queue, gpus=gpus, claim=claim))
    decided: dict[str, Any] = k.wait(
        f"Kueue's decision on the probe {name}",
        lambda: condition(k.workload_for(name, namespace), "QuotaReserved"),
        namespace=namespace,
        timeout=90,
    )
    return decided


def remove_probe(k: KubeSession, name: str, *, namespace: str) -> None:
    """Delete the probe and wait until its Workload is gone (it holds no quota any more)."""
    k.delete_job(name, namespace)
    k.wait(
        f"the probe {name}'s workload gone",
        lambda: k.workload_for(name, namespace) is None or None,
        namespace=namespace,
    )
