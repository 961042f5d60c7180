"""The benchmark's generated mixes: the same seed gives the same mix, and every workload of
it is one the what-if replays, on the stack it was made for."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.whatif.mix import Catalog, load_mix
from gpu_queues.whatif.nodes import flavor_nodes
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


def _levels(raw: dict[str, Any]) -> dict[str, str]:
    """The flavor's Topology's levels, name to node label."""
    (flavor,) = raw["gpu-queues:flavors"]
    (topology,) = [t for t in raw["gpu-queues:topologies"] if t["name"] == flavor["topologyName"]]
    return {lv["name"]: lv["nodeLabel"] for lv in topology["levels"]}


@pytest.mark.parametrize("count", [200, 1000, 1250, 5000])
def test_the_fast_bench_fleet_splits_evenly_into_blocks_of_racks(count: int) -> None:
    """The GPU flavor's nodes, as both engines label them (gpu_queues/whatif/nodes.py): every
    rack RACK_NODES nodes, every block the same number of racks (at most BLOCK_RACKS), each
    node in one rack of one block, and still a whole number of nodes per team."""
    from sandbox.bench import whatif_fast as bench

    raw = bench.stack(bench.mix(count, seed=3))["config"]
    config = load_config({k.removeprefix("gpu-queues:"): v for k, v in raw.items()})
    levels = _levels(raw)
    assert list(levels) == ["block", "rack", "host"]
    assert levels["host"] == "kubernetes.io/hostname"
    nodes = [n for n in flavor_nodes(config) if n["metadata"]["name"].startswith("gpu-")]
    assert len(nodes) == raw["gpu-queues:flavors"][0]["nodes"]["count"]
    assert len(nodes) % len(config.teams) == 0
    racks: dict[str, set[str]] = {}
    blocks: dict[str, set[str]] = {}
    for n in nodes:
        labels = n["metadata"]["labels"]
        racks.setdefault(labels[levels["rack"]], set()).add(n["metadata"]["name"])
        blocks.setdefault(labels[levels["block"]], set()).add(labels[levels["rack"]])
    assert {len(r) for r in racks.values()} == {bench.RACK_NODES}
    (per_block,) = {len(b) for b in blocks.values()}
    assert per_block <= bench.BLOCK_RACKS
    assert len(blocks) * per_block * bench.RACK_NODES == len(nodes)


def test_every_fast_bench_jobset_asks_for_a_level_of_the_flavors_topology(tmp_path: Path) -> None:
    """A JobSet's workers require a rack when they fit in one, else prefer a block, by a
    level label of the flavor's Topology; its leader and the Jobs ask for nothing; every
    workload `ok` against the topology-aware stack."""
    from sandbox.bench import whatif_fast as bench

    jobs = bench.mix(1000, seed=5)
    raw = bench.stack(jobs)["config"]
    levels = _levels(raw)
    asked: set[str] = set()
    for j in jobs:
        if j["kind"] == "Job":
            assert "metadata" not in j["spec"]["template"]
            continue
        replicated = {r["name"]: r for r in j["spec"]["replicatedJobs"]}
        worker = replicated["workers"]["template"]["spec"]
        ((key, label),) = worker["template"]["metadata"]["annotations"].items()
        if worker["parallelism"] <= bench.RACK_NODES:
            assert (key, label) == ("kueue.x-k8s.io/podset-required-topology", levels["rack"])
        else:
            assert (key, label) == ("kueue.x-k8s.io/podset-preferred-topology", levels["block"])
        asked.add(key)
        if "leader" in replicated:
            assert "metadata" not in replicated["leader"]["template"]["spec"]["template"]
    assert len(asked) == 2
    config = load_config({k.removeprefix("gpu-queues:"): v for k, v in raw.items()})
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    entries = load_mix(path, Catalog.from_stack(config, _frameworks(config)))
    assert all(e.status == "ok" for e in entries)


# sha256 of Pulumi.bench.yaml and mix.yaml that the generator wrote for 1,000 workloads, seed 1,
# before the topology was added (7fe6f82), with JobSets and Jobs only.
BEFORE_TOPOLOGY = {
    0.1: (
        "d71674655be32044557aa243751ba9b807c4dbf0eaad3d7bdaf5588dba3bf1e8",
        "39e320ec2d17cb61b325465be25b32e04ed3f1330d596088a4a37e2a5884a687",
    ),
    0: (
        "9fe184f426d2ec79b1e9d369e27f8e1806320ed47c9361e47b0d11daf1636411",
        "eb325bae2d92c3da11a959b38f3db11158c33fa992e60275f765671cee535ad4",
    ),
}


@pytest.mark.parametrize("jobsets", [0.1, 0])
def test_the_fast_bench_without_topology_is_the_stack_and_mix_of_before(
    jobsets: float, tmp_path: Path
) -> None:
    """TAS=0 (--topology 0) writes the bytes of before; with the topology, the same mix but for the
    JobSets' workers' annotations and the same fleet but for the Topology."""
    from sandbox.bench import whatif_fast as bench

    root, _, _ = bench.prepare(1000, 1, tmp_path, jobsets, topology=False)
    digests = tuple(
        hashlib.sha256((root / f).read_bytes()).hexdigest()
        for f in ("Pulumi.bench.yaml", "mix.yaml")
    )
    assert digests == BEFORE_TOPOLOGY[jobsets]
    with_topology = bench.mix(1000, 1, jobsets)
    for j in with_topology:
        if j["kind"] == "JobSet":
            workers = j["spec"]["replicatedJobs"][-1]["template"]["spec"]["template"]
            del workers["metadata"]
    assert with_topology == bench.mix(1000, 1, jobsets, topology=False)
    raw = bench.stack(with_topology)["config"]
    del raw["gpu-queues:topologies"]
    (flavor,) = raw["gpu-queues:flavors"]
    del flavor["topologyName"], flavor["nodes"]["topology"]
    assert raw == bench.stack(with_topology, topology=False)["config"]
