"""Kueue upgrades on the sandbox, with live workloads (issue 13, docs/upgrading.md).

The local stack is up at the pinned release (the session's `pulumi up`). Each move renders
the target release (gpu_queues.release.module, the same render `make pin-kueue` pins) and
runs the real `pulumi up` with the stack's kueue.version and manifest pin overridden in the
sandbox's generated stack file: the committed files are never touched. The sandbox's
controller pod runner runs the binary of the pod's image tag, so the new release really
runs. While `up` runs, a background loop sends server-side dry-run creates through the API
server to Kueue's webhooks and records how long they failed. The timings go to
.sandbox/logs/upgrade-timings.json (and are printed); they are measured, never asserted.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpu_queues.kueue.client import file_client
from gpu_queues.release.module import pinned_version, render_release, rendered_relpath
from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG, LOGS, ROOT
from sandbox.walkthrough import KubeSession, condition, is_true, job
from tests.e2e.deployments import Deployments
from tests.e2e.settled import probe, quota_held, remove_probe
from tests.e2e.test_walkthrough import HELD_MESSAGE

pytestmark = pytest.mark.e2e

PINNED = pinned_version()
PATCH = "v0.18.4"
MINOR = "v0.19.2"
NAMESPACE = "kueue-system"
DEPLOYMENT = "kueue-controller-manager"
TIMINGS = LOGS / "upgrade-timings.json"
# Identical in every supported release: an in-place update must leave it alone.
UNCHANGED_CRD = "resourceflavors.kueue.x-k8s.io"
# Changed between v0.18 and v0.19 (new Workload fields).
CHANGED_CRD = "workloads.kueue.x-k8s.io"


def overrides(version: str) -> dict[str, str]:
    """The stack at `version`: its kueue.version and the render's path and sha256."""
    path = render_release(version, ROOT, offline=True)  # no network in the namespace
    return {
        "gpu-queues:kueue.version": version,
        "gpu-queues:kueue.manifest.path": rendered_relpath(version),
        "gpu-queues:kueue.manifest.sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }


def up(stacks: Deployments, version: str) -> subprocess.CompletedProcess[str]:
    """The local stack at `version` (the pin: as committed)."""
    return stacks.up("local", overrides=overrides(version) if version != PINNED else None)


def preview_no_changes(version: str) -> subprocess.CompletedProcess[str]:
    extra = overrides(version) if version != PINNED else None
    return stack.pulumi(
        "preview", "--expect-no-changes", "--diff", check=False, capture=True, overrides=extra
    )


# --- webhook downtime ---------------------------------------------------------------------


@dataclass
class Downtime:
    """Dry-run creates through the API server to Kueue's webhooks, every `interval` seconds:
    a ResourceFlavor (Kueue's own validating webhook) and a queued Job (its Job webhook)."""

    interval: float = 0.25
    samples: list[tuple[float, bool, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _probe(self, custom: Any, batch: Any) -> str | None:
        flavor = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"generateName": "downtime-probe-"},
        }
        probe_job = job("downtime-probe", claim=None)
        probe_job["metadata"] = {**probe_job["metadata"], "generateName": "downtime-probe-"}
        del probe_job["metadata"]["name"]
        try:
            custom.create_cluster_custom_object(
                "kueue.x-k8s.io",
                "v1beta2",
                "resourceflavors",
                flavor,
                dry_run="All",
                _request_timeout=5,
            )
            batch.create_namespaced_job("default", probe_job, dry_run="All", _request_timeout=5)
        except ApiException as exc:
            return f"HTTP {exc.status}: {(exc.body or '')[:200]}"
        except Exception as exc:  # connection reset, timeout
            return f"{type(exc).__name__}: {exc}"
        return None

    def _run(self) -> None:
        # Its own client (one per thread), built in memory like the KubeSession's: the kubernetes
        # package's loader would write the admin key to a temporary file.
        api = file_client(KUBECONFIG)
        custom, batch = client.CustomObjectsApi(api), client.BatchV1Api(api)
        while not self._stop.is_set():
            error = self._probe(custom, batch)
            self.samples.append((time.monotonic(), error is None, error or ""))
            self._stop.wait(self.interval)
        api.close()

    def __enter__(self) -> Downtime:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def report(self) -> dict[str, Any]:
        failed = [s for s in self.samples if not s[1]]
        longest, start = 0.0, None
        for t, ok, _ in self.samples:
            if not ok and start is None:
                start = t
            elif ok and start is not None:
                longest, start = max(longest, t - start), None
        if start is not None:
            longest = max(longest, self.samples[-1][0] - start)
        return {
            "probes": len(self.samples),
            "failed": len(failed),
            "longest_outage_seconds": round(longest, 1),
            "first_errors": sorted({e for _, _, e in failed})[:3],
        }


def record(name: str, data: dict[str, Any]) -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    current = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    current[name] = data
    TIMINGS.write_text(json.dumps(current, indent=2))
    print(f"\n{name}: {json.dumps(data)}")


# --- what the cluster runs ------------------------------------------------------------------


def controller_image(cluster: KubeSession) -> str:
    apps: Any = client.AppsV1Api(cluster.batch.api_client)
    deployment = apps.read_namespaced_deployment(DEPLOYMENT, NAMESPACE)
    return str(deployment.spec.template.spec.containers[0].image)


def crd(cluster: KubeSession, name: str) -> Any:
    return client.ApiextensionsV1Api(cluster.batch.api_client).read_custom_resource_definition(name)


def started_versions() -> list[str]:
    """gitVersion of every Kueue start in the sandbox's controller log, in order."""
    text = (LOGS / "kueue.log").read_text(errors="replace")
    return re.findall(r'"Initializing".*?"gitVersion":\s*"(v[^"]+)"', text)


def dry_run_flavor(cluster: KubeSession) -> None:
    cluster.custom.create_cluster_custom_object(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"generateName": "after-up-"},
        },
        dry_run="All",
    )


