"""The test builders (tests/builders.py) give the shapes their references document: Kueue's
v1beta2 objects as in its concepts pages, the stack config as docs/config-reference.md."""

from __future__ import annotations

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.resourceflavor import resource_flavor_errors
from tests.builders import (
    ClusterQueue,
    Cohort,
    Flavor,
    FlavorQuotas,
    LocalQueue,
    ResourceFlavor,
    Stack,
    Team,
    gpu_flavor,
    gpu_team,
)

pytestmark = pytest.mark.unit


def test_a_cluster_queue_is_the_documented_object():
    built = (
        ClusterQueue("team-a")
        .cohort("pool")
        .quota("h100", cpu=9, memory="36Gi", gpu=8)
        .quota("a100", cpu=4, memory="16Gi", gpu=4)
        .borrowing("h100", gpu=4)
        .lending("a100", gpu=2)
        .obj()
    )
    assert built == yaml.safe_load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata:
          name: team-a
        spec:
          namespaceSelector: {}
          resourceGroups:
          - coveredResources: [cpu, memory, nvidia.com/gpu]
            flavors:
            - name: h100
              resources:
              - {name: cpu, nominalQuota: 9}
              - {name: memory, nominalQuota: 36Gi}
              - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}
            - name: a100
              resources:
              - {name: cpu, nominalQuota: 4}
              - {name: memory, nominalQuota: 16Gi}
              - {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 2}
          cohortName: pool
        """
    )
    assert cluster_queue_errors(built) == []


def test_quotas_of_other_resources_start_a_new_group():
    built = (
        ClusterQueue("q")
        .quota("cpu-only", cpu=8, memory="8Gi")
        .quota("gpus", gpu=8)
        .resource_group(FlavorQuotas("nic").resource("example.com/nic", 2, borrowing=1))
        .obj()
    )
    assert built["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "cpu-only",
                    "resources": [
                        {"name": "cpu", "nominalQuota": 8},
                        {"name": "memory", "nominalQuota": "8Gi"},
                    ],
                }
            ],
        },
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {"name": "gpus", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}
            ],
        },
        {
            "coveredResources": ["example.com/nic"],
            "flavors": [
                {
                    "name": "nic",
                    "resources": [
                        {"name": "example.com/nic", "nominalQuota": 2, "borrowingLimit": 1}
                    ],
                }
            ],
        },
    ]


def test_limits_need_the_quota_first():
    with pytest.raises(KeyError, match="no quota for flavor 'h100'"):
        ClusterQueue("q").borrowing("h100", gpu=1)
    with pytest.raises(KeyError, match="no quota for flavor 'h100'"):
        Team("t").lending("h100", gpu=1)


def test_every_obj_is_a_copy_of_its_own():
    builder = ClusterQueue("q").quota("h100", cpu=1, memory="1Gi", gpu=1)
    first = builder.obj()
    first["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 99
    assert builder.obj()["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {
        "name": "cpu",
        "nominalQuota": 1,
    }
    stack = Stack().team(Team("a").quota("h100", gpu=1))
    stack.raw()["teams"].clear()
    assert len(stack.raw()["teams"]) == 1


def test_flavor_cohort_and_local_queue_are_the_documented_objects():
    assert ResourceFlavor("default-flavor").obj() == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"},
    }
    spot = (
        ResourceFlavor("spot")
        .labels({"instance-type": "spot"})
        .taint("spot", "NoSchedule", "true")
        .toleration(key="spot-taint", operator="Exists", effect="NoSchedule")
        .obj()
    )
    assert spot == yaml.safe_load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ResourceFlavor
        metadata:
          name: spot
        spec:
          nodeLabels:
            instance-type: spot
          nodeTaints:
          - {key: spot, value: "true", effect: NoSchedule}
          tolerations:
          - {key: spot-taint, operator: Exists, effect: NoSchedule}
        """
    )
    assert resource_flavor_errors(spot) == []
    assert Cohort("pool").parent("org").quota("h100", gpu=2).obj() == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "pool"},
        "spec": {
            "parentName": "org",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}],
                        }
                    ],
                }
            ],
        },
    }
    assert LocalQueue("user-queue", "team-a", "cluster-queue").obj() == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": "team-a"},
        "spec": {"clusterQueue": "cluster-queue"},
    }


