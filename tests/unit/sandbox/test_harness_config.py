"""Kueue's scheduler performance harness configurations as a what-if stack and mix
(sandbox/bench/harness_config.py, for make bench-kueue-harness): a small generator.yaml gives a
stack the program's models accept and a mix the what-if reads whole, with the ClusterQueues,
counts, times, priorities and requests the generator says. No toolchain needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.whatif.mix import Catalog, load_mix
from sandbox.bench.harness_config import HarnessConfigError, convert, seconds

pytestmark = pytest.mark.unit

# The shape of the harness's baseline, smaller: 2 cohorts of 3 queues, two workload sets.
SMALL = """
cohorts:
  - className: cohort
    count: 2
    queuesSets:
    - className: cq
      count: 3
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 4
        creationIntervalMs: 100
        workloads:
        - className: small
          runtimeMs: 200
          priority: 50
          request: 1
      - count: 2
        creationIntervalMs: 1200
        workloads:
        - className: large
          runtimeMs: 1000
          priority: 200
          request: 20
"""

# The tas shape, smaller: a topology of 1 block x 2 racks x 3 nodes, pods per workload.
TAS = """
topology:
  name: default-topology
  levels:
    - {name: block, count: 1, nodeLabel: cloud.provider.com/topology-block}
    - {name: rack, count: 2, nodeLabel: cloud.provider.com/topology-rack}
    - name: node
      count: 3
      nodeLabel: kubernetes.io/hostname
      capacity: {cpu: "96", memory: "256Gi"}
resourceFlavor:
  name: tas-flavor
  nodeLabel: tas-node-group
  topologyName: default-topology
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 2
      nominalQuota: "20"
      borrowingLimit: "100"
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 3
        creationIntervalMs: 500
        workloads:
        - className: medium-required-rack
          runtimeMs: 500
          priority: 100
          request: "1250m"
          podCount: 4
          tasConstraint: required
          tasLevel: cloud.provider.com/topology-rack
"""


def replayable(converted: Any, tmp_path: Path) -> list[Any]:
    config = load_config(
        {k.removeprefix("gpu-queues:"): v for k, v in converted.stack["config"].items()}
    )
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(converted.jobs, sort_keys=False))
    entries = load_mix(path, Catalog.from_stack(config, ["batch/job"]))
    assert [e.status for e in entries] == ["ok"] * len(converted.jobs)
    return entries


def test_a_small_generator_config_is_a_valid_stack_and_a_whole_mix(tmp_path: Path) -> None:
    converted = convert(yaml.safe_load(SMALL))
    config = converted.stack["config"]
    # 2 cohorts x 3 queues, named as the harness names them, each its own namespace and queue
    names = [t["clusterQueue"] for t in config["gpu-queues:teams"]]
    assert names == [f"cq-0-{q}-cohort-{c}" for c in range(2) for q in range(3)]
    assert [c["name"] for c in config["gpu-queues:cohorts"]] == ["cohort-0", "cohort-1"]
    team = config["gpu-queues:teams"][4]
    assert team["namespace"] == team["localQueue"] == team["clusterQueue"] == "cq-0-1-cohort-1"
    assert team["cohort"] == "cohort-1"
    assert team["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
    }
    cpu = team["resourceGroups"][0]["flavors"][0]["resources"]["cpu"]
    assert cpu == {"nominalQuota": "20", "borrowingLimit": "100"}
    assert team["resourceGroups"][0]["flavors"][0]["name"] == "rf"
    assert config["gpu-queues:priorityClasses"] == [
        {"name": "p50", "value": 50},
        {"name": "p200", "value": 200},
    ]
    entries = replayable(converted, tmp_path)
    assert len(entries) == 6 * (4 + 2)
    # each set's k-th workload (from 0) at (k + 1) x its interval, in submission order
    one_queue = [e for e in entries if e.namespace == "cq-0-0-cohort-0"]
    small = [e for e in one_queue if e.name.startswith("small-")]
    large = [e for e in one_queue if e.name.startswith("large-")]
    assert [e.name for e in small] == [f"small-0-{k}-0" for k in range(4)]
    assert [e.submit_at for e in small] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert [e.submit_at for e in large] == pytest.approx([1.2, 2.4])
    assert [e.duration for e in small] == pytest.approx([0.2] * 4)
    assert [e.duration for e in large] == pytest.approx([1.0] * 2)
    assert [e.submit_at for e in entries] == sorted(e.submit_at for e in entries)
    job = next(j for j in converted.jobs if j["metadata"]["name"] == "large-1-0-0")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "p200"
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 1
    requests = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "20"}


def test_nodes_never_stop_an_admission_without_a_topology() -> None:
    """The harness makes no nodes without a topology (minimalkueue admits by quota): the
    engine's nodes hold twice the quota, each node twice the largest request or more, so
    every pod of an admitted job finds room, by cpu and by pod count."""
    converted = convert(yaml.safe_load(SMALL))
    nodes = converted.stack["config"]["gpu-queues:flavors"][0]["nodes"]
    quota = sum(q.nominal_millis for q in converted.queues)
    assert quota == 6 * 20_000
    node_cpu = int(nodes["resources"]["cpu"]) * 1000
    assert node_cpu >= 2 * 20_000
    assert nodes["count"] * node_cpu >= 2 * quota
    assert nodes["count"] * 110 > quota / 1000  # quota full of 1-cpu pods


def test_the_tas_config_keeps_its_nodes_pods_and_topology(tmp_path: Path) -> None:
    """The harness's 1 x 2 x 3 nodes, its Topology's levels in order, the flavor naming it and
    its nodes split as the generator nests them (the hostname level a node each); each Job's
    pods ask what its class's tasConstraint asks, by the annotation Kueue's Job integration
    reads into the same pod-set request."""
    converted = convert(yaml.safe_load(TAS))
    assert converted.topology
    config = converted.stack["config"]
    (flavor,) = config["gpu-queues:flavors"]
    assert flavor == {
        "name": "tas-flavor",
        "nodes": {
            "count": 6,
            "resources": {"cpu": "96", "memory": "256Gi"},
            "topology": {"block": 1, "rack": 2},
        },
        "nodeLabels": {"tas-node-group": "tas"},
        "topologyName": "default-topology",
    }
    assert config["gpu-queues:topologies"] == [
        {
            "name": "default-topology",
            "levels": [
                {"name": "block", "nodeLabel": "cloud.provider.com/topology-block"},
                {"name": "rack", "nodeLabel": "cloud.provider.com/topology-rack"},
                {"name": "node", "nodeLabel": "kubernetes.io/hostname"},
            ],
        }
    ]
    entries = replayable(converted, tmp_path)
    assert len(entries) == 2 * 3
    assert [e.submit_at for e in entries if e.namespace == "cq-0-0-cohort-0"] == pytest.approx(
        [0.5, 1.0, 1.5]
    )
    assert {w.cpu_millis for w in converted.workloads} == {5000}  # 4 pods x 1250m
    job = converted.jobs[0]
    assert job["spec"]["parallelism"] == 4
    template = job["spec"]["template"]
    assert template["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1250m"}
    assert template["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"
    }


def test_the_tas_config_without_its_topology_is_the_same_nodes_and_pods() -> None:
    """topology=False, to measure what TAS costs: the same flavor but for its Topology, the
    same Jobs but for their pods' topology annotations."""
    kept, left = convert(yaml.safe_load(TAS)), convert(yaml.safe_load(TAS), topology=False)
    assert not left.topology and "gpu-queues:topologies" not in left.stack["config"]
    (flavor,) = kept.stack["config"]["gpu-queues:flavors"]
    del flavor["topologyName"], flavor["nodes"]["topology"]
    assert left.stack["config"]["gpu-queues:flavors"] == [flavor]
    for job in kept.jobs:
        del job["spec"]["template"]["metadata"]
    assert left.jobs == kept.jobs


