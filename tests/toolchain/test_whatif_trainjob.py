"""TrainJobs (Kubeflow Trainer v2) on the fast engine, from the mix a user writes (the runtime
documents beside the TrainJobs) to the report, held to truths worked out by hand; and the docs'
example as its comment says. The sandbox has no Trainer controller (ENGINE=sandbox marks a
TrainJob unsupported: tests/unit/sandbox/test_whatif_stackfile.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.toolchain.test_whatif_engine import by_name, one_queue, replay, staging_example_with

pytestmark = pytest.mark.toolchain

RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "x"}]}}},
            },
        }]}},
    },
}  # fmt: skip


def trainjob(name: str, nodes: int, gpus: int, at: int, runs: int) -> dict[str, Any]:
    """Team a's TrainJob on RUNTIME: `nodes` nodes of `gpus` GPUs each."""
    res = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"},
            "annotations": {
                "gpu-queues.dev/submit-at": f"{at}s", "gpu-queues.dev/duration": f"{runs}s",
            },
        },
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": nodes, "resourcesPerNode": {"requests": res, "limits": res}},
        },
    }  # fmt: skip


def trainjob_queue() -> Any:
    return one_queue("BestEffortFIFO").kueue(
        manager={"integrations": {"frameworks": ["batch/job", "trainer.kubeflow.org/trainjob"]}}
    )


def test_a_trainjob_is_admitted_whole_and_the_next_waits_until_it_finishes(
    tmp_path: Path,
) -> None:
    """8 GPUs. first (2 nodes x 3 GPUs) from 0 for 100 s; second (2 x 2 GPUs, at 10) fits only
    when first ends: admitted at 100 (a 90 s wait), runs to 150; third (1 x 2 GPUs, at 20) fits
    beside first (6 + 2 = 8) at once: BestEffortFIFO lets it past second."""
    run = replay(trainjob_queue(), [
        RUNTIME,
        trainjob("first", 2, 3, 0, 100),
        trainjob("second", 2, 2, 10, 50),
        trainjob("third", 1, 2, 20, 30),
    ], tmp_path)  # fmt: skip
    w = by_name(run)
    assert [(n, w[n].kind, w[n].outcome, w[n].gpus) for n in ("first", "second", "third")] == [
        ("first", "TrainJob", "finished", 6),
        ("second", "TrainJob", "finished", 4),
        ("third", "TrainJob", "finished", 2),
    ]
    assert w["first"].intervals == [(0, 100)]
    assert (w["second"].wait_seconds, w["second"].intervals) == (90, [(100, 150)])
    assert (w["third"].wait_seconds, w["third"].intervals) == (0, [(20, 50)])


def test_a_trainjob_without_its_runtime_is_an_invalid_row_and_the_rest_replays(
    tmp_path: Path,
) -> None:
    run = replay(trainjob_queue(), [trainjob("lost", 2, 1, 0, 10)], tmp_path)
    (w,) = run.workloads
    assert (w.kind, w.outcome) == ("TrainJob", "invalid")
    assert (w.message or "").startswith(
        "spec.runtimeRef: ClusterTrainingRuntime torch-distributed is not in the mix"
    ), w.message


def test_the_docs_trainjob_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/trainjob.yaml on staging as it stands: unsupported, naming
    trainer.kubeflow.org/trainjob (and its runtime no row); with it added, research's 4 H100 are
    free, so the TrainJob is admitted the second it is submitted (1h) and its pods run its 3h
    (to 4h)."""
    staging_example_with("TrainJob", "trainer.kubeflow.org/trainjob", 4, tmp_path)


def runtime_of(name: str, policy: dict[str, Any], *steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": list(steps)}}},
    }


def step(name: str, ancestor: str, container: str, gpus: int, **replicated: Any) -> dict[str, Any]:
    res = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    pod = {
        "containers": [
            {"name": container, "image": "x", "resources": {"requests": res, "limits": res}}
        ]
    }
    return {
        "name": name,
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}},
            "spec": {"template": {"spec": pod}},
        },
        **replicated,
    }  # fmt: skip


def test_the_reports_gpu_count_is_the_one_kueue_makes_of_each_runtime(tmp_path: Path) -> None:
    """The report's count (gpu_queues/whatif/trainjob.py) against Kueue's own, on 8 GPUs: mpi,
    an MPI runtime running its launcher as a node (numNodes 3: 2 node pods x 2 GPUs = 4), and
    cached, a dataset initializer of 1 GPU (its replicas 2 in the runtime, one Job all the same:
    the Trainer's builder makes it so) beside 3 trainer nodes of 1 GPU (4), fill them from 0,
    so each is admitted at once only if Kueue counts no more than the report; small (1 GPU, at
    0) waits for them to end at 100 only if Kueue counts no fewer."""
    mpi = runtime_of(
        "mpi",
        {"numNodes": 1, "mpi": {"runLauncherAsNode": True}},
        step("node", "trainer", "node", 2),
    )
    cached = runtime_of("cached", {"numNodes": 1, "torch": {}},
                        step("cache", "dataset-initializer", "init", 1, replicas=2),
                        step("node", "trainer", "node", 1))  # fmt: skip
    jobs = [
        trainjob("a", 3, 2, 0, 100),
        trainjob("b", 3, 1, 0, 100),
        trainjob("small", 1, 1, 0, 10),
    ]
    jobs[0]["spec"]["runtimeRef"]["name"] = "mpi"
    jobs[1]["spec"]["runtimeRef"]["name"] = "cached"
    w = by_name(replay(trainjob_queue(), [RUNTIME, mpi, cached, *jobs], tmp_path))
    assert [(n, w[n].gpus, w[n].outcome, w[n].wait_seconds) for n in ("a", "b", "small")] == [
        ("a", 4, "finished", 0),
        ("b", 4, "finished", 0),
        ("small", 1, "finished", 100),
    ]
