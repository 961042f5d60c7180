"""The guide's walkthrough (seed/queue-gpu-jobs-with-kueue.txt) against a live cluster.

Shared by `make demo`, which prints what a user sees, and the e2e tests, which assert it.
Talks to the cluster with the official Kubernetes client; when a wait fails, the error
carries the workloads' conditions and the namespace's recent events.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client

from gpu_queues.kueue.client import api_client, file_client
from sandbox.control_plane import kubectl

KUEUE = ("kueue.x-k8s.io", "v1beta2")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
T = TypeVar("T")

# The guide's gpu-job.yaml; the image is never pulled (kwok plays the kubelet).
GPU_JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "gpu-job-a", "namespace": "default", "labels": {QUEUE_LABEL: "gpu-queue"}},
    "spec": {
        "parallelism": 1,
        "completions": 1,
        "suspend": True,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "worker",
                        "image": "nvidia/cuda:12.4.0-base-ubuntu22.04",
                        "command": ["bash", "-c", "nvidia-smi -L; sleep 180"],
                        "resources": {
                            "requests": {"cpu": "2", "memory": "8Gi"},
                            "limits": {"nvidia.com/gpu": "6"},
                        },
                        "volumeMounts": [{"name": "shared", "mountPath": "/mnt/shared"}],
                    }
                ],
                "volumes": [
                    {"name": "shared", "persistentVolumeClaim": {"claimName": "shared-pvc"}}
                ],
            }
        },
    },
}


def job(
    name: str,
    namespace: str = "default",
    queue: str | None = "gpu-queue",
    gpus: int = 6,
    extra_limits: dict[str, Any] | None = None,
    claim: str | None = "shared-pvc",
) -> dict[str, Any]:
    """The guide's job under another name; queue=None drops the queue-name label."""
    j = copy.deepcopy(GPU_JOB)
    j["metadata"]["name"], j["metadata"]["namespace"] = name, namespace
    if queue is None:
        del j["metadata"]["labels"][QUEUE_LABEL]
    else:
        j["metadata"]["labels"][QUEUE_LABEL] = queue
    c = j["spec"]["template"]["spec"]["containers"][0]
    c["resources"]["limits"] = {
        "nvidia.com/gpu": str(gpus),
        **{k: str(v) for k, v in (extra_limits or {}).items()},
    }
    if claim is None:
        del c["volumeMounts"]
        del j["spec"]["template"]["spec"]["volumes"]
    else:
        j["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = claim
    return j


class KubeSession:
    """A session with one cluster through the official Kubernetes client: Jobs, Workloads and
    pods, and waits whose timeout carries what the cluster says (`describe`)."""

    def __init__(self, kubeconfig: str | None = None) -> None:
        # Built in memory: the kubernetes package's loader would write the admin key to /tmp.
        api = file_client(kubeconfig) if kubeconfig else api_client(None, None)
        # The client's models type every field Optional; tests read them as plain objects.
        self.batch: Any = client.BatchV1Api(api)
        self.core: Any = client.CoreV1Api(api)
        self.custom: Any = client.CustomObjectsApi(api)

    # --- objects -----------------------------------------------------------------------
    def submit(self, manifest: dict[str, Any]) -> None:
        self.batch.create_namespaced_job(manifest["metadata"]["namespace"], manifest)

    def delete_job(self, name: str, namespace: str = "default") -> None:
        self.batch.delete_namespaced_job(name, namespace, propagation_policy="Background")

    def get_job(self, name: str, namespace: str = "default") -> Any:
        return self.batch.read_namespaced_job(name, namespace)

    def workloads(self, namespace: str = "default") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.custom.list_namespaced_custom_object(
            *KUEUE, namespace, "workloads"
        )["items"]
        return items

    def workload_for(self, job_name: str, namespace: str = "default") -> dict[str, Any] | None:
        for wl in self.workloads(namespace):
            owners = wl["metadata"].get("ownerReferences", [])
            if any(o["kind"] == "Job" and o["name"] == job_name for o in owners):
                return wl
        return None

    def job_pods(self, job_name: str, namespace: str = "default") -> list[Any]:
        items: list[Any] = self.core.list_namespaced_pod(
            namespace, label_selector=f"job-name={job_name}"
        ).items
        return items

    # --- diagnostics -------------------------------------------------------------------
    def describe(self, namespace: str = "default") -> str:
        lines = ["workloads:"]
        for wl in self.workloads(namespace):
            lines.append(f"  {wl['metadata']['name']}:")
            for c in wl.get("status", {}).get("conditions", []):
                lines.append(
                    f"    {c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}"
                )
        lines.append("clusterqueues:")
        for cq in self.custom.list_cluster_custom_object(*KUEUE, "clusterqueues")["items"]:
            conds = cq.get("status", {}).get("conditions", [])
            lines.append(
                f"  {cq['metadata']['name']}: "
                + "; ".join(f"{c['type']}={c['status']} {c.get('message', '')}" for c in conds)
            )
        lines.append(f"events in {namespace} (last 15):")
        events = sorted(
            self.core.list_namespaced_event(namespace).items,
            key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp,
        )
        for e in events[-15:]:
            lines.append(
                f"  {e.involved_object.kind}/{e.involved_object.name} {e.reason}: {e.message}"
            )
        return "\n".join(lines)

    def wait(
        self,
        what: str,
        check: Callable[[], T | None],
        timeout: float = 60.0,
        namespace: str = "default",
    ) -> T:
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"timed out after {timeout:.0f}s waiting for {what}\n"
                    + self.describe(namespace)
                )
            time.sleep(0.25)


