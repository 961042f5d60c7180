"""MultiKueue across three sandbox clusters, on the real Kueue in each: two worker stacks and a
manager stack deployed with `pulumi up`; jobs submitted to the manager run on the workers.

Runs inside the namespace of a sandbox started with the multikueue topology
(`make test-multikueue`, or `make sandbox-up TOPOLOGY=multikueue` then
`bash sandbox/sandbox.sh exec .venv/bin/python -m pytest -m multikueue`). Each worker offers 4
GPUs to team ml; the manager's ClusterQueue holds both workers' 8 together. Jobs ask for 4
GPUs, so a job fills a worker: which worker takes the first is Kueue's choice (its default
dispatcher offers a job to every worker at once), so the tests follow the first job to its
worker and expect the second on the other one.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.nodes import SYSTEM_NODE
from sandbox import pulumi_stack as stack
from sandbox import topology
from sandbox.paths import KUBECONFIG
from sandbox.walkthrough import KUEUE, KubeSession, condition, is_true, job

pytestmark = pytest.mark.multikueue

MANAGER = topology.MK_MANAGER_STACK
WORKERS = topology.MK_WORKER_STACKS  # cluster name -> its stack
NAMESPACE, QUEUE = "team-ml", "ml-queue"
CHECK = "multikueue-ml"
MANAGED_BY = "kueue.x-k8s.io/multikueue"
HELD = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
    "flavor gpu, 4 more needed"
)
COMPLETE_AFTER = "sandbox.gpu-queues.dev/complete-after"  # sandbox/kwok-stages.yaml


def up(stack_name: str) -> subprocess.CompletedProcess[str]:
    return stack.pulumi(
        "up", "--yes", "--skip-preview", stack=stack_name, check=False, capture=True
    )


@pytest.fixture(scope="module")
def deployed(sandbox_up: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The workers first (in parallel: separate clusters, separate stacks), then the manager,
    which reads their kubeconfigs from their stacks' outputs."""
    assert topology.by_name(topology.MULTIKUEUE, "worker-a").kubeconfig.exists(), (
        "the sandbox is not up with the multikueue topology: make sandbox-up TOPOLOGY=multikueue"
    )
    logs = tmp_path_factory.mktemp("multikueue-up")
    running = {}
    for name in WORKERS.values():
        stack.prepare(name)
        running[name] = stack.start("up", "--yes", "--skip-preview", stack=name, log=logs / name)
    for name, proc in running.items():
        assert proc.wait(timeout=900) == 0, (logs / name).read_text()[-6000:]
    done = up(MANAGER)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def manager(deployed: None) -> KubeSession:
    return KubeSession(str(KUBECONFIG))


@pytest.fixture(scope="module")
def workers(deployed: None) -> dict[str, KubeSession]:
    return {
        name: KubeSession(str(topology.by_name(topology.MULTIKUEUE, name).kubeconfig))
        for name in WORKERS
    }


def gpu_job(name: str, **annotations: str) -> dict[str, Any]:
    manifest = job(name, namespace=NAMESPACE, queue=QUEUE, gpus=4, claim=None)
    if annotations:
        manifest["spec"]["template"].setdefault("metadata", {})["annotations"] = annotations
    return manifest


def has_job(k: KubeSession, name: str) -> bool:
    return any(j.metadata.name == name for j in k.batch.list_namespaced_job(NAMESPACE).items)


def running_on(k: KubeSession, name: str) -> str | None:
    """The node a job's pod runs on in cluster `k`, once it is Running."""
    for pod in k.job_pods(name, NAMESPACE):
        if pod.status.phase == "Running" and pod.spec.node_name:
            return str(pod.spec.node_name)
    return None


def reserving_worker(k: KubeSession, name: str) -> str | None:
    """The worker the manager's MultiKueue check says the job got its reservation on."""
    wl = k.workload_for(name, NAMESPACE)
    for state in (wl or {}).get("status", {}).get("admissionChecks", []):
        if state["name"] == CHECK and state["state"] == "Ready":
            message = str(state.get("message", ""))
            return next((w for w in WORKERS if f'"{w}"' in message), None)
    return None


def dispatched(manager: KubeSession, workers: dict[str, KubeSession], name: str) -> str:
    """Wait until the manager admitted the job and it runs on a worker's kwok node; the worker."""
    worker = manager.wait(
        f"{name} admitted on the manager with a worker's reservation",
        lambda: (
            is_true(manager.workload_for(name, NAMESPACE), "Admitted")
            and reserving_worker(manager, name)
        ),
        namespace=NAMESPACE,
        timeout=120,
    )
    node = workers[worker].wait(
        f"{name}'s pod Running on {worker}",
        lambda: running_on(workers[worker], name),
        namespace=NAMESPACE,
        timeout=120,
    )
    assert node.startswith("gpu-"), node  # the worker's kwok GPU node
    assert workers[worker].core.read_node(node).metadata.annotations.get("kwok.x-k8s.io/node")
    return worker


@pytest.fixture
def clean(manager: KubeSession, workers: dict[str, KubeSession]) -> Iterator[None]:
    """No jobs of team ml before or after a test, on any cluster."""

    def wipe() -> None:
        for j in manager.batch.list_namespaced_job(NAMESPACE).items:
            manager.delete_job(j.metadata.name, NAMESPACE)
        manager.wait("no workloads on the manager", lambda: not manager.workloads(NAMESPACE))
        for name, w in workers.items():
            w.wait(
                f"no jobs left on {name}",
                lambda w=w: not w.batch.list_namespaced_job(NAMESPACE).items,
                namespace=NAMESPACE,
                timeout=120,
            )

    wipe()
    yield
    wipe()


