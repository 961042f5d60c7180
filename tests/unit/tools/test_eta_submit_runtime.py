"""`gpuq status --eta --submit` of a TrainJob (gpu_queues/tools/eta_mix.py submitted_runtimes):
Kueue counts a TrainJob's pods from the Trainer runtime its spec.runtimeRef names, so the
replayed mix must carry it: the --submit file's own beside the TrainJob, else the live
cluster's (read as the owners are, through the API paths of tools/owners.py); in neither, an
EtaError naming spec.runtimeRef, before any replay. The figures (GPUs, pods) are worked out by
hand from the runtime's rules (gpu_queues/whatif/trainjob.py); the replay itself is the fast
engine's, tested with a runtime in the mix in tests/toolchain/test_whatif_trainjob.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_queues.tools.eta_mix import EtaError, submitted_runtimes
from gpu_queues.tools.owners import Owners
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.mix import Catalog, TeamQueue, check
from tests.unit.tools.test_record import FakeRest

pytestmark = pytest.mark.unit

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"


def runtime(kind: str = "ClusterTrainingRuntime", pods: int = 1) -> dict[str, Any]:
    """A runtime whose one replicated job (not a trainer step: its parallelism counts) runs
    `pods` pods of 1 GPU each."""
    meta: dict[str, Any] = {"name": "torch"}
    if kind == "TrainingRuntime":
        meta["namespace"] = "alpha"
    container = {"name": "node", "image": "x",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}  # fmt: skip
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "spec": {"template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {"spec": {"parallelism": pods,
                                  "template": {"spec": {"containers": [container]}}}},
        }]}}},
    }  # fmt: skip


def live(body: dict[str, Any]) -> dict[str, Any]:
    """A runtime as the API serves it: server-set fields and a status."""
    out = copy.deepcopy(body)
    out["metadata"].update(uid="r1", resourceVersion="7", creationTimestamp="2026-12-01T10:00:00Z",
                           managedFields=[{"manager": "kubectl"}])  # fmt: skip
    out["status"] = {"conditions": []}
    return out


def trainjob(kind: str | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": "torch"}
    if kind is not None:
        ref["kind"] = kind
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tune", "namespace": "alpha",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": {"runtimeRef": ref},
    }  # fmt: skip


def api(*runtimes: dict[str, Any]) -> Owners:
    """The cluster's runtimes, listed where the API lists them (no list: the CRD's 404)."""
    objects: dict[str, Any] = {}
    for r in runtimes:
        if r["kind"] == "ClusterTrainingRuntime":
            path = f"{TRAINER}/clustertrainingruntimes"
        else:
            path = f"{TRAINER}/namespaces/{r['metadata']['namespace']}/trainingruntimes"
        objects.setdefault(path, {"items": []})["items"].append(live(r))
    return Owners(FakeRest(objects))


def docs(*bodies: dict[str, Any]) -> list[MixDocument]:
    return [MixDocument(f"job.yaml#{i + 1}", b) for i, b in enumerate(bodies)]


def checked(submit: list[MixDocument], owners: Owners) -> Any:
    """The TrainJob of `submit` checked as eta checks it, with the runtimes found for it."""
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({"trainer.kubeflow.org/trainjob"}))  # fmt: skip
    runtimes = submitted_runtimes(submit, owners.get)
    (job,) = [d for d in submit if d.body["kind"] == "TrainJob"]
    return check(job, 0, catalog, runtimes)


@pytest.mark.parametrize("kind", [None, "ClusterTrainingRuntime", "TrainingRuntime"])
def test_a_trainjobs_runtime_is_read_from_the_cluster_when_the_file_has_none(
    kind: str | None,
) -> None:
    owners = api(runtime(kind or "ClusterTrainingRuntime", pods=3))
    entry = checked(docs(trainjob(kind)), owners)
    assert (entry.status, entry.problem, entry.gpus, entry.pods) == ("ok", None, 3, 3)
    # what the engine creates: the cluster's runtime without what the API server set
    assert entry.runtime["metadata"] == runtime(kind or "ClusterTrainingRuntime")["metadata"]
    assert "status" not in entry.runtime
    listed = [p for _, p in owners.rest.requests]  # type: ignore[attr-defined]
    assert listed == [
        f"{TRAINER}/namespaces/alpha/trainingruntimes"
        if kind == "TrainingRuntime"
        else f"{TRAINER}/clustertrainingruntimes"
    ]


def test_the_files_runtime_beside_the_trainjob_is_used_without_asking_the_cluster() -> None:
    # the cluster has one of 3 pods; the file proposes one of 5: the file's is replayed
    owners = api(runtime(pods=3))
    entry = checked(docs(runtime(pods=5), trainjob()), owners)
    assert (entry.status, entry.gpus, entry.pods) == ("ok", 5, 5)
    assert owners.rest.requests == []  # type: ignore[attr-defined]


def test_a_runtime_in_neither_is_an_error_naming_spec_runtime_ref() -> None:
    with pytest.raises(EtaError) as raised:
        checked(docs(trainjob("TrainingRuntime")), api(runtime()))  # a cluster runtime only
    assert str(raised.value) == (
        "--submit job.yaml#1: spec.runtimeRef: TrainingRuntime alpha/torch is neither in the "
        "--submit file nor in the cluster (Kueue counts a TrainJob's pods from its runtime: put "
        "the runtime's document beside the TrainJob)"
    )


def test_a_malformed_runtime_in_the_file_is_an_error_naming_its_field() -> None:
    bad = runtime()
    bad["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = "two"
    with pytest.raises(EtaError) as raised:
        checked(docs(bad, trainjob()), api())
    message = str(raised.value)
    assert message.startswith("--submit job.yaml#1: invalid: spec.template.spec.replicatedJobs[0]")
    assert "replicas" in message
