"""`gpuq record` of TrainJobs (Kubeflow Trainer v2; gpu_queues/tools/owner_trainjob.py) from
hand-made TrainJob, runtime and Workload triples as Kueue v0.18.3's trainjob integration makes
them (a Workload owned by the TrainJob, a pod set per replicated job of the runtime's JobSet
template): the TrainJob's runtimeRef and trainer, and the runtime it names, recorded once in
each file before the TrainJobs that use it, keeping only what Kueue counts; read back by the
mix as Kueue counts it. A TrainJob or runtime that no longer makes its Workload's pod sets, or a
runtime gone, is a comment naming why. `gpuq status --eta` replays a live TrainJob with its
runtime the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.tools.eta_mix import plan
from gpu_queues.tools.owners import IMAGE_PLACEHOLDER
from gpu_queues.tools.status import Snapshot
from gpu_queues.whatif.mix import Catalog, TeamQueue, load_mix
from gpu_queues.whatif.trainjob import ANCESTOR_LABEL
from tests.builders import Flavor, Stack, Team, Workload
from tests.unit.tools.test_record import (
    NOW_S,
    SECRET_BITS,
    FakeRest,
    cluster,
    docs,
    pod_spec,
    recorded,
)

pytestmark = pytest.mark.unit

TRAINER = "trainer.kubeflow.org/v1alpha1"
RUNTIMES = f"/apis/{TRAINER}/clustertrainingruntimes"
TRAINJOBS = f"/apis/{TRAINER}/namespaces/alpha/trainjobs"
FRAMEWORK = "trainer.kubeflow.org/trainjob"


def node_pod(gpus: int) -> dict[str, Any]:
    """pod_spec(gpus) with its container named node, as the Trainer's torch runtimes name it."""
    spec = pod_spec(gpus)
    spec["containers"][0]["name"] = "node"
    return spec


def runtime() -> dict[str, Any]:
    """The cluster's "torch": a dataset initializer (no GPU) and the trainer step (1 GPU a
    node unless the TrainJob says), a torch policy of 1 node; as the API serves it."""
    return {
        "apiVersion": TRAINER, "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torch", "uid": "rt1", "resourceVersion": "9",
                     "labels": {"team": "s3cr3t"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 100}},
            "template": {"spec": {"replicatedJobs": [
                {"name": "dataset-initializer", "template": {
                    "metadata": {"labels": {ANCESTOR_LABEL: "dataset-initializer"}},
                    "spec": {"template": {"spec": pod_spec(gpus=0)}}}},
                {"name": "node", "template": {
                    "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                    "spec": {"template": {"spec": node_pod(1)}}}},
            ]}},
        },
    }  # fmt: skip


def trainjob(name: str, uid: str, nodes: int) -> dict[str, Any]:
    res = {"cpu": "4", "nvidia.com/gpu": "2"}
    return {
        "apiVersion": TRAINER, "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "alpha", "uid": uid,
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": {"runtimeRef": {"name": "torch"},
                 "trainer": {"numNodes": nodes, "image": "registry.example/train:7",
                             "command": ["python", "train.py"], "args": ["--lr", "0.1"],
                             "env": [{"name": "TOKEN", "value": "hunter2"}],
                             "resourcesPerNode": {"requests": res, "limits": res}}},
    }  # fmt: skip


def workload(name: str, uid: str, nodes: int) -> Workload:
    """Kueue's Workload of a TrainJob of `nodes` nodes on "torch": the initializer, the nodes."""
    return (
        Workload(f"trainjob-{name}-abcde", "alpha").uid(f"wl-{uid}")
        .created("2026-12-01T10:00:00Z").owner("TrainJob", name, uid, TRAINER).queue("jobs")
        .pod_set(pod_spec(gpus=0), count=1, name="dataset-initializer")
        .pod_set(node_pod(2), count=nodes, name="node")
        .reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
        .admitted("2026-12-01T10:00:05Z")
    )  # fmt: skip


def trainjob_day(owner_nodes: int = 2, workload_nodes: int = 2) -> FakeRest:
    """alpha's TrainJobs "tune" (of `owner_nodes` nodes; its Workload of `workload_nodes`,
    finished after 30 minutes) and "eval" (1 node, running), both on the cluster's "torch"."""
    rest = cluster([
        workload("tune", "t1", workload_nodes).finished("2026-12-01T10:30:05Z").obj(),
        workload("eval", "t2", 1).obj(),
    ], [])  # fmt: skip
    rest.objects[TRAINJOBS] = {"items": [trainjob("tune", "t1", owner_nodes),
                                         trainjob("eval", "t2", 1)]}  # fmt: skip
    rest.objects[RUNTIMES] = {"items": [runtime()]}
    return rest


