"""The controller knobs of issue 24 item 2 on the sandbox: the local stack's real `pulumi up`
with kueue.controller.imageRegistry, priorityClassName and imagePullSecrets set (as a stack
file would set them; the committed files are not touched) applies a Deployment and a pod that
carry them, the readiness gate waits for the mirrored image's rollout, and Kueue still runs and
admits a job. Afterwards the stack is brought back to its committed config.

What the sandbox cannot prove (docs/kueue-manifest.md, Mirrors): it has no registry and no
kubelet (kwok fakes the pod, and sandbox/kueue_pod.py runs the controller binary of the image's
tag), so no image is really pulled from the mirror and the pull Secret is never presented to a
registry. The PriorityClass is real: the API server resolves it into the pod's priority.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from sandbox.walkthrough import KubeSession, is_true, job
from tests.e2e.deployments import Deployments

pytestmark = pytest.mark.e2e

NAMESPACE = "kueue-system"
MIRROR = "registry.mirror.example:5000/k8s"
PRIORITY_CLASS = "gpuq-platform-critical"
PRIORITY = 100000
PULL_SECRET = "corp-pull"
KNOBS = {
    "gpu-queues:kueue.controller.imageRegistry": MIRROR,
    "gpu-queues:kueue.controller.priorityClassName": PRIORITY_CLASS,
    "gpu-queues:kueue.controller.imagePullSecrets[0]": PULL_SECRET,
}


@pytest.fixture(scope="module")
def knobs(cluster: KubeSession, stacks: Deployments) -> Iterator[tuple[KubeSession, str]]:
    scheduling = client.SchedulingV1Api(cluster.core.api_client)
    scheduling.create_priority_class(
        client.V1PriorityClass(
            metadata=client.V1ObjectMeta(name=PRIORITY_CLASS),
            value=PRIORITY,
            description="the Kueue controller's, for tests/e2e/test_controller_knobs.py",
        )
    )
    cluster.core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name=PULL_SECRET),
            type="kubernetes.io/dockerconfigjson",
            string_data={".dockerconfigjson": '{"auths": {}}'},
        ),
    )
    done = stacks.up("local", overrides=KNOBS)
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        yield cluster, done.stdout + done.stderr
    finally:
        # The committed config (the registry.k8s.io image, no priority) before what it needed.
        restored = stacks.up("local")
        cluster.core.delete_namespaced_secret(PULL_SECRET, NAMESPACE)
        scheduling.delete_priority_class(PRIORITY_CLASS)
        assert restored.returncode == 0, restored.stdout + restored.stderr


def _controller_pods(k: KubeSession) -> list[Any]:
    pods: list[Any] = k.core.list_namespaced_pod(
        NAMESPACE, label_selector="control-plane=controller-manager"
    ).items
    return pods


def test_pulumi_up_with_the_knobs_applies_them_and_names_them(
    knobs: tuple[KubeSession, str],
) -> None:
    k, out = knobs
    assert "typed knobs in effect (gpu-queues:kueue.controller)" in out, out
    assert f'imageRegistry="{MIRROR}"' in out, out
    apps: Any = client.AppsV1Api(k.core.api_client)
    spec = apps.read_namespaced_deployment("kueue-controller-manager", NAMESPACE).spec.template.spec
    version = spec.containers[0].image.rpartition(":")[2]
    assert spec.containers[0].image == f"{MIRROR}/kueue/kueue:{version}"
    assert spec.priority_class_name == PRIORITY_CLASS
    assert [s.name for s in spec.image_pull_secrets] == [PULL_SECRET]


def test_the_controller_pod_carries_the_knobs_and_its_priority(
    knobs: tuple[KubeSession, str],
) -> None:
    k, _ = knobs
    pods = [p for p in _controller_pods(k) if p.metadata.deletion_timestamp is None]
    assert pods
    for pod in pods:
        assert pod.spec.containers[0].image.startswith(f"{MIRROR}/kueue/kueue:")
        assert pod.spec.priority == PRIORITY  # resolved by the API server's Priority admission
        assert [s.name for s in pod.spec.image_pull_secrets] == [PULL_SECRET]
        assert pod.status.phase == "Running"


def test_kueue_with_the_knobs_admits_a_job(
    knobs: tuple[KubeSession, str], clean_jobs: KubeSession
) -> None:
    k = clean_jobs
    k.submit(job("knobs-job", gpus=2))
    admitted: Any = k.wait(
        "knobs-job admitted",
        lambda: (w := k.workload_for("knobs-job")) and is_true(w, "Admitted") and w,
        timeout=180,
    )
    assert admitted["status"]["admission"]["clusterQueue"] == "gpu-cluster-queue"
    k.wait("knobs-job unsuspended", lambda: k.get_job("knobs-job").spec.suspend is False)
