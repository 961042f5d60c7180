"""A TrainJob on the sandbox: the real Kubeflow Trainer (sandbox/trainer.py) makes a JobSet of it
and its runtime, JobSet's controller its Job and kube-controller-manager its pods, once the Kueue
the local stack installs admits it through its trainer.kubeflow.org/trainjob integration (on in
the release's default Configuration: one Workload, a pod set per replicated job of the runtime);
the next TrainJob is held suspended with its quota message and admitted once the first is gone;
kwok plays the pods."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true
from tests.e2e.operated import Kind, Operated, wiped

pytestmark = pytest.mark.e2e

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
NS = "default"
RUNTIME = "torch-e2e"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
RECORDED = "rec-trainjob"  # tests/e2e/test_record.py's
NAMES = ("train-a", "train-b", RECORDED)
# 2 nodes x 3 GPUs = 6 of the flavor's 8: a second TrainJob needs 4 more.
HELD_MESSAGE = (
    "couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 4 more needed"
)


def runtime() -> dict[str, Any]:
    """A TrainingRuntime shaped as the Trainer's torch-distributed: its trainer step is the
    replicated job labelled trainer, one Job of numNodes pods running the container `node`."""
    step = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    node = {"name": "node", "image": "registry.example/torch:2026.11"}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": RUNTIME, "namespace": NS},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": step},
                                "spec": {"template": {"spec": {"containers": [node]}}},
                            },
                        }
                    ]
                }
            },
        },
    }


def train_job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "gpu-queue"}},
        "spec": {
            "runtimeRef": {"name": RUNTIME, "kind": "TrainingRuntime"},
            "trainer": {
                "numNodes": 2,
                "resourcesPerNode": {
                    "requests": {"cpu": "1", "memory": "4Gi"},
                    "limits": {"nvidia.com/gpu": "3"},
                },
            },
        },
    }


TRAINJOBS = Kind(*TRAINER, "trainjobs", "TrainJob", JOBSET_NAME_LABEL, NAMES)


@pytest.fixture
def trainjobs(cluster: KubeSession) -> Iterator[Operated]:
    yield from wiped_trainjobs(cluster)


def wiped_trainjobs(cluster: KubeSession) -> Iterator[Operated]:
    """A fixture's body: the runtime made, no TrainJobs (nor their runtimes, Workloads or pods)
    left before the test or after it."""
    wipe = wiped(cluster, TRAINJOBS, also=("trainingruntimes",))
    jobs = next(wipe)
    cluster.custom.create_namespaced_custom_object(*TRAINER, NS, "trainingruntimes", runtime())
    yield jobs
    next(wipe, None)


def test_kueue_admits_a_trainjob_the_trainer_makes_its_jobset_and_the_next_is_held_for_quota(
    trainjobs: Operated,
) -> None:
    jobs, k = trainjobs, trainjobs.k
    jobs.create(train_job("train-a"))
    wl_a = k.wait(
        "train-a admitted",
        lambda: (w := jobs.workload("train-a")) and is_true(w, "Admitted") and w,
    )
    assert [(ps["name"], ps["count"]) for ps in wl_a["spec"]["podSets"]] == [("node", 2)]
    flavors = [a["flavors"] for a in wl_a["status"]["admission"]["podSetAssignments"]]
    assert flavors == [
        {"cpu": "gpu-flavor", "memory": "gpu-flavor", "nvidia.com/gpu": "gpu-flavor"}
    ]
    # The Trainer made a JobSet of it, JobSet's controller its Job, kwok runs the two pods on
    # GPU nodes, each with the TrainJob's resourcesPerNode in place of the runtime's.
    running = k.wait(
        "train-a's two pods Running",
        lambda: (r := jobs.running("train-a")) and len(r) == 2 and r,
    )
    assert all(p.spec.node_name for p in running)
    limits = [p.spec.containers[0].resources.limits for p in running]
    assert limits == [{"nvidia.com/gpu": "3"}] * 2
    assert jobs.get("train-a")["spec"]["suspend"] is False

    jobs.create(train_job("train-b"))
    held = k.wait("train-b evaluated", lambda: condition(jobs.workload("train-b"), "QuotaReserved"))
    assert (held["status"], held["reason"]) == ("False", "Pending")
    assert held["message"] == HELD_MESSAGE
    assert jobs.get("train-b")["spec"]["suspend"] is True
    assert not jobs.pods("train-b")  # the JobSet of a suspended TrainJob makes no pod

    jobs.delete("train-a")
    # Kueue admits the Workload first, then its TrainJob reconciler unsuspends the TrainJob.
    k.wait("train-b unsuspended", lambda: jobs.get("train-b")["spec"]["suspend"] is False, 90)
    assert is_true(jobs.workload("train-b"), "Admitted")
    k.wait("train-b's two pods Running", lambda: len(jobs.running("train-b")) == 2, 90)


def test_the_trainers_own_webhook_refuses_a_runtime_whose_trainer_step_is_not_one_job(
    trainjobs: Operated,
) -> None:
    # Its validating webhook, dialled at the manager by url with the sandbox's CA, answers: a
    # runtime's trainer step must be one Job (replicas 1). Kueue has no webhook for runtimes, so
    # the answer can only be the Trainer's. (A TrainJob naming a missing runtime is refused by
    # both Kueue's webhook and the Trainer's, and the API server reports whichever answers
    # first: a CI run got Kueue's.)
    body = runtime()
    body["metadata"]["name"] = "two-trainer-jobs"
    body["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    with pytest.raises(ApiException) as refused:
        trainjobs.k.custom.create_namespaced_custom_object(*TRAINER, NS, "trainingruntimes", body)
    message = json.loads(refused.value.body)["message"]
    # controller-runtime answers a validator's plain error as a denial: 403, not 422.
    assert refused.value.status == 403, message
    assert 'admission webhook "validator.trainingruntime.trainer.kubeflow.org" denied' in message
    assert "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1" in (
        message
    )
    assert "two-trainer-jobs" not in trainjobs.names("trainingruntimes")
