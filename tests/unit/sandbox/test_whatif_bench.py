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


@pytest.mark.parametrize("count", [200, 1000, 5000, 20000])
def test_the_fast_bench_grows_the_fleet_with_the_mix(count: int, tmp_path: Path) -> None:
    """A team per 250 workloads a day (at least four), in cohorts of at most 8; each team a
    whole number of 8-GPU nodes; the stack valid and every workload of the mix one it replays."""
    from sandbox.bench import whatif_fast as bench

    jobs = bench.mix(count, seed=3)
    raw = bench.stack(jobs)["config"]
    config = load_config({k.removeprefix("gpu-queues:"): v for k, v in raw.items()})
    teams = max(4, -(-count // 250))
    assert len(config.teams) == teams
    members: dict[str | None, int] = {}
    for t in config.teams:
        members[t.cohort] = members.get(t.cohort, 0) + 1
    assert max(members.values()) <= 8 and max(members.values()) - min(members.values()) <= 1
    nodes = raw["gpu-queues:flavors"][0]["nodes"]["count"]
    assert nodes % teams == 0
    busy = bench.gpu_hours(jobs) / 24 / (nodes * 8)
    assert 0.8 < busy <= 0.9  # as busy a cluster at every size
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    entries = load_mix(path, Catalog.from_stack(config, ["batch/job"]))
    assert all(e.status == "ok" for e in entries)
    assert {e.team for e in entries} == {t.name for t in config.teams}
