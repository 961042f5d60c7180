"""Bad input in a what-if mix (issue 23, item 9): a malformed manifest is an `invalid` row
naming the field, never an exception, and the rest of the mix replays; a mix over the size
limits is refused whole, before anything starts, unless a flag raises the limit.

The fuzzing replaces every node of a valid Job, Pod, JobSet, PyTorchJob, RayJob, MPIJob, TFJob,
PaddleJob (the other Kubeflow v1 kinds share their checks), RayCluster, StatefulSet, Deployment,
pod group (of one Pod), LeaderWorkerSet and TrainJob (its runtime beside it in every mix;
tests/unit/whatif/test_trainjob.py fuzzes the runtime), one at a time, by a null, a list, a
number, a string and a mapping, then a few at a time at random."""

from __future__ import annotations

import copy
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_queues.kueue.quantity import parse_quantity
from gpu_queues.whatif import cli, documents
from gpu_queues.whatif.documents import MAX_BYTES, MAX_WORKLOADS, Limits, MixTooLarge
from gpu_queues.whatif.mix import (
    ANNOTATION_DURATION,
    ANNOTATION_SUBMIT_AT,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    UNCHECKED,
    Catalog,
    Entry,
    TeamQueue,
    load_mix,
)
from tests.properties import examples

pytestmark = pytest.mark.unit

ANCESTOR: Final = "trainer.kubeflow.org/trainjob-ancestor-step"