def test_the_manager_connects_to_both_workers(manager: KubeSession) -> None:
    def active(kind: str, name: str) -> bool:
        obj = manager.custom.get_cluster_custom_object(*KUEUE, kind, name)
        return is_true(obj, "Active")

    for worker in WORKERS:
        manager.wait(
            f"MultiKueueCluster {worker} Active", lambda w=worker: active("multikueueclusters", w)
        )
    manager.wait("the MultiKueue admission check Active", lambda: active("admissionchecks", CHECK))
    cq = manager.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", "ml-cq")
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": CHECK}]}
    manager.wait("ml-cq Active", lambda: active("clusterqueues", "ml-cq"))


def test_the_manager_runs_kueue_with_what_multikueue_needs(manager: KubeSession) -> None:
    cm = manager.core.read_namespaced_config_map("kueue-manager-config", "kueue-system")
    config = yaml.safe_load(cm.data["controller_manager_config.yaml"])
    assert config["integrations"]["frameworks"] == ["batch/job"]
    assert config["multiKueue"]["origin"] == f"gpu-queues-{MANAGER}"
    nodes = [n.metadata.name for n in manager.core.list_node().items]
    # Kueue's pod runs on the system node; the manager's flavor has no nodes here: its jobs run
    # on the workers.
    assert nodes == [SYSTEM_NODE]


def test_jobs_run_on_the_workers_and_wait_on_the_manager_when_both_are_full(
    manager: KubeSession, workers: dict[str, KubeSession], clean: None
) -> None:
    # The first job: admitted by the manager, run by one worker, its status mirrored back.
    manager.submit(gpu_job("mk-first"))
    first = dispatched(manager, workers, "mk-first")
    local = manager.get_job("mk-first", NAMESPACE)
    assert local.spec.managed_by == MANAGED_BY  # Kubernetes' own job controller leaves it alone
    assert manager.job_pods("mk-first", NAMESPACE) == []  # no pod on the manager
    manager.wait(
        "mk-first's status mirrored to the manager",
        lambda: manager.get_job("mk-first", NAMESPACE).status.active == 1,
        namespace=NAMESPACE,
    )
    remote = workers[first].get_job("mk-first", NAMESPACE)
    assert remote.spec.managed_by is None  # the worker's job controller runs it
    others = [w for w in WORKERS if w != first]
    assert not any(has_job(workers[w], "mk-first") for w in others)

    # The first worker is full: the next job runs on the other one.
    manager.submit(gpu_job("mk-second"))
    second = dispatched(manager, workers, "mk-second")
    assert second != first

    # Both are full: the third is held on the manager, with Kueue's message.
    manager.submit(gpu_job("mk-third"))
    held = manager.wait(
        "mk-third evaluated on the manager",
        lambda: condition(manager.workload_for("mk-third", NAMESPACE), "QuotaReserved"),
        namespace=NAMESPACE,
    )
    assert (held["status"], held["message"]) == ("False", HELD)
    assert manager.get_job("mk-third", NAMESPACE).spec.suspend is True
    assert not any(has_job(w, "mk-third") for w in workers.values())

    # Deleting the first frees its worker; the held job is dispatched there.
    manager.delete_job("mk-first", NAMESPACE)
    workers[first].wait(
        f"mk-first gone from {first}",
        lambda: not has_job(workers[first], "mk-first"),
        namespace=NAMESPACE,
        timeout=120,
    )
    assert dispatched(manager, workers, "mk-third") == first


def test_a_job_that_finishes_on_a_worker_finishes_on_the_manager(
    manager: KubeSession, workers: dict[str, KubeSession], clean: None
) -> None:
    manager.submit(gpu_job("mk-short", **{COMPLETE_AFTER: "3s"}))
    worker = dispatched(manager, workers, "mk-short")
    manager.wait(
        "mk-short Complete on the manager",
        lambda: any(
            c.type == "Complete" and c.status == "True"
            for c in manager.get_job("mk-short", NAMESPACE).status.conditions or []
        ),
        namespace=NAMESPACE,
        timeout=120,
    )
    # The manager's copy carries the worker's result (no pod ever ran on the manager).
    assert manager.get_job("mk-short", NAMESPACE).status.succeeded == 1
    assert not manager.core.list_namespaced_pod(NAMESPACE).items
    manager.wait(
        "mk-short's workload finished on the manager",
        lambda: is_true(manager.workload_for("mk-short", NAMESPACE), "Finished"),
        namespace=NAMESPACE,
    )
    # Once the workload is finished, MultiKueue removes its copy from the worker (Kueue's
    # multikueue workload reconciler deletes a finished workload's remote objects).
    workers[worker].wait(
        f"mk-short's copy removed from {worker}",
        lambda: (
            not any(
                j.metadata.name == "mk-short"
                for j in workers[worker].batch.list_namespaced_job(NAMESPACE).items
            )
        ),
        namespace=NAMESPACE,
        timeout=60,
    )


def test_preview_after_up_reports_no_changes_and_the_pack_passes_the_manager(
    deployed: None, tmp_path: Path
) -> None:
    # The three previews at once: separate stacks, and each mostly waits on its cluster.
    running = {}
    for name in [*WORKERS.values(), MANAGER]:
        pack = ["--policy-pack", "policies"] if name == MANAGER else []
        running[name] = stack.start(
            "preview", "--expect-no-changes", "--diff", *pack, stack=name, log=tmp_path / name
        )
    for name, proc in running.items():
        output = (tmp_path / name).read_text() if proc.wait(timeout=900) == 0 else None
        assert output is not None, (tmp_path / name).read_text()[-6000:]
        assert "[mandatory]" not in output, output
