"""The benchmark's generated mixes: the same seed gives the same mix, and every workload of
it is one the what-if replays, on the stack it was made for."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.whatif.mix import Catalog, load_mix
from sandbox.bench.whatif_mixes import mix

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("stack", ["staging", "prod", "dev"])
def test_a_generated_mix_replays_whole_and_is_the_same_for_a_seed(
    stack: str, tmp_path: Path
) -> None:
    jobs = mix(stack, 60, seed=7)
    assert jobs == mix(stack, 60, seed=7) and jobs != mix(stack, 60, seed=8)
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    config = load_config(read_config(stack))
    entries = load_mix(path, Catalog.from_stack(config, ["batch/job"]))
    assert [e.status for e in entries] == ["ok"] * 60
    assert {e.team for e in entries} == {t.name for t in config.teams}
    assert max(e.submit_at for e in entries) < 86400
