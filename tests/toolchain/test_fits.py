"""Never fitting, found before the replay (gpu_queues/whatif/fits.py), with Kueue's own code as
the judge: on stacks and mixes nobody wrote (the cross-check's generator,
sandbox/crosscheck/generate.py: a flat cohort, an organisation of cohorts with their own
quotas and limits, JobSets), each workload is replayed alone on the empty cluster on the fast
engine, and the check must say "never" exactly for those Kueue never admits or whose pods fit
no node there. Each shape (ClusterQueue, kind, pod sets) is replayed once. The engine must be
built (`make toolchain`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.render import kueue_objects
from gpu_queues.config.stackfile import parse_config
from gpu_queues.whatif import fast
from gpu_queues.whatif.engine_input import frameworks, manager_configuration
from gpu_queues.whatif.fits import Ceilings
from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from gpu_queues.whatif.nodes import nodes
from gpu_queues.whatif.podsets import pod_sets
from sandbox.crosscheck.generate import generate

pytestmark = pytest.mark.toolchain

ALONE = 60.0
"""Seconds of the replay alone: Kueue admits a workload on an empty cluster in its first
scheduling cycle or never."""


def shape(e: Entry) -> str:
    sets = [(s.count, s.spec) for s in pod_sets(e.kind, e.manifest)]
    return json.dumps([e.cluster_queue, e.kind, sets], sort_keys=True)


# 600: JobSets and a flat cohort, with five workloads over a maximum capacity (cpu, memory and
# GPUs); 302: an organisation (cohorts with quotas, borrowing and lending limits), two.
@pytest.mark.parametrize("seed", [600, 302])
def test_never_is_said_exactly_of_what_kueue_never_runs_alone(seed: int, tmp_path: Path) -> None:
    case = generate(seed)
    config = load_config(parse_config(case.stack_text, case.stack))
    configuration = manager_configuration(config)
    mix = tmp_path / "mix.yaml"
    mix.write_text(case.mix_text)
    entries = load_mix(mix, Catalog.from_stack(config, frameworks(configuration)))
    ceilings = Ceilings(kueue_objects(config), nodes(config))
    seen: set[str] = set()
    judged = never = 0
    wrong: list[str] = []
    for e in entries:
        if e.status != "ok" or shape(e) in seen:
            continue
        seen.add(shape(e))
        alone = replace(e, index=0, submit_at=0.0)
        (w,) = fast.replay_entries(
            config, [alone], configuration, stack=case.stack, label="alone", until=ALONE
        ).workloads
        kueue_never = w.wait_seconds is None or w.outcome == "unschedulable"
        said = ceilings.never(e)
        judged += 1
        never += kueue_never
        if kueue_never != (said is not None):
            wrong.append(f"{e.namespace}/{e.name}: Kueue {w.outcome} ({w.message}); check: {said}")
    assert not wrong, "\n".join(wrong)
    assert judged >= 15 and never >= 2, (judged, never)  # the seeds hold both kinds
