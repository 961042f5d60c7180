"""The what-if's workload mix: manifests read from files and folders, checked against the
stack; every refusal is an entry with the reason, never an exception."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.whatif import documents
from gpu_queues.whatif.documents import Limits
from gpu_queues.whatif.durations import DurationError, format_duration, parse_duration
from gpu_queues.whatif.limits import mix_size_problem
from gpu_queues.whatif.mix import (
    ANNOTATION_DURATION,
    ANNOTATION_SUBMIT_AT,
    COMPLETE_AFTER,
    Catalog,
    Entry,
    TeamQueue,
    load_mix,
    submission_order,
)
from gpu_queues.whatif.podsets import pod_sets
from tests.builders import (
    Job,
    JobSet,
    KubeflowJob,
    MPIJob,
    Pod,
    PyTorchJob,
    RayCluster,
    RayJob,
    Stack,
    gpu_flavor,
    gpu_team,
)

pytestmark = pytest.mark.unit

CATALOG = Catalog(
    queues=(
        TeamQueue("research", "team-research", "gpu-queue", "research-cq"),
        TeamQueue("vision", "team-vision", "vision-jobs", "vision-cq"),
    ),
    priority_classes=frozenset({"low", "high"}),
    frameworks=frozenset({"batch/job", "pod", "jobset.x-k8s.io/jobset", "deployment"}),
)


def job(
    name: str = "train",
    namespace: str | None = "team-research",
    queue: str | None = "gpu-queue",
    gpus: int = 2,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    built = Job(name, namespace).image("x").limits(gpu=gpus).spec(**spec)
    for key, value in (labels or {}).items():
        built.label(key, value)
    if queue is not None:
        built.queue(queue)
    for key, value in (annotations or {}).items():
        built.annotation(key, value)
    return built.obj()


def mix(tmp_path: Path, *docs: Any, name: str = "mix.yaml") -> list[Entry]:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return load_mix(path, CATALOG)


# --- durations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400), ("1d", 86400),
     ("0s", 0), ("1d2h3m4s", 93784), (" 2h ", 7200), (".5m", 30)],
)  # fmt: skip
def test_durations_are_read_as_go_writes_them_plus_days(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5", "-1h", "1h 30m", "2 hours", "1x", "h", 5, None])
def test_what_is_not_a_duration_is_refused(text: object) -> None:
    with pytest.raises(DurationError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0, "0s"), (0.4, "0s"), (59, "59s"), (3600, "1h"), (7800, "2h10m"),
     (90061, "1d1h"), (330, "5m30s")],
)  # fmt: skip
def test_waits_are_shown_in_two_units_at_most(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


# --- a valid mix ------------------------------------------------------------------------


def test_a_job_is_checked_into_an_entry_ready_to_submit(tmp_path: Path) -> None:
    annotations = {ANNOTATION_SUBMIT_AT: "15m", ANNOTATION_DURATION: "2h"}
    body = job(annotations=annotations, labels={"kueue.x-k8s.io/priority-class": "high"})
    body["status"] = {"active": 1}
    body["metadata"].update(resourceVersion="7", uid="u")
    body["spec"]["template"]["metadata"] = {"annotations": {COMPLETE_AFTER: "1s", "keep": "me"}}
    (entry,) = mix(tmp_path, body)
    assert entry.status == "ok" and entry.problem is None
    assert (entry.team, entry.cluster_queue, entry.queue) == (
        "research",
        "research-cq",
        "gpu-queue",
    )
    assert (entry.submit_at, entry.duration, entry.gpus, entry.pods) == (900, 7200, 2, 1)
    assert entry.source == "mix.yaml#1" or entry.source.endswith("mix.yaml#1")
    # What is created: no server fields, no status, and the sandbox's completion lever is
    # the replay's alone.
    made = entry.manifest
    assert "status" not in made and "resourceVersion" not in made["metadata"]
    assert made["spec"]["template"]["metadata"]["annotations"] == {"keep": "me"}


def test_gpus_count_every_pod_a_job_runs_at_once(tmp_path: Path) -> None:
    wide = job("wide", gpus=4, parallelism=3)
    capped = job("capped", gpus=4, parallelism=3, completions=2)
    init = job("init", gpus=1)
    init["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "prep", "resources": {"requests": {"nvidia.com/gpu": "3"}}}
    ]
    amd = job("amd", gpus=0)
    amd["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"amd.com/gpu": 2}}
    entries = {e.name: e for e in mix(tmp_path, wide, capped, init, amd)}
    assert (entries["wide"].gpus, entries["wide"].pods) == (12, 3)
    assert (entries["capped"].gpus, entries["capped"].pods) == (8, 2)
    assert entries["init"].gpus == 3
    assert entries["amd"].gpus == 2


def test_a_plain_pod_is_replayed_when_the_pod_integration_is_on(tmp_path: Path) -> None:
    pod = Pod("notebook", "team-vision").queue("vision-jobs").complete_after("5s").limits(gpu="1")
    (entry,) = mix(tmp_path, pod.obj())
    assert entry.status == "ok" and entry.kind == "Pod" and entry.gpus == 1
    assert COMPLETE_AFTER not in entry.manifest["metadata"]["annotations"]
    off = Catalog(CATALOG.queues, CATALOG.priority_classes, frozenset({"batch/job"}))
    (refused,) = load_mix(tmp_path / "mix.yaml", off)
    assert refused.status == "unsupported"
    assert "integration pod is not enabled" in (refused.problem or "")


def jobset(name: str = "llm") -> JobSet:
    """A leader (1 pod, cpu only) and workers (2 replicas x 2 pods x 1 GPU)."""
    leader = Job("leader", None).image("x").requests(cpu="2")
    workers = Job("workers", None).image("x").limits(gpu=1).parallelism(2).completions(2)
    return (
        JobSet(name, "team-research")
        .queue("gpu-queue")
        .replicated("leader", leader)
        .replicated("workers", workers.complete_after("5s"), replicas=2)
    )


def test_a_jobset_holds_the_pods_and_gpus_of_all_its_replicated_jobs(tmp_path: Path) -> None:
    (entry,) = mix(tmp_path, jobset().duration("1h").obj())
    assert entry.status == "ok", entry.problem
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == ("JobSet", 4, 5, 3600.0)
    workers = entry.manifest["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    assert COMPLETE_AFTER not in workers["metadata"]["annotations"]


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ((1, "replicas"), "2", "spec.replicatedJobs[1].replicas: must be an integer, not a string"),
        ((1, "replicas"), -1, "spec.replicatedJobs[1].replicas: -1 must not be negative"),
        ((1, "name"), "leader", "spec.replicatedJobs[1].name: 'leader' is the name of an earlier"),
        ((1, "template"), None, "spec.replicatedJobs[1].template: is required"),
        ((0, "template", "spec", "parallelism"), "1",
         "spec.replicatedJobs[0].template.spec.parallelism: must be an integer"),
        ((0, "template", "spec", "template", "spec", "containers"), [],
         "spec.replicatedJobs[0].template.spec.template.spec.containers: must not be empty"),
    ],
)  # fmt: skip
def test_a_malformed_jobset_is_invalid_naming_the_field(
    tmp_path: Path, path: tuple[Any, ...], value: Any, words: str
) -> None:
    body = jobset().obj()
    inner: Any = body["spec"]["replicatedJobs"]
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    (entry,) = mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


def test_a_jobset_without_replicated_jobs_is_invalid(tmp_path: Path) -> None:
    body = jobset().obj()
    body["spec"]["replicatedJobs"] = []
    (entry,) = mix(tmp_path, body)
    assert (entry.status, entry.problem) == ("invalid", "spec.replicatedJobs: must not be empty")


def test_a_jobset_on_a_stack_without_the_jobset_integration_names_it_to_enable(
    tmp_path: Path,
) -> None:
    off = Catalog(CATALOG.queues, CATALOG.priority_classes, frozenset({"batch/job", "pod"}))
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump(jobset().obj()))
    (entry,) = load_mix(tmp_path / "mix.yaml", off)
    assert entry.status == "unsupported"
    assert entry.problem == (
        "Kueue does not manage JobSet on this stack: integration jobset.x-k8s.io/jobset is not "
        "enabled; add it to kueue.manager.integrations.frameworks (now: batch/job, pod)"
    )


WITH_PYTORCH = Catalog(
    CATALOG.queues, CATALOG.priority_classes, CATALOG.frameworks | {"kubeflow.org/pytorchjob"}
)


def pytorchjob(name: str = "bert", workers: int | None = 3) -> PyTorchJob:
    """A Master (1 pod, cpu only) and `workers` Workers (1 GPU each)."""
    master = Job("master", None).image("x").requests(cpu="2")
    worker = Job("worker", None).image("x").limits(gpu=1)
    return (
        PyTorchJob(name, "team-research")
        .queue("gpu-queue")
        .replica("Master", master)
        .replica("Worker", worker.complete_after("5s"), replicas=workers)
    )


def pytorch_mix(tmp_path: Path, *docs: Any) -> list[Entry]:
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump_all(docs))
    return load_mix(tmp_path / "mix.yaml", WITH_PYTORCH)


def test_a_pytorchjob_holds_the_pods_and_gpus_of_its_master_and_workers(tmp_path: Path) -> None:
    (entry,) = pytorch_mix(tmp_path, pytorchjob().duration("1h").obj())
    assert entry.status == "ok", entry.problem
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == ("PyTorchJob", 3, 4, 3600.0)
    worker = entry.manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert COMPLETE_AFTER not in worker["metadata"]["annotations"]


def test_a_pytorchjobs_replicas_default_to_one_and_its_replica_types_to_any_case(
    tmp_path: Path,
) -> None:
    body = pytorchjob(workers=None).obj()
    specs = body["spec"]["pytorchReplicaSpecs"]
    specs["worker"] = specs.pop("Worker")  # the training operator camel-cases it
    (entry,) = pytorch_mix(tmp_path, body)
    assert (entry.status, entry.gpus, entry.pods) == ("ok", 1, 2), entry.problem


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (("Worker", "replicas"), "2",
         "spec.pytorchReplicaSpecs[Worker].replicas: must be an integer, not a string"),
        (("Worker", "replicas"), 0,
         "spec.pytorchReplicaSpecs[Worker].replicas: 0 must be at least 1"),
        (("Master", "replicas"), 2, "spec.pytorchReplicaSpecs[Master].replicas: 2 must be 1"),
        (("Chief",), {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}},
         "spec.pytorchReplicaSpecs[Chief]: 'Chief' is not a PyTorchJob replica type"),
        (("master",), {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}},
         "spec.pytorchReplicaSpecs[master]: names the replica type of "
         "spec.pytorchReplicaSpecs[Master] again"),
        (("Worker", "template"), None, "spec.pytorchReplicaSpecs[Worker].template: is required"),
        (("Worker", "template", "spec", "containers"), [],
         "spec.pytorchReplicaSpecs[Worker].template.spec.containers: must not be empty"),
        (("Worker", "template", "spec", "containers", 0, "name"), "main",
         "spec.pytorchReplicaSpecs[Worker].template.spec.containers: must have a container "
         "named pytorch"),
        (("Worker", "template", "spec", "containers", 0, "image"), "",
         "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image: is required"),
        (("Worker", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
         0.5, "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].resources.limits"
         "[nvidia.com/gpu]"),
    ],
)  # fmt: skip
def test_a_malformed_pytorchjob_is_invalid_naming_the_field(
    tmp_path: Path, path: tuple[Any, ...], value: Any, words: str
) -> None:
    body = pytorchjob().obj()
    inner: Any = body["spec"]["pytorchReplicaSpecs"]
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    (entry,) = pytorch_mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


@pytest.mark.parametrize(
    ("specs", "words"),
    [
        ({}, "spec.pytorchReplicaSpecs: must name a Master or a Worker"),
        (None, "spec.pytorchReplicaSpecs: is required"),
        ([], "spec.pytorchReplicaSpecs: must be a mapping, not a list ([])"),
    ],
)
def test_a_pytorchjob_without_replica_specs_is_invalid(
    tmp_path: Path, specs: Any, words: str
) -> None:
    body = pytorchjob().obj()
    body["spec"]["pytorchReplicaSpecs"] = specs
    (entry,) = pytorch_mix(tmp_path, body)
    assert (entry.status, entry.problem) == ("invalid", words)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("nprocPerNode", 4, "spec.nprocPerNode: must be a string, not a number (4) (quote it)"),
        ("elasticPolicy", {"minReplicas": "1"},
         "spec.elasticPolicy.minReplicas: must be an integer, not a string"),
        ("runPolicy", {"schedulingPolicy": {"minAvailable": True}},
         "spec.runPolicy.schedulingPolicy.minAvailable: must be an integer, not a boolean"),
    ],
)  # fmt: skip
def test_a_pytorchjob_field_the_engine_decodes_is_checked_for_its_type(
    tmp_path: Path, field: str, value: Any, words: str
) -> None:
    """Every field of the training operator's PyTorchJobSpec has its type checked: one of
    another type is refused by the API server, and the engine could not decode it."""
    body = pytorchjob().obj()
    body["spec"][field] = value
    (entry,) = pytorch_mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


def test_a_pytorchjob_on_a_stack_without_the_pytorchjob_integration_names_it_to_enable(
    tmp_path: Path,
) -> None:
    (entry,) = mix(tmp_path, pytorchjob().obj())
    assert entry.status == "unsupported"
    assert entry.problem == (
        "Kueue does not manage PyTorchJob on this stack: integration kubeflow.org/pytorchjob is "
        "not enabled; add it to kueue.manager.integrations.frameworks (now: batch/job, "
        "deployment, jobset.x-k8s.io/jobset, pod)"
    )


WITH_RAYCLUSTER = Catalog(
    CATALOG.queues, CATALOG.priority_classes, CATALOG.frameworks | {"ray.io/raycluster"}
)


def raycluster(name: str = "notebook", workers: int | None = 3) -> RayCluster:
    """A head (1 pod, cpu only) and a worker group of `workers` pods (1 GPU each)."""
    head = Job("head", None).image("x").requests(cpu="2")
    worker = Job("worker", None).image("x").limits(gpu=1)
    return (
        RayCluster(name, "team-research", head)
        .queue("gpu-queue")
        .workers("gpu", worker.complete_after("5s"), replicas=workers)
    )


def raycluster_mix(tmp_path: Path, *docs: Any) -> list[Entry]:
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump_all(docs))
    return load_mix(tmp_path / "mix.yaml", WITH_RAYCLUSTER)


def test_a_raycluster_holds_its_head_and_workers_and_no_submitter(tmp_path: Path) -> None:
    (entry,) = raycluster_mix(tmp_path, raycluster().duration("1h").obj())
    assert entry.status == "ok", entry.problem
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == ("RayCluster", 3, 4, 3600.0)
    assert [s.name for s in pod_sets("RayCluster", entry.manifest)] == ["head", "gpu"]
    (forever,) = raycluster_mix(tmp_path, raycluster(workers=None).obj())
    assert (forever.status, forever.gpus, forever.pods) == ("ok", 0, 1), forever.problem
    assert forever.duration is None  # runs until the end of the mix


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"enableInTreeAutoscaling": True},
         "spec.enableInTreeAutoscaling: Kueue admits an autoscaled RayCluster only as an elastic"),
        ({"enableInTreeAutoscaling": "yes"},
         "spec.enableInTreeAutoscaling: must be a boolean, not a string"),
        ({"headGroupSpec": None}, "spec.headGroupSpec: is required"),
        ({"workerGroupSpecs": [{"groupName": "head", "template": {"spec": {"containers": [
            {"name": "ray", "image": "x"}]}}}]},
         "spec.workerGroupSpecs[0].groupName: 'head' is the head group's"),
        ({"workerGroupSpecs": [{"groupName": f"g{i}", "template": {"spec": {"containers": [
            {"name": "ray", "image": "x"}]}}} for i in range(8)]},
         "spec.workerGroupSpecs: 8 groups make 9 pod sets; Kueue takes at most 8"),
    ],
)  # fmt: skip
def test_a_raycluster_kueue_refuses_is_invalid_naming_the_field(
    tmp_path: Path, change: dict[str, Any], words: str
) -> None:
    (entry,) = raycluster_mix(tmp_path, raycluster().spec(**change).obj())
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


def test_a_raycluster_on_a_stack_without_its_integration_names_it_to_enable(
    tmp_path: Path,
) -> None:
    (entry,) = mix(tmp_path, raycluster().obj())
    assert entry.status == "unsupported"
    assert "integration ray.io/raycluster is not enabled" in (entry.problem or "")


WITH_KUBEFLOW = Catalog(
    CATALOG.queues,
    CATALOG.priority_classes,
    CATALOG.frameworks
    | {"kubeflow.org/tfjob", "kubeflow.org/xgboostjob", "kubeflow.org/paddlejob"}
    | {"kubeflow.org/jaxjob"},
)
# Each other Kubeflow v1 kind's replica types as a user writes them, each (type, replicas, GPUs
# a pod): one pod of the first, cpu only, and GPU pods of the rest.
KUBEFLOW_REPLICAS: dict[str, list[tuple[str, int | None, int]]] = {
    "TFJob": [("Chief", 1, 0), ("PS", 2, 0), ("Worker", 3, 1), ("Evaluator", None, 1)],
    "XGBoostJob": [("Master", 1, 0), ("Worker", 3, 1)],
    "PaddleJob": [("Master", 1, 0), ("Worker", 3, 1)],
    "JAXJob": [("Worker", 3, 1)],
}


def kubeflowjob(kind: str, name: str = "fit") -> KubeflowJob:
    built = KubeflowJob(kind, name, "team-research").queue("gpu-queue")
    for replica_type, replicas, gpus in KUBEFLOW_REPLICAS[kind]:
        pod = Job("pod", None).image("x").requests(cpu="1")
        built.replica(replica_type, pod.limits(gpu=gpus) if gpus else pod, replicas=replicas)
    return built


def kubeflow_mix(tmp_path: Path, *docs: Any) -> list[Entry]:
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump_all(docs))
    return load_mix(tmp_path / "mix.yaml", WITH_KUBEFLOW)


@pytest.mark.parametrize(
    ("kind", "gpus", "pods", "sets"),
    [
        ("TFJob", 4, 7, ["chief", "ps", "worker", "evaluator"]),  # the Evaluator's 1 by default
        ("XGBoostJob", 3, 4, ["master", "worker"]),
        ("PaddleJob", 3, 4, ["master", "worker"]),
        ("JAXJob", 3, 3, ["worker"]),
    ],
)
def test_every_kubeflow_job_holds_the_pods_and_gpus_of_its_replica_types_in_kueues_order(
    tmp_path: Path, kind: str, gpus: int, pods: int, sets: list[str]
) -> None:
    body = kubeflowjob(kind).duration("1h").obj()
    specs = body["spec"][KubeflowJob.KINDS[kind][0]]
    specs["worker"] = specs.pop("Worker")  # the training operator camel-cases it
    (entry,) = kubeflow_mix(tmp_path, body)
    assert entry.status == "ok", entry.problem
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == (kind, gpus, pods, 3600.0)
    assert [s.name for s in pod_sets(kind, entry.manifest)] == sets


@pytest.mark.parametrize(
    ("kind", "path", "value", "words"),
    [
        ("TFJob", ("Master",), {"template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "x"}]}}},
         "spec.tfReplicaSpecs: must not have both a Chief and a Master"),
        ("TFJob", ("Launcher",), {"template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "x"}]}}},
         "spec.tfReplicaSpecs[Launcher]: 'Launcher' is not a TFJob replica type (Chief, Master, "
         "PS, Worker or Evaluator)"),
        ("TFJob", ("Worker", "replicas"), -1,
         "spec.tfReplicaSpecs[Worker].replicas: -1 must not be negative"),
        ("TFJob", ("PS", "template", "spec", "containers", 0, "name"), "main",
         "spec.tfReplicaSpecs[PS].template.spec.containers: must have a container named "
         "tensorflow"),
        ("XGBoostJob", ("Master", "replicas"), 2,
         "spec.xgbReplicaSpecs[Master].replicas: 2 must be 1 (one Master)"),
        ("XGBoostJob", ("Master",), None, "spec.xgbReplicaSpecs[Master]: is required"),
        ("XGBoostJob", ("worker",), {"template": {"spec": {"containers": [
            {"name": "xgboost", "image": "x"}]}}},
         "spec.xgbReplicaSpecs[worker]: names the replica type of spec.xgbReplicaSpecs[Worker] "
         "again"),
        ("PaddleJob", ("Chief",), {"template": {"spec": {"containers": [
            {"name": "paddle", "image": "x"}]}}},
         "spec.paddleReplicaSpecs[Chief]: 'Chief' is not a PaddleJob replica type (Master or "
         "Worker)"),
        ("PaddleJob", ("Worker", "template", "spec", "containers", 0, "image"), "",
         "spec.paddleReplicaSpecs[Worker].template.spec.containers[0].image: is required"),
        ("JAXJob", ("Master",), {"template": {"spec": {"containers": [
            {"name": "jax", "image": "x"}]}}},
         "spec.jaxReplicaSpecs[Master]: 'Master' is not a JAXJob replica type (Worker)"),
        ("JAXJob", ("Worker", "template", "spec", "containers", 0, "name"), "main",
         "spec.jaxReplicaSpecs[Worker].template.spec.containers: must have a container named jax"),
        ("JAXJob", ("Worker", "replicas"), "3",
         "spec.jaxReplicaSpecs[Worker].replicas: must be an integer, not a string"),
    ],
)  # fmt: skip
def test_a_kubeflow_job_the_training_operator_refuses_is_invalid_naming_the_field(
    tmp_path: Path, kind: str, path: tuple[Any, ...], value: Any, words: str
) -> None:
    body = kubeflowjob(kind).obj()
    inner: Any = body["spec"][KubeflowJob.KINDS[kind][0]]
    for key in path[:-1]:
        inner = inner[key]
    if value is None:
        del inner[path[-1]]
    else:
        inner[path[-1]] = value
    (entry,) = kubeflow_mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


@pytest.mark.parametrize(
    ("kind", "change", "words"),
    [
        ("TFJob", {"enableDynamicWorker": "yes"},
         "spec.enableDynamicWorker: must be a boolean, not a string"),
        ("TFJob", {"successPolicy": 1}, "spec.successPolicy: must be a string"),
        ("XGBoostJob", {"runPolicy": {"backoffLimit": "3"}},
         "spec.runPolicy.backoffLimit: must be an integer, not a string"),
        ("PaddleJob", {"elasticPolicy": {"minReplicas": True}},
         "spec.elasticPolicy.minReplicas: must be an integer, not a boolean"),
        ("JAXJob", {"runPolicy": {"suspend": "no"}},
         "spec.runPolicy.suspend: must be a boolean, not a string"),
        ("TFJob", {"runPolicy": {"managedBy": "someone/else"}},
         "spec.runPolicy.managedBy: 'someone/else' is not one of kubeflow.org/training-operator"),
        ("PaddleJob", {"elasticPolicy": {}, "paddleReplicaSpecs": {"Master": {"template": {
            "spec": {"containers": [{"name": "paddle", "image": "x"}]}}}}},
         "spec.elasticPolicy: needs a Worker"),
        ("JAXJob", {"jaxReplicaSpecs": {}}, "spec.jaxReplicaSpecs: must name a Worker"),
    ],
)  # fmt: skip
def test_a_kubeflow_job_field_is_checked_for_its_type_and_what_its_webhook_refuses(
    tmp_path: Path, kind: str, change: dict[str, Any], words: str
) -> None:
    (entry,) = kubeflow_mix(tmp_path, kubeflowjob(kind).spec(**change).obj())
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


@pytest.mark.parametrize("kind", ["TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "PyTorchJob"])
def test_a_kubeflow_job_whose_name_is_no_dns1035_label_is_invalid(
    tmp_path: Path, kind: str
) -> None:
    """The training operator's webhooks name each job's pods and services after it."""
    built = pytorchjob("1-bert") if kind == "PyTorchJob" else kubeflowjob(kind, "1-fit")
    (entry,) = (pytorch_mix if kind == "PyTorchJob" else kubeflow_mix)(tmp_path, built.obj())
    assert entry.status == "invalid"
    assert (entry.problem or "").startswith("metadata.name: "), entry.problem


def test_a_kubeflow_job_on_a_stack_without_its_integration_names_it_to_enable(
    tmp_path: Path,
) -> None:
    (entry,) = mix(tmp_path, kubeflowjob("TFJob").obj())
    assert entry.status == "unsupported"
    assert "integration kubeflow.org/tfjob is not enabled" in (entry.problem or "")


WITH_RAY = Catalog(CATALOG.queues, CATALOG.priority_classes, CATALOG.frameworks | {"ray.io/rayjob"})


def rayjob(name: str = "tune", workers: int | None = 3) -> RayJob:
    """A head (1 pod, cpu only) and a worker group of `workers` pods (1 GPU each)."""
    head = Job("head", None).image("x").requests(cpu="2")
    worker = Job("worker", None).image("x").limits(gpu=1)
    return (
        RayJob(name, "team-research", head)
        .queue("gpu-queue")
        .workers("gpu", worker.complete_after("5s"), replicas=workers)
    )


def ray_mix(tmp_path: Path, *docs: Any) -> list[Entry]:
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump_all(docs))
    return load_mix(tmp_path / "mix.yaml", WITH_RAY)


@pytest.mark.parametrize(
    ("change", "gpus", "pods"),
    [
        ({}, 3, 5),  # head, 3 workers, the submitter (K8sJobMode, KubeRay's default)
        ({"submissionMode": "HTTPMode"}, 3, 4),  # no submitter pod
        ({"submissionMode": "SidecarMode"}, 3, 4),  # the submitter is a container of the head
    ],
)
def test_a_rayjob_holds_its_head_workers_and_submitter(
    tmp_path: Path, change: dict[str, Any], gpus: int, pods: int
) -> None:
    (entry,) = ray_mix(tmp_path, rayjob().spec(**change).duration("1h").obj())
    assert entry.status == "ok", entry.problem
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == ("RayJob", gpus, pods, 3600.0)
    group = entry.manifest["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
    assert COMPLETE_AFTER not in group["metadata"]["annotations"]


def test_a_ray_worker_group_without_replicas_has_none_and_num_of_hosts_multiplies(
    tmp_path: Path,
) -> None:
    body = rayjob(workers=None).obj()
    (none,) = ray_mix(tmp_path, body)
    assert (none.status, none.gpus, none.pods) == ("ok", 0, 2), none.problem
    body["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(replicas=2, numOfHosts=2)
    (hosts,) = ray_mix(tmp_path, body)
    assert (hosts.status, hosts.gpus, hosts.pods) == ("ok", 4, 6), hosts.problem


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"shutdownAfterJobFinishes": False}, "spec.shutdownAfterJobFinishes: must be true"),
        ({"shutdownAfterJobFinishes": "yes"},
         "spec.shutdownAfterJobFinishes: must be a boolean, not a string"),
        ({"clusterSelector": {"ray.io/cluster": "shared"}},
         "spec.clusterSelector: a Kueue-managed RayJob makes its own cluster"),
        ({"rayClusterSpec": None}, "spec.rayClusterSpec: is required"),
        ({"submissionMode": "Batch"}, "spec.submissionMode: 'Batch' is not one of K8sJobMode"),
        ({"rayClusterSpec": {"headGroupSpec": None}},
         "spec.rayClusterSpec.headGroupSpec: is required"),
    ],
)  # fmt: skip
def test_a_rayjob_kueue_refuses_is_invalid_naming_the_field(
    tmp_path: Path, change: dict[str, Any], words: str
) -> None:
    (entry,) = ray_mix(tmp_path, rayjob().spec(**change).obj())
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("replicas", -1, "spec.rayClusterSpec.workerGroupSpecs[0].replicas: -1 must not be"),
        ("replicas", "2", "spec.rayClusterSpec.workerGroupSpecs[0].replicas: must be an integer"),
        ("groupName", "head", "spec.rayClusterSpec.workerGroupSpecs[0].groupName: 'head' is"),
        ("groupName", None, "spec.rayClusterSpec.workerGroupSpecs[0].groupName: is required"),
        ("numOfHosts", -2, "spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts: -2 must not be"),
        ("template", None, "spec.rayClusterSpec.workerGroupSpecs[0].template: is required"),
    ],
)  # fmt: skip
def test_a_malformed_ray_worker_group_is_invalid_naming_the_field(
    tmp_path: Path, field: str, value: Any, words: str
) -> None:
    body = rayjob().obj()
    body["spec"]["rayClusterSpec"]["workerGroupSpecs"][0][field] = value
    (entry,) = ray_mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


def test_two_ray_worker_groups_of_one_name_or_too_many_are_invalid(tmp_path: Path) -> None:
    worker = Job("worker", None).image("x").limits(gpu=1)
    twice = rayjob().workers("gpu", worker).obj()
    (entry,) = ray_mix(tmp_path, twice)
    assert entry.problem == (
        "spec.rayClusterSpec.workerGroupSpecs[1].groupName: 'gpu' is the name of an earlier "
        "worker group"
    )
    many = rayjob()
    for i in range(6):
        many.workers(f"g{i}", worker)
    (entry,) = ray_mix(tmp_path, many.obj())
    assert entry.problem == (
        "spec.rayClusterSpec.workerGroupSpecs: 7 groups make 9 pod sets; Kueue takes at most 8"
    )


def test_a_rayjob_on_a_stack_without_the_rayjob_integration_names_it_to_enable(
    tmp_path: Path,
) -> None:
    (entry,) = mix(tmp_path, rayjob().obj())
    assert entry.status == "unsupported"
    assert "integration ray.io/rayjob is not enabled; add it to " in (entry.problem or "")


WITH_MPI = Catalog(
    CATALOG.queues, CATALOG.priority_classes, CATALOG.frameworks | {"kubeflow.org/mpijob"}
)


def mpijob(name: str = "allreduce", workers: int | None = 3) -> MPIJob:
    """A Launcher (1 pod, cpu only) and `workers` Workers (2 GPUs each)."""
    launcher = Job("launcher", None).image("x").requests(cpu="1")
    worker = Job("worker", None).image("x").limits(gpu=2)
    return (
        MPIJob(name, "team-research")
        .queue("gpu-queue")
        .replica("Launcher", launcher)
        .replica("Worker", worker.complete_after("5s"), replicas=workers)
    )


def mpi_mix(tmp_path: Path, *docs: Any) -> list[Entry]:
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump_all(docs))
    return load_mix(tmp_path / "mix.yaml", WITH_MPI)


def test_an_mpijob_holds_the_pods_and_gpus_of_its_launcher_and_workers(tmp_path: Path) -> None:
    (entry,) = mpi_mix(tmp_path, mpijob().duration("1h").obj())
    assert entry.status == "ok", entry.problem
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == ("MPIJob", 6, 4, 3600.0)
    worker = entry.manifest["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    assert COMPLETE_AFTER not in worker["metadata"]["annotations"]


def test_an_mpijobs_launcher_counts_its_gpus_and_running_it_as_a_worker_changes_no_count(
    tmp_path: Path,
) -> None:
    """Kueue counts the Launcher's pod set as written (runLauncherAsWorker only changes the
    mpi-operator's hostfile), and a Launcher of no replicas given as one pod."""
    body = mpijob(workers=2).obj()
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]
    del launcher["replicas"]
    launcher["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    body["spec"]["runLauncherAsWorker"] = True
    (entry,) = mpi_mix(tmp_path, body)
    assert (entry.status, entry.gpus, entry.pods) == ("ok", 5, 3), entry.problem


WORKER_ONLY = {"template": {"spec": {"containers": [{"name": "mpi", "image": "x"}]}}}


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (("Worker", "replicas"), "2",
         "spec.mpiReplicaSpecs[Worker].replicas: must be an integer, not a string"),
        (("Worker", "replicas"), 0, "spec.mpiReplicaSpecs[Worker].replicas: 0 must be at least 1"),
        (("Worker", "replicas"), -1,
         "spec.mpiReplicaSpecs[Worker].replicas: -1 must be at least 1"),
        (("Worker", "replicas"), None,
         "spec.mpiReplicaSpecs[Worker].replicas: is required (the mpi-operator makes none 0"),
        (("Launcher", "replicas"), 2, "spec.mpiReplicaSpecs[Launcher].replicas: 2 must be 1"),
        (("Launcher",), None, "spec.mpiReplicaSpecs[Launcher]: is required"),
        (("Chief",), WORKER_ONLY,
         "spec.mpiReplicaSpecs[Chief]: 'Chief' is not an MPIJob replica type"),
        (("worker",), WORKER_ONLY,
         "spec.mpiReplicaSpecs[worker]: 'worker' is not an MPIJob replica type (Launcher or "
         "Worker, in that case)"),
        (("Worker", "restartPolicy"), "Always",
         "spec.mpiReplicaSpecs[Worker].restartPolicy: 'Always' is not one of Never, OnFailure"),
        (("Worker", "template"), None, "spec.mpiReplicaSpecs[Worker].template: is required"),
        (("Launcher", "template", "spec", "containers"), [],
         "spec.mpiReplicaSpecs[Launcher].template.spec.containers: must not be empty"),
        (("Worker", "template", "spec", "containers", 0, "image"), "",
         "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].image: is required"),
        (("Worker", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
         0.5, "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].resources.limits"
         "[nvidia.com/gpu]"),
    ],
)  # fmt: skip
def test_a_malformed_mpijob_is_invalid_naming_the_field(
    tmp_path: Path, path: tuple[Any, ...], value: Any, words: str
) -> None:
    body = mpijob().obj()
    inner: Any = body["spec"]["mpiReplicaSpecs"]
    for key in path[:-1]:
        inner = inner[key]
    if value is None and path[-1] != "template":
        del inner[path[-1]]
    else:
        inner[path[-1]] = value
    (entry,) = mpi_mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("slotsPerWorker", "1", "spec.slotsPerWorker: must be an integer, not a string"),
        ("slotsPerWorker", -1, "spec.slotsPerWorker: -1 must not be negative"),
        ("runLauncherAsWorker", "yes", "spec.runLauncherAsWorker: must be a boolean"),
        ("mpiImplementation", "MVAPICH",
         "spec.mpiImplementation: 'MVAPICH' is not one of OpenMPI, Intel, MPICH"),
        ("runPolicy", {"cleanPodPolicy": "Some"},
         "spec.runPolicy.cleanPodPolicy: 'Some' is not one of None, Running, All"),
        ("runPolicy", {"backoffLimit": -2}, "spec.runPolicy.backoffLimit: -2 must not be negative"),
        ("runPolicy", {"managedBy": "someone/else"},
         "spec.runPolicy.managedBy: 'someone/else' is not one of kubeflow.org/mpi-operator"),
        ("runPolicy", {"schedulingPolicy": {"minAvailable": True}},
         "spec.runPolicy.schedulingPolicy.minAvailable: must be an integer, not a boolean"),
        ("mpiReplicaSpecs", None, "spec.mpiReplicaSpecs: is required"),
        ("mpiReplicaSpecs", {}, "spec.mpiReplicaSpecs[Launcher]: is required"),
        ("mpiReplicaSpecs", [], "spec.mpiReplicaSpecs: must be a mapping, not a list ([])"),
    ],
)  # fmt: skip
def test_an_mpijob_field_the_mpi_operator_refuses_is_invalid_naming_it(
    tmp_path: Path, field: str, value: Any, words: str
) -> None:
    """Every field of the mpi-operator's MPIJobSpec has its type checked (the API server
    refuses one of another type, and the engine could not decode it), and what its CRD's enums
    and its controller's validation refuse is refused by field: Kueue would admit such a job,
    and hold its quota, with nothing running."""
    body = mpijob().obj()
    body["spec"][field] = value
    (entry,) = mpi_mix(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem


def test_an_mpijob_whose_workers_hostnames_the_mpi_operator_cannot_make_is_invalid(
    tmp_path: Path,
) -> None:
    (entry,) = mpi_mix(tmp_path, mpijob(name="1st-run").obj())
    assert entry.status == "invalid"
    assert entry.problem == (
        "metadata.name: the mpi-operator's last worker would be '1st-run-worker-2', not a "
        "DNS-1035 label (a letter first, at most 63 characters)"
    )


def test_an_mpijob_on_a_stack_without_the_mpijob_integration_names_it_to_enable(
    tmp_path: Path,
) -> None:
    (entry,) = mix(tmp_path, mpijob().obj())
    assert entry.status == "unsupported"
    assert entry.problem == (
        "Kueue does not manage MPIJob on this stack: integration kubeflow.org/mpijob is "
        "not enabled; add it to kueue.manager.integrations.frameworks (now: batch/job, "
        "deployment, jobset.x-k8s.io/jobset, pod)"
    )


def test_a_folder_is_read_in_path_order_and_lists_are_expanded(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.yml").write_text(yaml.safe_dump(job("second")))
    (tmp_path / "a.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [job("first"), job("also")]})
    )
    (tmp_path / "notes.txt").write_text("not a manifest")
    entries = load_mix(tmp_path, CATALOG, root=tmp_path)
    assert [(e.name, e.source) for e in entries] == [
        ("first", "a.yaml#1"),
        ("also", "a.yaml#2"),
        ("second", "b/2.yml#1"),
    ]


def test_submission_order_is_submit_time_then_mix_order(tmp_path: Path) -> None:
    late = job("late", annotations={ANNOTATION_SUBMIT_AT: "1h"})
    first = job("first")
    second = job("second")
    bad = job("bad", namespace="nobody")
    entries = mix(tmp_path, late, first, bad, second)
    assert [e.name for e in submission_order(entries)] == ["first", "second", "late"]


# --- refusals, one per entry -------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (job(namespace="nobody"), "invalid", "namespace nobody: no team owns it"),
        (job(namespace=None), "invalid", "namespace default (none given"),
        (job(queue=None), "invalid", "no kueue.x-k8s.io/queue-name label"),
        (job(queue="gpu-queue", namespace="team-vision"), "invalid",
         "queue gpu-queue does not exist in namespace team-vision (its LocalQueue: vision-jobs)"),
        (job(labels={"kueue.x-k8s.io/priority-class": "urgent"}), "invalid",
         "priority class urgent is not declared by the stack (priorityClasses: high, low)"),
        (job(annotations={ANNOTATION_DURATION: "soon"}), "invalid",
         "gpu-queues.dev/duration: 'soon' is not a duration"),
        (job(annotations={ANNOTATION_DURATION: "0s"}), "invalid", "longer than 0s"),
        (job(annotations={ANNOTATION_SUBMIT_AT: "tomorrow"}), "invalid",
         "gpu-queues.dev/submit-at: 'tomorrow' is not a duration"),
        ({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": {"name": "js", "namespace": "team-research"}}, "invalid",
         "spec: is required"),
        ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
          "metadata": {"name": "pt", "namespace": "team-research"}}, "unsupported",
         "integration kubeflow.org/pytorchjob is not enabled; add it to "
         "kueue.manager.integrations.frameworks"),
        ({"apiVersion": "apps/v1", "kind": "Deployment",
          "metadata": {"name": "d", "namespace": "team-research"}}, "invalid",
         "spec: is required"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, "unsupported",
         "ConfigMap (v1) is not a workload Kueue manages"),
        ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"namespace": "x"}}, "invalid",
         "metadata.name is missing"),
        (["a", "list"], "invalid", "not a Kubernetes object"),
        ({"metadata": {"name": "x"}}, "invalid", "no apiVersion or kind"),
    ],
)  # fmt: skip
def test_bad_input_is_one_refused_entry_with_the_reason(
    tmp_path: Path, body: Any, status: str, words: str
) -> None:
    ok = job("fine")
    entries = mix(tmp_path, ok, body)
    assert entries[0].status == "ok"
    assert entries[1].status == status
    assert words in (entries[1].problem or ""), entries[1].problem
    assert entries[1].manifest == {}