def condition(wl: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for c in (wl or {}).get("status", {}).get("conditions", []):
        if c["type"] == kind:
            return dict(c)
    return None


def is_true(wl: dict[str, Any] | None, kind: str) -> bool:
    c = condition(wl, kind)
    return c is not None and c["status"] == "True"


def demo() -> None:
    """Replays the guide and prints what its reader sees."""
    k = KubeSession()
    for name in ("gpu-job-a", "gpu-job-b"):
        if k.workload_for(name) or any(
            j.metadata.name == name for j in k.batch.list_namespaced_job("default").items
        ):
            k.delete_job(name)
            k.wait(f"old {name} to go", lambda n=name: k.workload_for(n) is None)  # type: ignore[misc]
    print("$ kubectl apply -f gpu-job.yaml   # gpu-job-a: 6 GPUs, 2 cpu, 8Gi, shared-pvc mounted")
    k.submit(job("gpu-job-a"))
    k.wait("gpu-job-a admitted", lambda: is_true(k.workload_for("gpu-job-a"), "Admitted"))
    k.wait(
        "gpu-job-a's pod Running",
        lambda: any(p.status.phase == "Running" for p in k.job_pods("gpu-job-a")),
    )
    print("$ kubectl get workloads")
    print(kubectl("get", "workloads"))
    print("$ kubectl apply -f gpu-job-b.yaml   # the same shape: 6 more GPUs, 12 > 8")
    k.submit(job("gpu-job-b"))
    k.wait(
        "gpu-job-b's workload to be evaluated",
        lambda: condition(k.workload_for("gpu-job-b"), "QuotaReserved"),
    )
    columns = "NAME:.metadata.name,SUSPEND:.spec.suspend,ACTIVE:.status.active"
    print(f"$ kubectl get jobs -o custom-columns='{columns}'")
    print(kubectl("get", "jobs", "-o", f"custom-columns={columns}"))
    msg = condition(k.workload_for("gpu-job-b"), "QuotaReserved")
    jsonpath = '{.status.conditions[?(@.type=="QuotaReserved")].message}'
    print("$ WORKLOAD=$(kubectl get workloads -o name | grep gpu-job-b)")
    print(f"$ kubectl get \"$WORKLOAD\" -o jsonpath='{jsonpath}'")
    print(f"{(msg or {}).get('message', '')}\n")
    print("$ kubectl delete job gpu-job-a")
    k.delete_job("gpu-job-a")
    k.wait("gpu-job-b admitted", lambda: not k.get_job("gpu-job-b").spec.suspend, timeout=90)
    print("$ kubectl get job gpu-job-b -o jsonpath='{.spec.suspend}'")
    print(kubectl("get", "job", "gpu-job-b", "-o", "jsonpath={.spec.suspend}") + "\n")
    print(kubectl("get", "workloads"))


if __name__ == "__main__":
    try:
        demo()
    except TimeoutError as e:
        print(e, file=sys.stderr)
        sys.exit(1)