CATALOG = Catalog(
    queues=(TeamQueue("research", "team-research", "gpu-queue", "research-cq"),),
    priority_classes=frozenset({"high"}),
    frameworks=frozenset(
        {
            "batch/job",
            "pod",
            "jobset.x-k8s.io/jobset",
            "kubeflow.org/pytorchjob",
            "ray.io/rayjob",
            "kubeflow.org/mpijob",
            "kubeflow.org/tfjob",
            "kubeflow.org/paddlejob",
            "leaderworkerset.x-k8s.io/leaderworkerset",
            "ray.io/raycluster",
            "trainer.kubeflow.org/trainjob",
            "statefulset",
            "deployment",
        }
    ),
)
META: dict[str, Any] = {
    "name": "train",
    "namespace": "team-research",
    "labels": {QUEUE_LABEL: "gpu-queue", PRIORITY_LABEL: "high"},
    "annotations": {ANNOTATION_SUBMIT_AT: "10m", ANNOTATION_DURATION: "1h"},
}
POD_SPEC: dict[str, Any] = {
    "restartPolicy": "Never",
    "nodeSelector": {"gpu": "h100"},
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "initContainers": [{"name": "prep", "image": "x", "resources": {"requests": {"cpu": "500m"}}}],
    "containers": [
        {
            "name": "main",
            "image": "registry.example/train:1",
            "command": ["python", "train.py"],
            "env": [{"name": "EPOCHS", "value": "3"}],
            "resources": {
                "limits": {"nvidia.com/gpu": 2, "memory": "8Gi"},
                "requests": {"cpu": "4"},
            },
        }
    ],
}
JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": META,
    "spec": {
        "parallelism": 2,
        "completions": 4,
        "backoffLimit": 0,
        "suspend": False,
        "template": {"metadata": {"labels": {"app": "train"}}, "spec": POD_SPEC},
    },
}
POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": META, "spec": POD_SPEC}
LEADER_POD: dict[str, Any] = {
    "restartPolicy": "Never",
    "containers": [{"name": "lead", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
}
JOBSET: dict[str, Any] = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": META,
    "spec": {
        "suspend": False,
        "replicatedJobs": [
            {
                "name": "leader",
                "replicas": 1,
                "template": {"spec": {"template": {"spec": LEADER_POD}}},
            },
            {
                "name": "workers",
                "replicas": 2,
                "template": {
                    "metadata": {"labels": {"role": "worker"}},
                    "spec": {"parallelism": 2, "completions": 2, "template": {"spec": POD_SPEC}},
                },
            },
        ],
    },
}
PYTORCH_POD: dict[str, Any] = {
    **POD_SPEC,
    "containers": [{**POD_SPEC["containers"][0], "name": "pytorch"}],
}
PYTORCHJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": META,
    "spec": {
        "runPolicy": {"suspend": False, "cleanPodPolicy": "None"},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {**LEADER_POD, "containers": [
                    {**LEADER_POD["containers"][0], "name": "pytorch"}]}},
            },
            "Worker": {
                "replicas": 3,
                "template": {"metadata": {"labels": {"role": "worker"}}, "spec": PYTORCH_POD},
            },
        },
    },
}  # fmt: skip
RAYJOB: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": META,
    "spec": {
        "entrypoint": "python /app/tune.py",
        "shutdownAfterJobFinishes": True,
        "submissionMode": "K8sJobMode",
        "rayClusterSpec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": "0"}, "template": {"spec": LEADER_POD}
            },
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": 2,
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "numOfHosts": 1,
                    "template": {"metadata": {"labels": {"role": "worker"}}, "spec": POD_SPEC},
                },
            ],
        },
    },
}  # fmt: skip
MPIJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "metadata": META,
    "spec": {
        "slotsPerWorker": 1,
        "runLauncherAsWorker": False,
        "mpiImplementation": "OpenMPI",
        "runPolicy": {"suspend": False, "cleanPodPolicy": "Running"},
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": LEADER_POD},
            },
            "Worker": {
                "replicas": 3,
                "restartPolicy": "Never",
                "template": {"metadata": {"labels": {"role": "worker"}}, "spec": POD_SPEC},
            },
        },
    },
}  # fmt: skip
NODE_POD: dict[str, Any] = {
    **POD_SPEC, "containers": [{**POD_SPEC["containers"][0], "name": "node"}],
}  # fmt: skip
RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "dataset-initializer",
                        "template": {
                            "metadata": {"labels": {ANCESTOR: "dataset-initializer"}},
                            "spec": {"template": {"spec": LEADER_POD}},
                        },
                    },
                    {
                        "name": "node",
                        "template": {
                            "metadata": {"labels": {ANCESTOR: "trainer"}},
                            "spec": {"template": {"spec": NODE_POD}},
                        },
                    },
                ]
            }
        },
    },
}
"""The runtime TRAINJOB names, in every mix `load` reads (no row of its own)."""
TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": META,
    "spec": {
        "runtimeRef": {
            "name": "torch-distributed",
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
        },
        "suspend": False,
        "trainer": {
            "image": "registry.example/train:1",
            "command": ["torchrun", "train.py"],
            "env": [{"name": "EPOCHS", "value": "3"}],
            "numNodes": 3,
            "numProcPerNode": 2,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}, "requests": {"cpu": "4"}},
        },
    },
}
LWS: dict[str, Any] = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": META,
    "spec": {
        "replicas": 2,
        "startupPolicy": "LeaderCreated",
        "leaderWorkerTemplate": {
            "size": 4,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": {"spec": LEADER_POD},
            "workerTemplate": {"metadata": {"labels": {"role": "worker"}}, "spec": POD_SPEC},
        },
    },
}
RAYCLUSTER: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": META,
    "spec": RAYJOB["spec"]["rayClusterSpec"],
}
TFJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": META,
    "spec": {
        "runPolicy": {"suspend": False},
        "successPolicy": "AllWorkers",
        "tfReplicaSpecs": {
            "PS": {"replicas": 1, "template": {"spec": {**LEADER_POD, "containers": [
                {**LEADER_POD["containers"][0], "name": "tensorflow"}]}}},
            "worker": {"replicas": 2, "template": {"spec": {**POD_SPEC, "containers": [
                {**POD_SPEC["containers"][0], "name": "tensorflow"}]}}},
        },
    },
}  # fmt: skip
PADDLEJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PaddleJob",
    "metadata": META,
    "spec": {
        "elasticPolicy": {"minReplicas": 2, "maxReplicas": 3},
        "paddleReplicaSpecs": {
            "Worker": {"replicas": 3, "template": {"spec": {**POD_SPEC, "containers": [
                {**POD_SPEC["containers"][0], "name": "paddle"}]}}},
        },
    },
}  # fmt: skip
STATEFULSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": META,
    "spec": {
        "replicas": 2,
        "serviceName": "train",
        "selector": {"matchLabels": {"app": "train"}},
        "template": {"metadata": {"labels": {"app": "train"}}, "spec": POD_SPEC},
    },
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": META,
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "train"}},
        "template": {"metadata": {"labels": {"app": "train"}}, "spec": POD_SPEC},
    },
}
# A pod group of one pod (gpu_queues.whatif.podgroups): its group label and total count fuzzed.
POD_IN_GROUP: dict[str, Any] = {
    **POD,
    "metadata": {
        **META,
        "labels": {**META["labels"], "kueue.x-k8s.io/pod-group-name": "train"},
        "annotations": {**META["annotations"], "kueue.x-k8s.io/pod-group-total-count": "1"},
    },
}
# Keys whose values are a mapping of names (shown as field[key]), not fields (field.key).
NAMED = frozenset(
    {
        "labels",
        "annotations",
        "limits",
        "requests",
        "nodeSelector",
        "pytorchReplicaSpecs",
        "mpiReplicaSpecs",
        "tfReplicaSpecs",
        "paddleReplicaSpecs",
        "rayStartParams",
        "matchLabels",
    }
)
QUANTITIES = frozenset({"limits", "requests"})
REPLACEMENTS: list[Any] = [None, [], ["x"], 7, "x", {}, {"k": 1}]