def test_a_file_that_is_not_yaml_is_one_entry_and_the_rest_still_replays(tmp_path: Path) -> None:
    (tmp_path / "1-broken.yaml").write_text("kind: Job\n  bad: [indent\n")
    (tmp_path / "2-good.yaml").write_text(yaml.safe_dump(job()))
    entries = load_mix(tmp_path, CATALOG, root=tmp_path)
    assert [e.status for e in entries] == ["invalid", "ok"]
    assert "1-broken.yaml is not valid YAML (line" in (entries[0].problem or "")


def test_a_second_workload_with_the_same_name_is_refused(tmp_path: Path) -> None:
    entries = mix(
        tmp_path,
        job("same"),
        job("same", gpus=1),
        job("same", namespace="team-vision", queue="vision-jobs"),
    )
    assert [e.status for e in entries] == ["ok", "invalid", "ok"]
    assert "comes earlier in the mix (" in (entries[1].problem or "")


def test_a_mix_counted_and_then_loaded_is_parsed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The what-if counts a mix's workloads before anything starts and reads it again to
    replay it: one parse of each file's text serves both (documents._last_read)."""
    parses: list[str] = []
    parse = documents.yamlio.load_all

    def counted(text: str, *args: Any, **kwargs: Any) -> list[Any]:
        parses.append(text)
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(documents.yamlio, "load_all", counted)
    path = tmp_path / "counted-once.yaml"
    path.write_text(yaml.safe_dump_all([job("a"), job("b", gpus=1)]))
    assert mix_size_problem(path, Limits()) is None
    entries = load_mix(path, CATALOG)
    assert [(e.name, e.status, e.gpus) for e in entries] == [("a", "ok", 2), ("b", "ok", 1)]
    assert len(parses) == 1


