"""The benchmark's generated mixes: the same seed gives the same mix, and every workload of
it is one the what-if replays, on the stack it was made for."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.whatif.mix import Catalog, load_mix
from gpu_queues.whatif.podsets import pod_sets
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


def _frameworks(config: StackConfig) -> list[str]:
    integrations = config.kueue.manager.integrations
    return list((integrations.frameworks if integrations else None) or ["batch/job"])


@pytest.mark.parametrize("count", [200, 1000, 5000, 20000])
@pytest.mark.parametrize("jobsets", [0.1, 0])
def test_the_fast_bench_grows_the_fleet_with_the_mix(
    count: int, jobsets: float, tmp_path: Path
) -> None:
    """A team per 250 workloads a day (at least four), in cohorts of at most 8; each team a
    whole number of 8-GPU nodes; the stack valid and every workload of the mix one it replays.
    As busy a cluster at every size, but for a small fleet with JobSets, made larger so that
    each team can hold the largest of them."""
    from sandbox.bench import whatif_fast as bench

    jobs = bench.mix(count, seed=3, jobsets=jobsets)
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
    share = nodes * 8 // teams
    largest = max(bench.workload_gpus(j) for j in jobs)
    assert share + share // 2 >= largest  # every workload can start
    if count >= 1000 or not jobsets:
        assert 0.8 < busy <= 0.9
    else:  # one node fewer a team and the largest JobSet could never start
        assert busy <= 0.9 and (share - 8) + (share - 8) // 2 < largest
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    entries = load_mix(path, Catalog.from_stack(config, _frameworks(config)))
    assert all(e.status == "ok" for e in entries)
    assert {e.team for e in entries} == {t.name for t in config.teams}


def test_the_fast_bench_mix_has_a_tenth_of_multi_node_jobsets(tmp_path: Path) -> None:
    """The same seed, the same mix; a tenth of the workloads (within three standard deviations)
    JobSets of a worker Job of 2 to 16 pods of a whole 8-GPU node each, some with a 1-pod CPU
    leader; the stack enables Kueue's JobSet integration and checks every JobSet `ok`, and
    Kueue makes each one Workload of all its pods. With no JobSets the mix is the Jobs-only
    one, each Job the one the mix with JobSets has at its place."""
    from sandbox.bench import whatif_fast as bench

    count = 1000
    jobs = bench.mix(count, seed=5)
    assert jobs == bench.mix(count, seed=5) and jobs != bench.mix(count, seed=6)
    multi = [j for j in jobs if j["kind"] == "JobSet"]
    assert abs(len(multi) / count - bench.JOBSET_SHARE) < 3 * (0.1 * 0.9 / count) ** 0.5
    leaders = 0
    for j in multi:
        sets = {p.name: p for p in pod_sets("JobSet", j)}
        assert set(sets) in ({"workers"}, {"leader", "workers"})
        workers = sets["workers"]
        assert 2 <= workers.count <= 16
        (container,) = workers.spec["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}  # a whole node
        if "leader" in sets:
            leaders += 1
            assert sets["leader"].count == 1
            assert "limits" not in sets["leader"].spec["containers"][0]["resources"]
        assert bench.workload_gpus(j) == 8 * workers.count
    assert 0.3 < leaders / len(multi) < 0.7
    assert {bench.workload_gpus(j) // 8 for j in multi} == set(bench.JOBSET_PODS)

    raw = bench.stack(jobs)["config"]
    config = load_config({k.removeprefix("gpu-queues:"): v for k, v in raw.items()})
    assert "jobset.x-k8s.io/jobset" in _frameworks(config)
    assert raw["gpu-queues:flavors"][0]["nodes"]["resources"]["nvidia.com/gpu"] == 8
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(multi))
    entries = load_mix(path, Catalog.from_stack(config, _frameworks(config)))
    assert [e.status for e in entries] == ["ok"] * len(multi)

    jobs_only = bench.mix(count, seed=5, jobsets=0)
    assert all(j["kind"] == "Job" for j in jobs_only)
    assert "gpu-queues:kueue" not in bench.stack(jobs_only)["config"]
    for j, before in zip(jobs, jobs_only, strict=True):
        if j["kind"] == "Job":
            assert j == before
        else:  # the same duration, priority and submission, as a JobSet
            assert j["metadata"]["annotations"] == before["metadata"]["annotations"]
            assert j["metadata"]["labels"] == before["metadata"]["labels"]
