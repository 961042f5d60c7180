"""Faults on the real engine and the real control plane, in the shared e2e session: the API
server restarted under a running and a held job; `pulumi destroy` of a stack whose shared
claim is protected; two `pulumi up` at once on one stack.

(Faults that need a fresh cluster, an `up` killed mid-install and Kueue killed at the
readiness gate, are in tests/sandbox/test_install_faults.py: they bring up sandboxes of their own.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.components.readiness import probe_webhooks
from sandbox import pulumi_stack as stack
from sandbox.kueue_pod import LOG as KUEUE_LOG
from sandbox.walkthrough import KUEUE, KubeSession, condition, is_true, job
from tests.e2e.deployments import Deployments
from tests.e2e.settled import probe, quota_held, remove_probe
from tests.e2e.test_walkthrough import HELD_MESSAGE

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


# --- 17: the API server restarted while one job runs and one is held -----------------------


def kueue_starts() -> int:
    return KUEUE_LOG.read_text().count("--- starting kueue") if KUEUE_LOG.exists() else 0


def test_an_api_server_restart_keeps_the_running_job_running_and_the_held_one_held(
    clean_jobs: KubeSession,
) -> None:
    k = clean_jobs
    k.submit(job("gpu-job-a"))
    k.wait("gpu-job-a admitted", lambda: is_true(k.workload_for("gpu-job-a"), "Admitted"))
    pod = k.wait(
        "gpu-job-a's pod Running",
        lambda: next((p for p in k.job_pods("gpu-job-a") if p.status.phase == "Running"), None),
    )
    k.submit(job("gpu-job-b"))
    held = k.wait(
        "gpu-job-b evaluated", lambda: condition(k.workload_for("gpu-job-b"), "QuotaReserved")
    )
    assert held["message"] == HELD_MESSAGE
    workload_a = k.workload_for("gpu-job-a")
    workload_b = k.workload_for("gpu-job-b")
    assert workload_a and workload_b
    starts = kueue_starts()

    # A separate process restarts it, so the new API server is not this test's child.
    done = subprocess.run(
        [sys.executable, "-m", "sandbox.cluster", "restart", "kube-apiserver"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Kueue may lose its leader lease while the API server is away (it then exits, and the
    # pod runner restarts it): wait until its webhooks serve again.
    print(done.stdout.strip(), f"; kueue restarts meanwhile: {kueue_starts() - starts}")
    probe_webhooks(None, None, timeout=180)

    def unchanged() -> None:
        running = k.job_pods("gpu-job-a")
        assert [(p.metadata.uid, p.status.phase) for p in running] == [
            (pod.metadata.uid, "Running")
        ]
        a, b = k.workload_for("gpu-job-a"), k.workload_for("gpu-job-b")
        assert a and a["metadata"]["uid"] == workload_a["metadata"]["uid"]
        assert is_true(a, "Admitted"), k.describe()
        job_a = k.get_job("gpu-job-a")
        assert job_a.spec.suspend is False and job_a.status.active == 1
        assert b and b["metadata"]["uid"] == workload_b["metadata"]["uid"]
        reserved = condition(b, "QuotaReserved")
        assert reserved and reserved["status"] == "False", k.describe()
        assert reserved["message"] == HELD_MESSAGE
        assert not is_true(b, "Admitted")
        assert k.get_job("gpu-job-b").spec.suspend is True
        assert k.job_pods("gpu-job-b") == []

    # Kueue back and resynchronised has decided a later job in the same queue (5 GPUs: not
    # the held one's shape, which Kueue would set aside undecided): nothing moved meanwhile.
    decided = probe(k, "gpu-job-probe", namespace="default", queue="gpu-queue", gpus=5)
    assert (decided["status"], decided["message"]) == ("False", quota_held("gpu-flavor", 3))
    unchanged()
    remove_probe(k, "gpu-job-probe", namespace="default")

    # Freeing the quota admits the held job, as before the restart.
    k.delete_job("gpu-job-a")
    k.wait(
        "gpu-job-b unsuspended", lambda: k.get_job("gpu-job-b").spec.suspend is False, timeout=90
    )
    assert is_true(k.workload_for("gpu-job-b"), "Admitted")
    k.wait(
        "gpu-job-b's pod Running",
        lambda: any(p.status.phase == "Running" for p in k.job_pods("gpu-job-b")),
    )


# --- 18: a protected claim, and two `up` at once ------------------------------------------

STACK = "local-protected"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
VOLUME, CLAIM, NAMESPACE = "protected-volume", "keepers-data", "team-keepers"
ALLOW_DESTROY = {"gpu-queues:sharedStorage[0].allowDestroy": "true"}
GPU_QUOTA = 'gpu-queues:teams[0].resourceGroups[0].flavors[0].resources["nvidia.com/gpu"]'


def pulumi(*args: str, overrides: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return stack.pulumi(
        *args, stack=STACK, source=SOURCE, overrides=overrides, check=False, capture=True
    )


def static_volume() -> dict[str, Any]:
    """The cloud's static volume for the claim, as fake_cluster makes the local stack's."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": VOLUME},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "shared-wekafs",
            "persistentVolumeReclaimPolicy": "Retain",
            "nfs": {"server": "127.0.0.1", "path": f"/exports/{VOLUME}"},
        },
    }