@pytest.fixture
def back_to_the_pin(cluster: KubeSession, stacks: Deployments) -> Iterator[KubeSession]:
    """Every test here leaves the cluster at the pinned release (a downgrade, checked too)."""
    yield cluster
    done = up(stacks, PINNED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert controller_image(cluster).endswith(f":{PINNED}")


def move(
    cluster: KubeSession, stacks: Deployments, version: str, name: str
) -> subprocess.CompletedProcess[str]:
    """`pulumi up` to `version` with the downtime loop running; records the timings."""
    before = {n: crd(cluster, n) for n in (CHANGED_CRD, UNCHANGED_CRD)}
    starts = len(started_versions())
    assert stacks.committed("local"), "a move starts at the pin, as committed"  # so `up` runs
    with Downtime() as downtime:
        t0 = time.monotonic()
        done = up(stacks, version)
        seconds = time.monotonic() - t0
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    record(name, {"up_seconds": round(seconds, 1), "webhooks": downtime.report()})
    # Updated in place by server-side apply: nothing replaced, no field-manager conflict.
    assert "replaced" not in out and "conflict" not in out.lower(), out
    assert controller_image(cluster) == f"registry.k8s.io/kueue/kueue:{version}"
    for n, old in before.items():
        new = crd(cluster, n)
        assert new.metadata.uid == old.metadata.uid, f"CRD {n} was recreated"
    # The readiness gate let `up` finish only once the new controller served: it started
    # during `up`, and its webhooks answer right away, with no retry.
    assert started_versions()[starts:][-1:] == [version], started_versions()[starts:]
    dry_run_flavor(cluster)
    return done


def test_preview_reads_the_running_kueue_and_shows_the_move(cluster: KubeSession) -> None:
    """The validation phase reads the cluster (read-only) even in a preview: the running
    release from the controller's image, the CRDs' storage versions."""
    from gpu_queues.release.upgrade import read_live

    live = read_live(KUBECONFIG.read_text(), None, [CHANGED_CRD, UNCHANGED_CRD])
    assert live.version == PINNED
    assert live.crds[CHANGED_CRD].storage == "v1beta2"
    assert live.crds[CHANGED_CRD].stored_versions == ("v1beta2",)
    done = stack.pulumi("preview", check=False, capture=True, overrides=overrides(MINOR))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"Kueue {PINNED} -> {MINOR} (upgrade)" in out, out


def test_patch_step_and_back(back_to_the_pin: KubeSession, stacks: Deployments) -> None:
    k = back_to_the_pin
    assert controller_image(k).endswith(f":{PINNED}")
    generations = {n: crd(k, n).metadata.generation for n in (CHANGED_CRD, UNCHANGED_CRD)}
    move(k, stacks, PATCH, f"{PINNED} -> {PATCH}")
    # The patch release changes only the controller: no CRD is touched.
    assert {n: crd(k, n).metadata.generation for n in generations} == generations
    again = preview_no_changes(PATCH)
    assert again.returncode == 0, again.stdout + again.stderr


def test_minor_upgrade_keeps_running_and_held_jobs(
    back_to_the_pin: KubeSession, clean_jobs: KubeSession, stacks: Deployments
) -> None:
    k = clean_jobs
    # The guide's two jobs: gpu-job-a runs (6 of 8 GPUs), gpu-job-b is held for quota.
    k.submit(job("gpu-job-a"))
    k.wait("gpu-job-a admitted", lambda: is_true(k.workload_for("gpu-job-a"), "Admitted"))
    pod_a = k.wait(
        "gpu-job-a's pod Running",
        lambda: next((p for p in k.job_pods("gpu-job-a") if p.status.phase == "Running"), None),
    )
    k.submit(job("gpu-job-b"))
    held = k.wait(
        "gpu-job-b evaluated", lambda: condition(k.workload_for("gpu-job-b"), "QuotaReserved")
    )
    assert (held["status"], held["message"]) == ("False", HELD_MESSAGE)
    wl_a = k.workload_for("gpu-job-a")
    assert wl_a is not None
    changed_generation = crd(k, CHANGED_CRD).metadata.generation
    unchanged_generation = crd(k, UNCHANGED_CRD).metadata.generation

    move(k, stacks, MINOR, f"{PINNED} -> {MINOR} with live workloads")
    upgraded_at = time.time()

    # The CRD that changed between the releases was updated (in place), the other not at all.
    assert crd(k, CHANGED_CRD).metadata.generation > changed_generation
    assert crd(k, UNCHANGED_CRD).metadata.generation == unchanged_generation
    # The running job kept running: same pod, same workload, still admitted.
    running = [p for p in k.job_pods("gpu-job-a") if p.status.phase == "Running"]
    assert [p.metadata.uid for p in running] == [pod_a.metadata.uid]
    after_a = k.workload_for("gpu-job-a")
    assert after_a is not None and after_a["metadata"]["uid"] == wl_a["metadata"]["uid"]
    assert is_true(after_a, "Admitted")
    assert k.get_job("gpu-job-a").spec.suspend is False
    # The held job is still held, with Kueue's message, under the new release too: that
    # controller has decided a later job in the same queue (5 GPUs, not the held one's shape).
    decided = probe(k, "gpu-job-probe", namespace="default", queue="gpu-queue", gpus=5)
    assert (decided["status"], decided["message"]) == ("False", quota_held("gpu-flavor", 3))
    held = condition(k.workload_for("gpu-job-b"), "QuotaReserved")
    assert held is not None
    assert (held["status"], held["reason"], held["message"]) == ("False", "Pending", HELD_MESSAGE)
    assert k.get_job("gpu-job-b").spec.suspend is True

    remove_probe(k, "gpu-job-probe", namespace="default")

    # Deleting the running job admits the held one, by the new release (the only one running).
    k.delete_job("gpu-job-a")
    k.wait(
        "gpu-job-b unsuspended", lambda: k.get_job("gpu-job-b").spec.suspend is False, timeout=120
    )
    admitted = condition(k.workload_for("gpu-job-b"), "Admitted")
    assert admitted is not None and admitted["status"] == "True"
    when = calendar.timegm(time.strptime(admitted["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ"))
    assert when >= int(upgraded_at) - 1, (admitted, upgraded_at)
    assert started_versions()[-1] == MINOR

    # And the stack is settled at the new release.
    again = preview_no_changes(MINOR)
    assert again.returncode == 0, again.stdout + again.stderr
