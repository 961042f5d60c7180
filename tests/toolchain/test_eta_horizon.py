"""Start-time estimates with a horizon (`gpuq status --eta --horizon`, gpu_queues/tools/eta.py)
tell the same story up to the horizon as a replay of the whole backlog: every pending
workload the long replay admits by then is admitted at the same second on the same flavor,
and every other one is "not within" the horizon. A prod snapshot with 60 pending workloads,
all submitted at the replay's first instant across three ClusterQueues in one fair-sharing
cohort: the case in which Kueue's ties across ClusterQueues decide (before the engine put them
in name order, two runs of it did not agree, with or without a horizon).

The engine must be built (`make toolchain`)."""

from __future__ import annotations

import pytest

from gpu_queues.config.stackfile import ROOT
from gpu_queues.tools import eta
from gpu_queues.whatif.nodes import nodes
from sandbox.bench.eta import owner_of, synthetic
from sandbox.shape import load_stack

pytestmark = pytest.mark.toolchain

NOW = 1_800_000_000.0
HORIZON = 2 * 3600.0


def estimates(horizon: float | None) -> dict[str, eta.Prediction]:
    config = load_stack(ROOT / "Pulumi.prod.yaml")
    snapshot, jobs = synthetic(config, 60, 3, NOW)
    estimate = eta.predict(
        config, snapshot, owner_of(jobs), nodes(config), source="test", horizon=horizon
    )
    return {p.item.name: p for p in estimate.predictions}


def test_a_horizon_changes_nothing_before_it() -> None:
    whole, ahead = estimates(None), estimates(HORIZON)
    assert list(ahead) == list(whole)
    within = {n for n, p in whole.items() if p.at is not None and p.at <= NOW + HORIZON}
    later = set(whole) - within
    assert within and later  # the snapshot has both, or the test proves nothing
    assert {n: (ahead[n].at, ahead[n].flavor) for n in within} == {
        n: (whole[n].at, whole[n].flavor) for n in within
    }
    assert {n: ahead[n].at for n in later} == dict.fromkeys(later)
    for n in later:
        assert (ahead[n].why or "").startswith("not within 2h (the replay looks that far ahead"), n


def test_the_same_snapshot_gives_the_same_estimates_every_time() -> None:
    first = estimates(HORIZON)
    again = estimates(HORIZON)
    assert {n: (p.at, p.flavor, p.why) for n, p in again.items()} == {
        n: (p.at, p.flavor, p.why) for n, p in first.items()
    }