@pytest.mark.parametrize(
    ("constraint", "extra", "annotations"),
    [
        ("preferred", {}, {"kueue.x-k8s.io/podset-preferred-topology": "rack-label"}),
        (
            "balanced",
            {"sliceSize": 2},
            {
                "kueue.x-k8s.io/podset-slice-required-topology": "rack-label",
                "kueue.x-k8s.io/podset-slice-size": "2",
            },
        ),
    ],
)
def test_each_tas_constraint_is_the_request_the_generator_makes(
    constraint: str, extra: dict[str, Any], annotations: dict[str, str], tmp_path: Path
) -> None:
    """`balanced` has no annotation of that name: the generator gives its pod set a slice
    request (each slice of sliceSize pods in one domain of tasLevel) and no other."""
    generator = yaml.safe_load(TAS)
    generator["topology"]["levels"][1]["nodeLabel"] = "rack-label"
    template = generator["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["workloads"][0]
    template.update(tasConstraint=constraint, tasLevel="rack-label", **extra)
    converted = convert(generator)
    replayable(converted, tmp_path)
    for job in converted.jobs:
        assert job["spec"]["template"]["metadata"]["annotations"] == annotations


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tasConstraint": "packed"}, "tasConstraint"),
        ({"tasConstraint": "balanced"}, "sliceSize"),  # Kueue refuses a slice without a size
    ],
)
def test_a_tas_request_it_cannot_convert_is_refused_by_name(
    change: dict[str, Any], field: str
) -> None:
    generator = yaml.safe_load(TAS)
    generator["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["workloads"][0].update(change)
    with pytest.raises(HarnessConfigError, match=field):
        convert(generator)


def test_milliseconds_are_seconds_the_mix_reads() -> None:
    assert [seconds(ms) for ms in (100, 1000, 1200, 35000, 60, 0)] == [
        "0.1s", "1s", "1.2s", "35s", "0.06s", "0s",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["cohorts: []", "cohorts: 3", "[]", "cohorts: [{className: c, count: -1, queuesSets: []}]"],
)
def test_a_config_it_cannot_read_is_refused_by_name(text: str) -> None:
    with pytest.raises(HarnessConfigError):
        convert(yaml.safe_load(text))