Path_ = tuple[str | int, ...]


def nodes(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    """The path of every node under `value` (not `value` itself)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()  # fmt: skip
    for key, inner in items:
        yield (*path, key)
        yield from nodes(inner, (*path, key))


def get(body: Any, path: Path_) -> Any:
    for key in path:
        body = body[key]
    return body


def put(body: Any, path: Path_, value: Any) -> Any:
    changed = copy.deepcopy(body)
    get(changed, path[:-1])[path[-1]] = value
    return changed


def shown(path: Path_) -> str:
    """The path as the row's reason names it: spec.template.spec.containers[0].image,
    metadata.labels[app]."""
    text = ""
    for i, key in enumerate(path):
        if isinstance(key, int) or (i and path[i - 1] in NAMED):
            text += f"[{key}]"
        else:
            text += f".{key}" if text else str(key)
    return text


def category(value: Any) -> str:
    return type(value).__name__ if not isinstance(value, bool) else "bool"


def load(tmp_path: Path, *bodies: Any) -> list[Entry]:
    """The bodies' rows, read from a mix that holds them and, last, the runtime TRAINJOB
    names."""
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all([*bodies, RUNTIME]))
    return load_mix(path, CATALOG)


def sound(entry: Entry) -> str | None:
    """What is wrong with a row, if anything: a refusal must say why, in the checks' words."""
    if entry.status not in ("ok", "invalid", "unsupported"):
        return f"status {entry.status}"
    if entry.status == "ok":
        return None if entry.problem is None else "ok with a problem"
    if not entry.problem:
        return "refused without a reason"
    if entry.problem.startswith(UNCHECKED):
        return f"the checks broke: {entry.problem}"
    if entry.manifest:
        return "refused but would be submitted"
    return None


VALID = [JOB, POD, JOBSET, PYTORCHJOB, RAYJOB, MPIJOB, TFJOB, PADDLEJOB, RAYCLUSTER, STATEFULSET,
         DEPLOYMENT, POD_IN_GROUP, TRAINJOB, LWS]  # fmt: skip
VALID_IDS = [
    "job", "pod", "jobset", "pytorchjob", "rayjob", "mpijob", "tfjob", "paddlejob", "raycluster",
    "statefulset", "deployment", "pod-group", "trainjob", "lws",
]  # fmt: skip


@pytest.mark.parametrize("valid", VALID, ids=VALID_IDS)
def test_the_valid_manifests_are_replayed(tmp_path: Path, valid: dict[str, Any]) -> None:
    (entry,) = load(tmp_path, valid)
    assert entry.status == "ok", entry.problem
    # A JobSet's workers: 2 replicas x 2 pods x 2 GPUs; its leader none. A PyTorchJob's
    # Workers: 3 pods x 2 GPUs; its Master none. A RayJob's workers: 2 pods x 2 GPUs; its head
    # and its submitter none. An MPIJob's Workers: 3 pods x 2 GPUs; its Launcher none. A
    # TFJob's workers: 2 pods x 2 GPUs; its PS none. A PaddleJob's Workers: 3 pods x 2 GPUs. A
    # RayCluster's workers: 2 pods x 2 GPUs; its head none (and no submitter). A StatefulSet's
    # 2 replicas x 2 GPUs, as a Deployment's. A pod group of one pod: the pod's. A TrainJob's
    # trainer: its numNodes, 3 pods x its resourcesPerNode's 2 GPUs; its runtime's initializer
    # one pod, none. An LWS's 2 groups (a Workload each): 3 workers x 2 GPUs and a leader of
    # none, each.
    assert (entry.gpus, entry.pods) == {
        "Job": (4, 2), "Pod": (2, 1), "JobSet": (8, 5), "PyTorchJob": (6, 4), "RayJob": (4, 4),
        "MPIJob": (6, 4), "TFJob": (4, 3), "PaddleJob": (6, 3), "RayCluster": (4, 3),
        "StatefulSet": (4, 2), "Deployment": (4, 2), "TrainJob": (6, 4), "LeaderWorkerSet": (12, 8),
    }[valid["kind"]]  # fmt: skip


@pytest.mark.parametrize("valid", VALID, ids=VALID_IDS)
def test_every_node_replaced_by_any_type_is_a_row_naming_the_field(
    tmp_path: Path, valid: dict[str, Any]
) -> None:
    failures = []
    cases = 0
    for path in nodes(valid):
        original = get(valid, path)
        for replacement in REPLACEMENTS:
            cases += 1
            mutated = put(valid, path, replacement)
            try:
                entries = load(tmp_path, mutated)
            except Exception as exc:
                failures.append(f"{shown(path)} = {replacement!r}: raised {exc!r}")
                continue
            if len(entries) != 1:
                failures.append(f"{shown(path)} = {replacement!r}: {len(entries)} rows")
                continue
            (entry,) = entries
            wrong = sound(entry)
            # Another type than the field's (not null: an absent field) is refused, naming it;
            # a number is a quantity too.
            other_type = replacement is not None and category(replacement) != category(original)
            quantity = len(path) > 1 and path[-2] in QUANTITIES and isinstance(replacement, int)
            if not wrong and other_type and not quantity:
                if entry.status != "invalid":
                    wrong = f"{entry.status}, not invalid"
                elif f"{shown(path)}:" not in (entry.problem or ""):
                    wrong = f"the reason does not name {shown(path)}: {entry.problem}"
            if wrong:
                failures.append(f"{shown(path)} = {replacement!r}: {wrong}")
    assert cases > 200  # the manifests have enough nodes for this to mean something
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("seed", range(4))
def test_many_nodes_broken_at_once_are_still_rows_and_the_rest_replays(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    garbage: list[Any] = [*REPLACEMENTS, True, 1.5, -1, "", {"containers": 3}, [None], [{}]]
    mutants = []
    for _ in range(150):
        body = copy.deepcopy(rng.choice(VALID))
        for _ in range(rng.randint(1, 4)):
            paths = list(nodes(body))
            if not paths:
                break
            body = put(body, rng.choice(paths), copy.deepcopy(rng.choice(garbage)))
        mutants.append(body)
    survivor = put(JOB, ("metadata",), {**META, "name": "survivor"})
    entries = load(tmp_path, *mutants, survivor)
    assert len(entries) == len(mutants) + 1
    problems = [f"#{e.index}: {why}" for e in entries if (why := sound(e))]
    assert not problems, "\n".join(problems)
    assert entries[-1].status == "ok" and entries[-1].name == "survivor"
    assert sum(e.status == "invalid" for e in entries) > 100


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ((("spec",), None), "spec: is required"),
        ((("spec", "template"), [{"spec": {}}]), "spec.template: must be a mapping, not a list"),
        ((("metadata",), ["train"]), "metadata: must be a mapping, not a list"),
        ((("metadata", "name"), 42),
         "metadata.name: must be a string, not a number (42) (quote it)"),
        ((("spec", "template", "spec", "containers"), {"name": "main"}),
         "spec.template.spec.containers: must be a list, not a mapping"),
        ((("spec", "template", "spec", "containers"), []),
         "spec.template.spec.containers: must not be empty"),
        ((("spec", "template", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
          "lots"),
         "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: 'lots' is not a "
         "quantity"),
        ((("spec", "parallelism"), "2"), "spec.parallelism: must be an integer, not a string"),
        ((("metadata", "labels", QUEUE_LABEL), 3),
         f"metadata.labels[{QUEUE_LABEL}]: must be a string, not a number (3) (quote it)"),
        ((("kind",), 5), "kind: must be a string"),
    ],
)  # fmt: skip
def test_the_reason_names_the_field_and_what_it_should_be(
    tmp_path: Path, change: tuple[Path_, Any], words: str
) -> None:
    path, value = change
    ok, bad = load(tmp_path, put(JOB, ("metadata", "name"), "fine"), put(JOB, path, value))
    assert ok.status == "ok"
    assert bad.status == "invalid" and words in (bad.problem or ""), bad.problem


@pytest.mark.parametrize(
    ("value", "refused"), [(2**31 - 1, False), (2**31, True), (-(2**31) - 1, True), (10**20, True)]
)
def test_an_int32_field_out_of_range_is_a_row_as_the_api_server_refuses_it(
    tmp_path: Path, value: int, refused: bool
) -> None:
    (entry,) = load(tmp_path, put(JOB, ("spec", "parallelism"), value))
    if refused:
        assert entry.status == "invalid"
        assert entry.problem == f"spec.parallelism: {value} is out of range for an int32"
    else:
        assert entry.status == "ok", entry.problem


@pytest.mark.parametrize(
    ("gpus", "refused"),
    [("9223372036854775", False), ("9223372036854776", True), ("1e30", True), (10**19, True)],
)
def test_a_quantity_beyond_int64_thousandths_is_a_row_not_an_overflow(
    tmp_path: Path, gpus: str | int, refused: bool
) -> None:
    # 2**63 - 1 thousandths is 9,223,372,036,854,775.807: Kueue's MilliValue arithmetic, and
    # the engine's node fit, wrap past it, and a "1e30" GPU job came out admitted.
    limits = ("spec", "template", "spec", "containers", 0, "resources", "limits")
    (entry,) = load(tmp_path, put(JOB, limits, {"nvidia.com/gpu": gpus}))
    if refused:
        assert entry.status == "invalid"
        assert "more than Kubernetes' resource arithmetic holds" in (entry.problem or "")
        assert "nvidia.com/gpu" in (entry.problem or "")
    else:
        assert entry.status == "ok", entry.problem


# --- values the API server or Kueue would refuse (issue 42, class 4) -------------------

LIMITS_PATH: Final = ("spec", "template", "spec", "containers", 0, "resources", "limits")


@pytest.mark.parametrize(
    ("gpus", "refused"),
    [(2, False), ("3", False), ("2000m", False), (0.5, True), ("1.5", True), ("500m", True),
     ("1e-1", True)],
)  # fmt: skip
def test_a_fraction_of_a_gpu_is_refused_as_kubernetes_refuses_it(
    tmp_path: Path, gpus: Any, refused: bool
) -> None:
    # Kubernetes allows only whole numbers of an extended resource; 0.5 GPU was counted as one.
    (entry,) = load(tmp_path, put(JOB, LIMITS_PATH, {"nvidia.com/gpu": gpus}))
    if refused:
        assert entry.status == "invalid" and not entry.manifest
        assert (entry.problem or "").startswith(
            "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: "
            "nvidia.com/gpu is an extended resource: Kubernetes allows only whole numbers"
        ), entry.problem
    else:
        assert entry.status == "ok", entry.problem
        assert entry.gpus == 2 * int(parse_quantity(gpus))


def test_a_fraction_of_a_gpu_is_refused_in_requests_and_init_containers_too(
    tmp_path: Path,
) -> None:
    requests = put(JOB, (*LIMITS_PATH[:-1], "requests"), {"amd.com/gpu": "0.25"})
    init = put(JOB, ("spec", "template", "spec", "initContainers", 0, "resources", "limits"),
               {"nvidia.com/gpu": "1.5"})  # fmt: skip
    pod = put(POD, ("spec", "containers", 0, "resources", "limits"), {"nvidia.com/gpu": 0.5})
    entries = load(tmp_path, requests, put(init, ("metadata", "name"), "b"), pod)
    assert [e.status for e in entries] == ["invalid"] * 3
    assert [(e.problem or "").split(":")[0] for e in entries] == [
        "spec.template.spec.containers[0].resources.requests[amd.com/gpu]",
        "spec.template.spec.initContainers[0].resources.limits[nvidia.com/gpu]",
        "spec.containers[0].resources.limits[nvidia.com/gpu]",
    ]


GO_MAX = "106751d23h47m16s"  # 9,223,372,036.854775807 s, Go's time.Duration max, rounded down


@pytest.mark.parametrize(
    ("annotation", "value", "refused"),
    [(ANNOTATION_SUBMIT_AT, GO_MAX, False), (ANNOTATION_SUBMIT_AT, "106751d23h47m17s", True),
     (ANNOTATION_SUBMIT_AT, "200000d", True),
     (ANNOTATION_DURATION, "2562047h", False), (ANNOTATION_DURATION, "2562048h", True),
     (ANNOTATION_DURATION, "9999999999999999999s", True)],
)  # fmt: skip
def test_a_time_beyond_gos_duration_is_refused_naming_the_annotation(
    tmp_path: Path, annotation: str, value: str, refused: bool
) -> None:
    annotations = {annotation: value}
    (entry,) = load(tmp_path, put(JOB, ("metadata", "annotations"), annotations))
    if refused:
        assert entry.status == "invalid" and not entry.manifest
        assert (entry.problem or "").startswith(f"{annotation}: "), entry.problem
    else:
        assert entry.status == "ok", entry.problem


def test_a_start_and_run_together_beyond_gos_duration_is_refused(tmp_path: Path) -> None:
    both = {ANNOTATION_SUBMIT_AT: "60000d", ANNOTATION_DURATION: "60000d"}
    each = {ANNOTATION_SUBMIT_AT: "60000d", ANNOTATION_DURATION: "40000d"}
    bad, fine = load(
        tmp_path,
        put(JOB, ("metadata", "annotations"), both),
        put(put(JOB, ("metadata", "annotations"), each), ("metadata", "name"), "fine"),
    )
    assert bad.status == "invalid"
    assert "would end beyond what Go's time.Duration holds" in (bad.problem or "")
    assert fine.status == "ok", fine.problem


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [(("metadata", "name"), "Train", "metadata.name: 'Train' is not a Job name"),
     (("metadata", "name"), "train\nkind: Secret", "metadata.name:"),
     (("metadata", "name"), "../../etc", "metadata.name:"),
     (("metadata", "name"), "a" * 64, "at most 63 characters"),
     (("metadata", "name"), "-train", "metadata.name:"),
     (("metadata", "namespace"), "team.research", "metadata.namespace: 'team.research' is not"),
     (("metadata", "namespace"), "../team-research", "metadata.namespace:"),
     (("metadata", "namespace"), "Team-Research", "metadata.namespace:"),
     (("metadata", "labels", QUEUE_LABEL), "gpu queue",
      f"metadata.labels[{QUEUE_LABEL}]: 'gpu queue' is not a label value"),
     (("metadata", "labels", PRIORITY_LABEL), "h" * 64,
      f"metadata.labels[{PRIORITY_LABEL}]: "),
     (("metadata", "labels", "app"), "<b>x</b>", "metadata.labels[app]: "),
     (("metadata", "labels"), {"bad key!": "x"}, "metadata.labels[bad key!]: "),
     (("metadata", "labels"), {"a/b/c": "x"}, "is not a label key")],
)  # fmt: skip
def test_a_name_the_api_server_refuses_is_refused_naming_the_field(
    tmp_path: Path, field: Path_, value: Any, words: str
) -> None:
    (entry,) = load(tmp_path, put(JOB, field, value))
    assert entry.status == "invalid" and not entry.manifest
    assert words in (entry.problem or ""), entry.problem


