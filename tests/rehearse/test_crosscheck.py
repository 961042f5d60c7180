"""The randomized cross-check in `make test`: a few fixed seeds of generated stacks and mixes
(sandbox/crosscheck/generate.py), each replayed on both what-if engines, must tell the same
story workload by workload (gpu_queues.whatif.agreement). `make crosscheck SEEDS=N` runs as many
as you like; docs/what-if.md has the record of the long runs. Minutes each."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.crosscheck.run import check_seed

pytestmark = pytest.mark.rehearse

# Two of the smaller mixes the generator gives (20 and 21 jobs), its first with JobSets (21
# workloads, 2 JobSets: one that never fits, whose attempts flavor after flavor the fast engine
# once took for rest), and one of every kind both engines replay (29 workloads: Jobs, JobSets,
# pod groups, a LeaderWorkerSet, StatefulSets and Deployments).
SEEDS = (79, 41, 600, 709)
# And one of the operators' kinds (seeds from 800 on: each made by its own operator on the
# sandbox, the training-operator's, the MPI operator's, the Trainer's; 24 workloads: a
# PyTorchJob, 4 MPIJobs, 2 TrainJobs, a StatefulSet and a Deployment), in a suite of its own so
# that it runs in another lane than the seeds above (its id says `operators`, tests/suites.py).
OPERATOR_SEEDS = (802,)
CASES = [*SEEDS, *(pytest.param(seed, id=f"operators-{seed}") for seed in OPERATOR_SEEDS)]


@pytest.mark.parametrize("seed", CASES)
def test_a_generated_day_replays_the_same_on_both_engines(seed: int, tmp_path: Path):
    result = check_seed(seed, None, tmp_path)
    assert result.workloads >= 20
    # Where the runs part at a tie a cluster breaks by the wall clock (agreement.tie_reason: the
    # second each of two equal workloads was admitted in), nothing after it compares.
    assert result.agrees or result.tie, result.text
