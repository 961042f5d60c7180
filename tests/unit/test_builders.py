"""The test builders (tests/builders.py) give the shapes their references document: Kueue's
v1beta2 objects as in its concepts pages, the stack config as docs/config-reference.md, Jobs,
Pods and Nodes as the Kubernetes API reference, the mix as docs/what-if.md."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.resourceflavor import resource_flavor_errors
from gpu_queues.whatif.mix import Catalog, TeamQueue, load_mix
from gpu_queues.whatif.workloads import admitted_flavor, is_true
from tests.builders import (
    ClusterQueue,
    Cohort,
    Flavor,
    FlavorQuotas,
    Job,
    LocalQueue,
    Mix,
    Node,
    Pod,
    ResourceFlavor,
    Stack,
    Team,
    Topology,
    Workload,
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


def test_a_topology_and_its_flavor_are_the_documented_objects_and_config():
    assert Topology("default").levels("cloud.example.com/rack", "kubernetes.io/hostname").obj() == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {
            "levels": [
                {"nodeLabel": "cloud.example.com/rack"},
                {"nodeLabel": "kubernetes.io/hostname"},
            ]
        },
    }
    tas = (
        Stack()
        .topology("gpus", rack="cloud.example.com/rack", host="kubernetes.io/hostname")
        .flavor(
            Flavor("h100")
            .labels({"pool": "h100"})
            .topology("gpus")
            .nodes(4, gpu=8)
            .node_topology(rack=2)
        )
        .team({"name": "written", "namespace": "w", "resourceGroups": []})
    )
    assert tas.raw() == yaml.safe_load(
        """
        topologies:
        - name: gpus
          levels:
          - {name: rack, nodeLabel: cloud.example.com/rack}
          - {name: host, nodeLabel: kubernetes.io/hostname}
        flavors:
        - name: h100
          nodeLabels: {pool: h100}
          topologyName: gpus
          nodes: {count: 4, resources: {nvidia.com/gpu: 8}, topology: {rack: 2}}
        teams:
        - {name: written, namespace: w, resourceGroups: []}
        """
    )
    config = load_config({k: v for k, v in tas.raw().items() if k != "teams"})
    assert [n.labels for n in config.flavors[0].node_list(config.levels_of(config.flavors[0]))][
        :3
    ] == [{"pool": "h100", "cloud.example.com/rack": f"rack-{i // 2}"} for i in range(3)]


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


# --- what runs ---------------------------------------------------------------------------------


def test_a_job_is_the_documented_object():
    built = (
        Job("train", "team-a")
        .queue("gpu-queue")
        .priority_class("high")
        .parallelism(2)
        .completions(4)
        .request("nvidia.com/gpu", "4")
        .requests(cpu="1")
        .limits(gpu="4")
        .complete_after(30)
        .obj()
    )
    assert built == yaml.safe_load(
        """
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: train
          namespace: team-a
          labels:
            kueue.x-k8s.io/queue-name: gpu-queue
            kueue.x-k8s.io/priority-class: high
        spec:
          parallelism: 2
          completions: 4
          template:
            metadata:
              annotations: {sandbox.gpu-queues.dev/complete-after: 30s}
            spec:
              restartPolicy: Never
              containers:
              - name: main
                image: registry.example/train:1
                resources:
                  requests: {nvidia.com/gpu: "4", cpu: "1"}
                  limits: {nvidia.com/gpu: "4"}
        """
    )
    assert Job("j", None).obj()["metadata"] == {"name": "j"}  # no namespace: kubectl's default
    topo = Job("j", "ns").required_topology("rack").suspend().start_time("2026-12-01T12:00:00Z")
    assert topo.obj()["spec"]["template"]["metadata"] == {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}
    }
    assert (topo.obj()["spec"]["suspend"], topo.obj()["status"]) == (
        True,
        {"startTime": "2026-12-01T12:00:00Z"},
    )


def test_a_pod_is_the_documented_object():
    built = Pod("nb", "team-a").queue("q").complete_after("5s").image("x").limits(gpu=1).obj()
    assert built == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "nb",
            "namespace": "team-a",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "annotations": {"sandbox.gpu-queues.dev/complete-after": "5s"},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
            ],
        },
    }


CATALOG = Catalog(
    queues=(TeamQueue("a", "team-a", "gpu-queue", "a-cq"),),
    priority_classes=frozenset({"high"}),
    frameworks=frozenset({"batch/job", "pod"}),
)


def test_a_mix_is_one_stream_the_what_if_reads_in_order(tmp_path: Path):
    mix = Mix(
        Job("first", "team-a").queue("gpu-queue").submit_at(90).duration("1h").parallelism(2)
        .limits(gpu=2),
        Pod("second", "team-a").queue("gpu-queue").priority_class("high").submit_at("1m"),
    ).add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})  # fmt: skip
    path = mix.write(tmp_path / "mix.yaml")
    assert list(yaml.safe_load_all(path.read_text())) == mix.docs()
    assert mix.docs()[0]["metadata"]["annotations"] == {
        "gpu-queues.dev/submit-at": "90s",
        "gpu-queues.dev/duration": "1h",
    }
    entries = load_mix(path, CATALOG)
    assert [(e.name, e.kind, e.status, e.submit_at, e.duration, e.gpus, e.pods) for e in entries][
        :2
    ] == [("first", "Job", "ok", 90, 3600, 4, 2), ("second", "Pod", "ok", 60, None, 0, 1)]
    assert entries[2].status == "unsupported" and entries[2].source.endswith("mix.yaml#3")


def test_a_workload_is_the_documented_object():
    built = (
        Workload("job-train-abcde", "team-a")
        .uid("w1")
        .created("2026-12-01T12:00:00Z")
        .owner("Job", "train", "j1")
        .queue("gpu-queue")
        .pod_set(count=2)
        .priority("high", 100)
        .reserve_quota("a-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T12:00:05Z")
        .admitted("2026-12-01T12:00:05Z")
        .obj()
    )
    assert built == yaml.safe_load(
        """
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata:
          name: job-train-abcde
          namespace: team-a
          uid: w1
          creationTimestamp: "2026-12-01T12:00:00Z"
          ownerReferences:
          - {apiVersion: batch/v1, kind: Job, name: train, uid: j1, controller: true,
             blockOwnerDeletion: true}
        spec:
          queueName: gpu-queue
          podSets:
          - name: main
            count: 2
            template:
              spec:
                restartPolicy: Never
                containers: [{name: main, image: "registry.example/train:1"}]
          priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: high}
          priority: 100
        status:
          admission:
            clusterQueue: a-cq
            podSetAssignments:
            - {name: main, flavors: {nvidia.com/gpu: h100}}
          conditions:
          - {type: QuotaReserved, status: "True", lastTransitionTime: "2026-12-01T12:00:05Z",
             reason: QuotaReserved, message: ""}
          - {type: Admitted, status: "True", lastTransitionTime: "2026-12-01T12:00:05Z",
             reason: Admitted, message: ""}
        """
    )
    # What the what-if's readers take from it.
    assert admitted_flavor(built) == "h100" and is_true(built, "Admitted")
    waiting = Workload("w", "ns").pending("t", "no quota").finished("u").active(False).obj()
    assert waiting["spec"] == {"podSets": [], "active": False}
    assert waiting["status"]["conditions"] == [
        {"type": "QuotaReserved", "status": "False", "lastTransitionTime": "t",
         "reason": "Pending", "message": "no quota"},
        {"type": "Finished", "status": "True", "lastTransitionTime": "u", "reason": "Succeeded",
         "message": ""},
    ]  # fmt: skip
    assert not is_true(waiting, "QuotaReserved")
    assert Workload("w", "ns").condition("Evicted", "True", "t").obj()["status"] == {
        "conditions": [{"type": "Evicted", "status": "True", "lastTransitionTime": "t"}]
    }


def test_a_node_is_the_documented_object():
    assert Node("h100-0").labels({"pool": "h100"}).taint("gpu", "NoSchedule").capacity(
        cpu="64", gpu="8"
    ).obj() == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "h100-0", "labels": {"kubernetes.io/hostname": "h100-0",
                                                   "pool": "h100"}},
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "64", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "64", "nvidia.com/gpu": "8"},
        },
    }  # fmt: skip


def test_what_runs_is_handed_out_as_copies():
    job = Job("j", "ns").limits(gpu=1)
    job.obj()["spec"]["template"]["spec"]["containers"].clear()
    assert job.obj()["spec"]["template"]["spec"]["containers"][0]["name"] == "main"
    wl = Workload("w", "ns").pod_set()
    wl.obj()["spec"]["podSets"].clear()
    assert len(wl.obj()["spec"]["podSets"]) == 1
    mix = Mix(job)
    mix.docs()[0]["metadata"]["name"] = "changed"
    job.label("later", "x")  # a builder changed after it went into a mix: the mix keeps it as was
    assert mix.docs() == [Job("j", "ns").limits(gpu=1).obj()]