def test_a_pod_name_may_be_a_long_subdomain_a_job_name_fits_its_label(tmp_path: Path) -> None:
    # Kubernetes copies a Job's name into its pods' batch.kubernetes.io/job-name label (63
    # characters at most); a Pod's name is a DNS subdomain (253).
    long = "a" * 60 + ".b" * 20
    pod, job = load(
        tmp_path, put(POD, ("metadata", "name"), long), put(JOB, ("metadata", "name"), long)
    )
    assert pod.status == "ok", pod.problem
    assert job.status == "invalid" and "at most 63 characters" in (job.problem or "")


def _takes_as_job_name(name: str) -> bool:
    """The API server's rule, written out apart from the code under test: dot-separated parts
    of lowercase letters, digits and '-', each starting and ending with a letter or digit,
    63 characters at most (a Job's name becomes a label value)."""
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
    parts = name.split(".")
    return 0 < len(name) <= 63 and all(
        p and p[0] in alnum and p[-1] in alnum and set(p) <= set(alnum + "-") for p in parts
    )


NAME_TEXT = st.text(st.sampled_from("ab9-._/ \nA\u00e9<>#"), max_size=70) | st.sampled_from(
    ["train", "a" * 63, "a" * 64, "a.b", "a..b", "-a", "a-", "../x"]
)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=NAME_TEXT)
def test_a_job_is_replayed_only_under_a_name_the_api_server_takes(name: str) -> None:
    (entry,) = load_mix_text(put(JOB, ("metadata", "name"), name))
    if _takes_as_job_name(name):
        assert entry.status == "ok", entry.problem
    else:
        assert entry.status == "invalid" and not entry.manifest, name
        assert (entry.problem or "").startswith("metadata.name"), entry.problem