@pytest.fixture(scope="module")
def protected(cluster: KubeSession, stacks: Deployments) -> Iterator[KubeSession]:
    """The stack deployed on the cloud's volume. The tests' own `up`, `destroy` and two `up` at
    once are what they test, and each leaves the stack as committed again; afterwards the stack
    is destroyed the documented way, which is part of what this module shows."""
    cluster.core.create_persistent_volume(static_volume())
    up = stacks.up(STACK, source=SOURCE)
    assert up.returncode == 0, up.stdout + up.stderr
    yield cluster
    # The documented way out: allow the destroy in config, apply it, then destroy.
    allowed = stacks.up(STACK, source=SOURCE, overrides=ALLOW_DESTROY)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    gone = stacks.destroy(STACK, source=SOURCE, overrides=ALLOW_DESTROY)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    cluster.core.delete_persistent_volume(VOLUME)  # Retain: the cloud's to delete


def stack_state() -> dict[str, Any]:
    done = pulumi("stack", "export")
    assert done.returncode == 0, done.stderr
    state: dict[str, Any] = json.loads(done.stdout)
    return state


def test_destroying_a_stack_whose_claim_is_protected_is_refused_and_the_data_survives(
    protected: KubeSession,
) -> None:
    k = protected
    before = {r["urn"] for r in stack_state()["deployment"]["resources"]}
    done = pulumi("destroy", "--yes")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    # Pulumi's own refusal names the claim's resource and both ways to allow it.
    message = " ".join(out.split())
    claim_urn = next(u for u in before if u.endswith(f"-{NAMESPACE}-{CLAIM}"))
    assert f'resource "{claim_urn}" cannot be deleted because it is protected' in message, out
    assert "remove the `protect` flag from the resource in your Pulumi program" in message
    assert f"`pulumi state unprotect '{claim_urn}'`" in message, out
    # The claim, its volume and their namespace are untouched.
    claim = k.core.read_namespaced_persistent_volume_claim(CLAIM, NAMESPACE)
    assert claim.status.phase == "Bound" and claim.spec.volume_name == VOLUME
    assert claim.metadata.deletion_timestamp is None
    volume = k.core.read_persistent_volume(VOLUME)
    assert volume.status.phase == "Bound" and volume.spec.claim_ref.name == CLAIM
    assert k.core.read_namespace(NAMESPACE).status.phase == "Active"
    # What the engine deleted before it stopped is gone from the state too, and the next
    # `up` puts it back: the stack is whole again, with nothing left to change.
    after = {r["urn"] for r in stack_state()["deployment"]["resources"]}
    assert claim_urn in after and after <= before
    print(f"destroy removed {len(before - after)} of {len(before)} resources before refusing")
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stdout + up.stderr
    again = pulumi("preview", "--expect-no-changes")
    assert again.returncode == 0, again.stdout + again.stderr


def lock_files() -> list[Path]:
    return list(stack.PULUMI_DIR.glob(f"backend/.pulumi/locks/**/{STACK}/*.json"))


def test_a_second_up_while_one_runs_is_refused_by_the_lock_and_nothing_is_corrupted(
    protected: KubeSession, tmp_path: Path
) -> None:
    k = protected
    # The first `up` raises the team's GPU quota: a real change in flight while the second
    # one tries. Config is written once, before either starts.
    stack.prepare(STACK, source=SOURCE, overrides={f"{GPU_QUOTA}.nominalQuota": "1"})
    first = stack.start("up", "--yes", "--skip-preview", stack=STACK, log=tmp_path / "first.log")
    deadline = time.monotonic() + 60
    while not lock_files():
        assert first.poll() is None, (tmp_path / "first.log").read_text()
        assert time.monotonic() < deadline, "the first up never took the stack's lock"
        time.sleep(0.05)
    second = stack.start("up", "--yes", "--skip-preview", stack=STACK, log=tmp_path / "second.log")
    assert second.wait(timeout=120) != 0
    still_running = first.poll() is None
    second_out = " ".join((tmp_path / "second.log").read_text().split())
    assert "the stack is currently locked by 1 lock(s)" in second_out, second_out
    assert "pulumi cancel" in second_out
    assert first.wait(timeout=300) == 0, (tmp_path / "first.log").read_text()
    assert still_running, "the second up ended after the first: they did not overlap"
    assert lock_files() == []
    # The state is whole: it exports, its claim is still protected, nothing is pending, and
    # the cluster holds what the first `up` applied.
    state = stack_state()["deployment"]
    assert not state.get("pending_operations")
    claim = next(r for r in state["resources"] if r["urn"].endswith(f"-{NAMESPACE}-{CLAIM}"))
    assert claim.get("protect") is True
    cq = k.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", "keepers-cq")
    quotas = {
        r["name"]: r["nominalQuota"]
        for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert str(quotas["nvidia.com/gpu"]) == "1"
    again = pulumi("preview", "--expect-no-changes", overrides={f"{GPU_QUOTA}.nominalQuota": "1"})
    assert again.returncode == 0, again.stdout + again.stderr
    back = pulumi("up", "--yes", "--skip-preview")  # the stack file's quota again
    assert back.returncode == 0, back.stdout + back.stderr


# --- 19: a kubeconfig that cannot be used is refused before anything is registered ---------


def test_an_unknown_context_is_refused_naming_the_key_before_anything_is_registered() -> None:
    name = "local-bad-context"
    done = stack.pulumi(
        "preview",
        stack=name,
        source=ROOT / "Pulumi.local.yaml",
        overrides={"gpu-queues:kubernetes.context": "no-such-context"},
        check=False,
        capture=True,
    )
    out = done.stdout + done.stderr
    try:
        assert done.returncode != 0, out
        assert (
            "gpu-queues:kubernetes.context: no context 'no-such-context' in the kubeconfig "
            "(it has: sandbox)"
        ) in out
        assert "kubernetes:" not in out  # no resource was registered, not even the provider
        assert "Traceback" not in out
    finally:
        stack.pulumi("stack", "rm", "--yes", stack=name, check=False, capture=True)