def small_stack() -> Stack:
    return (
        Stack()
        .flavor(
            Flavor("h100")
            .labels({"nvidia.com/gpu.product": "H100"})
            .nodes(2, cpu=64, memory="512Gi", gpu=8)
        )
        .cohort("pool")
        .team(
            Team("research")
            .cohort("pool")
            .quota("h100", cpu=64, memory="512Gi", gpu=12)
            .borrowing("h100", gpu=4)
            .lending("h100", gpu=2),
            Team("ml")
            .namespace("default", adopt=True)
            .quota("h100", cpu=64, memory="512Gi", gpu=4),
        )
    )


def test_a_stack_is_the_documented_config():
    assert small_stack().raw() == yaml.safe_load(
        """
        flavors:
        - name: h100
          nodeLabels: {nvidia.com/gpu.product: H100}
          nodes:
            count: 2
            resources: {cpu: 64, memory: 512Gi, nvidia.com/gpu: 8}
        cohort: {name: pool}
        teams:
        - name: research
          namespace: team-research
          clusterQueue: research-cq
          localQueue: gpu-queue
          resourceGroups:
          - coveredResources: [cpu, memory, nvidia.com/gpu]
            flavors:
            - name: h100
              resources:
                cpu: {nominalQuota: 64}
                memory: {nominalQuota: 512Gi}
                nvidia.com/gpu: {nominalQuota: 12, borrowingLimit: 4, lendingLimit: 2}
          cohort: pool
        - name: ml
          namespace: default
          adoptNamespace: true
          clusterQueue: ml-cq
          localQueue: gpu-queue
          resourceGroups:
          - coveredResources: [cpu, memory, nvidia.com/gpu]
            flavors:
            - name: h100
              resources:
                cpu: {nominalQuota: 64}
                memory: {nominalQuota: 512Gi}
                nvidia.com/gpu: {nominalQuota: 4}
        """
    )


def test_a_built_stack_loads_and_its_file_reads_back():
    config = load_config(small_stack().raw())
    assert [t.name for t in config.teams] == ["research", "ml"]
    assert parse_config(small_stack().yaml(), "Pulumi.built.yaml") == small_stack().raw()
    assert list(small_stack().config()) == [
        "gpu-queues:flavors",
        "gpu-queues:cohort",
        "gpu-queues:teams",
    ]


def test_the_gpu_shorthands_spell_out_a_team_and_a_flavor():
    assert gpu_flavor("h100", 16).raw() == {
        "name": "h100",
        "capacity": {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": 16},
    }
    quotas = {"cpu": {"nominalQuota": 8}, "memory": {"nominalQuota": "64Gi"}}
    assert gpu_team(
        "a", {"h100": {"gpu": 4, "borrow": 2, "lend": 1}, "a100": {"gpu": 2}}
    ).raw() == {
        "name": "a",
        "namespace": "team-a",
        "clusterQueue": "a-cq",
        "localQueue": "gpu-queue",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": {
                            **quotas,
                            "nvidia.com/gpu": {
                                "nominalQuota": 4,
                                "borrowingLimit": 2,
                                "lendingLimit": 1,
                            },
                        },
                    },
                    {
                        "name": "a100",
                        "resources": {**quotas, "nvidia.com/gpu": {"nominalQuota": 2}},
                    },
                ],
            }
        ],
        "cohort": "pool",
    }
    assert "cohort" not in gpu_team("a", {"h100": {"gpu": 1}}, cohort=None).raw()