def load_mix_text(*bodies: Any) -> list[Entry]:
    """`load`, in a folder of its own (hypothesis runs many examples in one test)."""
    with tempfile.TemporaryDirectory() as folder:
        return load(Path(folder), *bodies)


# --- the size limits -----------------------------------------------------------------


def test_the_limits_are_a_hundred_thousand_workloads_and_a_hundred_megabytes() -> None:
    assert (MAX_WORKLOADS, MAX_BYTES) == (100_000, 100_000_000)
    assert Limits() == Limits(MAX_WORKLOADS, MAX_BYTES)


def test_a_mix_of_too_many_workloads_is_refused_naming_the_limit_and_the_flag(
    tmp_path: Path,
) -> None:
    jobs = [put(JOB, ("metadata", "name"), f"j{i}") for i in range(4)]
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump_all(jobs))
    assert len(load_mix(tmp_path / "mix.yaml", CATALOG, limits=Limits(max_workloads=4))) == 4
    with pytest.raises(MixTooLarge) as refused:
        load_mix(tmp_path / "mix.yaml", CATALOG, limits=Limits(max_workloads=3))
    assert "more than 3 workloads" in str(refused.value)
    assert "--max-workloads" in str(refused.value) and "MAX_WORKLOADS=" in str(refused.value)