def test_a_trainjob_is_recorded_with_its_runtime_once_and_read_back_as_kueue_counts_it(
    tmp_path: Path,
) -> None:
    rec = recorded(trainjob_day())
    assert sorted((i.name, i.skipped) for i in rec.items) == [("eval", None), ("tune", None)]
    text = rec.files(single=False)["alpha.yaml"]
    written = docs(text)
    # the runtime first, once for both, without a submit-at: no workload
    assert [(d["kind"], d["metadata"]["name"]) for d in written] == [
        ("ClusterTrainingRuntime", "torch"), ("TrainJob", "eval"), ("TrainJob", "tune")
    ]  # fmt: skip
    kept_runtime = written[0]
    assert kept_runtime["metadata"] == {"name": "torch"}
    assert kept_runtime["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    steps = kept_runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert [(s["name"], s["template"]["metadata"]["labels"][ANCESTOR_LABEL]) for s in steps] == [
        ("dataset-initializer", "dataset-initializer"), ("node", "trainer")
    ]  # fmt: skip
    node = steps[1]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert node["image"] == IMAGE_PLACEHOLDER
    tune = written[2]
    assert tune["spec"] == {
        "runtimeRef": {"name": "torch"},
        "trainer": {"numNodes": 2, "resourcesPerNode": {
            "requests": {"cpu": "4", "nvidia.com/gpu": "2"},
            "limits": {"cpu": "4", "nvidia.com/gpu": "2"}}},
    }  # fmt: skip
    assert tune["metadata"]["annotations"]["gpu-queues.dev/duration"] == "30m"
    for bit in (*SECRET_BITS, "registry.example", "coscheduling", "numProcPerNode", "rt1"):
        assert bit not in text, bit
    (tmp_path / "alpha.yaml").write_text(text)
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({FRAMEWORK}))  # fmt: skip
    entries = load_mix(tmp_path / "alpha.yaml", catalog)
    # tune: 2 nodes of 2 GPUs (resourcesPerNode over the runtime's 1) and the initializer
    assert [(e.name, e.status, e.problem, e.gpus, e.pods) for e in entries] == [
        ("eval", "ok", None, 2, 2), ("tune", "ok", None, 4, 3)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("owner_nodes", "workload_nodes", "why"),
    [
        (3, 2, "its TrainJob on ClusterTrainingRuntime torch no longer matches its Workload: pod "
               "sets [('dataset-initializer', 1), ('node', 3)] against the Workload's "
               "[('dataset-initializer', 1), ('node', 2)]"),
    ],
)  # fmt: skip
def test_a_trainjob_that_is_not_its_workload_is_a_comment(
    owner_nodes: int, workload_nodes: int, why: str
) -> None:
    rec = recorded(trainjob_day(owner_nodes, workload_nodes))
    tune = next(i for i in rec.items if i.workload == "trainjob-tune-abcde")
    assert (tune.manifest, tune.skipped) == (None, why)
    assert (
        f"# not recorded: Workload alpha/trainjob-tune-abcde: {why}"
        in rec.files(single=False)["alpha.yaml"]
    )


def test_a_trainjob_whose_runtime_is_gone_is_a_comment() -> None:
    rest = trainjob_day()
    rest.objects[RUNTIMES] = {"items": []}
    rec = recorded(rest)
    assert {i.skipped for i in rec.items} == {
        "its ClusterTrainingRuntime torch (spec.runtimeRef) is no longer in the API"
    }
    assert "ClusterTrainingRuntime" not in "".join(
        line for line in rec.files(single=False)["alpha.yaml"].splitlines() if line[:1] != "#"
    )


def test_eta_replays_a_live_trainjob_with_its_runtime() -> None:
    rest = trainjob_day()
    wl = next(w for w in rest.objects["/apis/kueue.x-k8s.io/v1beta2/workloads"]["items"]
              if w["metadata"]["name"] == "trainjob-eval-abcde")  # fmt: skip
    team = (Team("alpha").namespace("alpha").cluster_queue("alpha-cq").local_queue("jobs")
            .quota("h100", cpu=32, memory="256Gi", gpu=8))  # fmt: skip
    h100 = Flavor("h100").labels({"gpu-queues.dev/pool": "h100"})
    cfg = load_config(Stack().flavor(h100.capacity(cpu=64, memory="512Gi", gpu=8)).team(team).raw())
    objects = {("TrainJob", "alpha", "eval"): trainjob("eval", "t2", 1),
               ("ClusterTrainingRuntime", "", "torch"): runtime()}  # fmt: skip
    snap = Snapshot(NOW_S, [("alpha", "alpha-cq")], {}, [(wl, "alpha-cq", "alpha")], {})
    mix = plan(snap, lambda kind, ns, name: objects.get((kind, ns, name)), cfg,
               Catalog.from_stack(cfg, [FRAMEWORK]), history=86400.0)  # fmt: skip
    (item,) = mix.items
    assert item.problem is None, item.problem
    (entry,) = mix.entries()
    assert (entry.kind, entry.gpus, entry.pods) == ("TrainJob", 2, 2)
    assert entry.runtime is not None and entry.runtime["metadata"] == {"name": "torch"}