def test_a_mix_file_rewritten_between_two_reads_is_read_anew(tmp_path: Path) -> None:
    """The same size, written within the file system's timestamp tick: the second read sees
    the new text, as the parse is kept by the text itself."""
    path = tmp_path / "rewritten.yaml"
    path.write_text(yaml.safe_dump(job("aaaa")))
    assert [e.name for e in load_mix(path, CATALOG)] == ["aaaa"]
    path.write_text(yaml.safe_dump(job("bbbb")))
    assert [e.name for e in load_mix(path, CATALOG)] == ["bbbb"]


# --- any stack ---------------------------------------------------------------------------


def _name(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(
        rng.choice(string.ascii_lowercase + string.digits + "-") for _ in range(rng.randint(2, 20))
    ).rstrip("-")


@pytest.mark.parametrize("seed", range(5))
def test_the_catalog_follows_any_stack_it_is_given(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    names = list(dict.fromkeys(_name(rng) for _ in range(rng.randint(1, 5))))
    teams = [gpu_team(n, {"fl": {"gpu": 1}}) for n in names]
    stack = Stack().flavor(gpu_flavor("fl", len(names))).cohort("pool").team(*teams)
    raw = parse_config(stack.yaml(), "generated")
    config = load_config(raw)
    catalog = Catalog.from_stack(config, ["batch/job"])
    docs = [job(f"j-{n}", namespace=f"team-{n}", gpus=1) for n in names]
    docs.append(job("stranger", namespace="team-" + "z" * 30, gpus=1))
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    entries = load_mix(path, catalog)
    assert [(e.team, e.cluster_queue) for e in entries[:-1]] == [(n, f"{n}-cq") for n in names]
    assert entries[-1].status == "invalid" and "no team owns it" in (entries[-1].problem or "")


@pytest.mark.parametrize("seed", range(3))
def test_every_local_queue_of_a_team_takes_workloads(tmp_path: Path, seed: int) -> None:
    """A team of several namespaces and LocalQueues (issue 39): a job in each queue goes to the
    team's ClusterQueue; a namespace the team owns without a queue is refused naming the team
    and its queues, not as a namespace no team owns."""
    rng = random.Random(seed)
    name = _name(rng)
    spaces = [f"{name}-{i}" for i in range(rng.randint(2, 4))]
    queues = [{"name": f"q{i}", "namespace": ns} for i, ns in enumerate(spaces[:-1])]
    team = gpu_team(name, {"fl": {"gpu": 1}})
    team.set(namespace=None, localQueue=None, namespaces=spaces, localQueues=queues)
    stack = Stack().flavor(gpu_flavor("fl", 1)).cohort("pool").team(team)
    config = load_config(parse_config(stack.yaml(), "g"))
    catalog = Catalog.from_stack(config, ["batch/job"])
    docs = [
        job(f"j{i}", namespace=q["namespace"], queue=q["name"], gpus=1)
        for i, q in enumerate(queues)
    ]
    docs.append(job("bare", namespace=spaces[-1], queue="q0", gpus=1))
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    *taken, bare = load_mix(path, catalog)
    assert [(e.status, e.team, e.cluster_queue) for e in taken] == [
        ("ok", name, f"{name}-cq")
    ] * len(queues)
    assert bare.status == "invalid" and f"(team {name}) has no LocalQueue" in (bare.problem or "")