def test_a_mix_too_large_is_refused_from_its_size_before_any_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mix"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.yaml").write_text(yaml.safe_dump(put(JOB, ("metadata", "name"), f"j{i}")))
    size = sum(f.stat().st_size for f in folder.iterdir())

    def never(*args: object, **kwargs: object) -> str:
        raise AssertionError("a file was read before its size was checked")

    monkeypatch.setattr(Path, "read_text", never)
    monkeypatch.setattr(Path, "read_bytes", never)
    with pytest.raises(MixTooLarge) as refused:
        load_mix(folder, CATALOG, limits=Limits(max_bytes=size - 1))
    message = str(refused.value)
    assert "3 files" in message and f"({size - 1:,} bytes)" in message
    assert "--max-bytes" in message and "MAX_BYTES=" in message
    monkeypatch.undo()
    assert len(load_mix(folder, CATALOG, limits=Limits(max_bytes=size))) == 3


def test_the_size_is_read_with_stat_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of (sparse) gigabytes is refused at once: only its size is looked at."""
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as f:
        f.truncate(3 * MAX_BYTES)
    with pytest.raises(MixTooLarge, match=r"300\.0 MB"):
        documents.read_documents(huge)


def test_the_cli_refuses_a_mix_over_a_limit_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump_all([put(JOB, ("metadata", "name"), f"j{i}") for i in range(3)]))
    started: list[str] = []

    class Started(Exception):
        pass

    def side(name: str, *args: object) -> None:
        started.append(name)
        raise Started

    monkeypatch.setattr(cli, "load_replay_side", side)
    base = ["--stack", "staging", "--workloads", str(mix), "--out", str(tmp_path / "out")]
    assert cli.main([*base, "--max-workloads", "2"]) == 2
    err = capsys.readouterr().err
    assert "more than 2 workloads" in err and "--max-workloads" in err
    assert cli.main([*base, "--max-bytes", "100"]) == 2
    assert "--max-bytes" in capsys.readouterr().err
    assert started == []  # nothing was read of the stack, no sandbox touched
    with pytest.raises(Started):  # within the raised limits, the what-if goes on
        cli.main([*base, "--max-workloads", "3", "--max-bytes", "1_000_000"])
    assert started == ["new"]
    with pytest.raises(SystemExit) as usage:
        cli.main([*base, "--max-workloads", "none"])
    assert usage.value.code == 2
    assert "'none' is not a whole number" in capsys.readouterr().err


def test_an_unreadable_until_is_refused_by_name_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump(JOB))
    argv = ["--stack", "nope", "--workloads", str(mix), "--out", str(tmp_path / "out")]
    assert cli.main([*argv, "--until", "a day"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("what-if: --until: 'a day' is not a duration")
    assert not (tmp_path / "out").exists()


def test_the_librarys_command_without_the_sandbox_says_where_the_sandbox_engine_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gpu_queues.whatif.cli alone (an installed library) has only the fast engine; the
    checkout's sandbox/replay/cli.py passes the sandbox's in."""
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump(JOB))
    argv = ["--stack", "staging", "--workloads", str(mix), "--out", str(tmp_path / "out")]
    assert cli.main([*argv, "--engine", "sandbox"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("what-if: the sandbox engine runs from a gpu-queues checkout")
    assert "make what-if ENGINE=sandbox" in err and not (tmp_path / "out").exists()
