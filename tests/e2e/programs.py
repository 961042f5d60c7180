"""What the e2e tests of programs of someone else's share (test_library.py's Python program,
test_yaml_program.py's Pulumi YAML program): their Pulumi environment and how a command runs
in their directory, outside the repo."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sandbox import pulumi_stack, wheels
from sandbox.paths import KUBECONFIG
from sandbox.walkthrough import KubeSession, condition, is_true


def environment() -> dict[str, str]:
    """The sandbox's Pulumi environment (state in .sandbox/pulumi, its passphrase) and nothing
    that would let the program import gpu_queues from this checkout. pip, wherever Pulumi runs
    it for the program or a plugin, installs from the wheels `make wheels` downloaded: the
    sandbox's namespace reaches no package index."""
    env = pulumi_stack.environment()
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels.WHEELS))
    return env


def run(
    cmd: list[str], cwd: Path, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        cmd, cwd=cwd, input=stdin, text=True, capture_output=True, env=environment()
    )
    if check:
        assert done.returncode == 0, f"{cmd[:4]}...\n{done.stdout}\n{done.stderr}"
    return done


Pulumi = Callable[..., Any]
"""A program's `pulumi ARGS [stdin=...] [check=...]` in its directory, on its stack."""


def deploy(pulumi: Pulumi) -> subprocess.CompletedProcess[str]:
    """The program's stack made, the sandbox's kubeconfig its secret `kubeconfig`, `pulumi up`
    (not checked: the tests say what they expect of it)."""
    pulumi("stack", "select", "--create")
    pulumi("config", "set", "--secret", "kubeconfig", stdin=KUBECONFIG.read_text())
    up: subprocess.CompletedProcess[str] = pulumi("up", "--yes", "--skip-preview", check=False)
    return up


def tear_down(pulumi: Pulumi, cluster: KubeSession, teams: Mapping[str, str]) -> None:
    """The teams' Jobs deleted and their Workloads gone (by namespace), then the program's
    stack destroyed and removed."""
    for name, ns in teams.items():
        for j in cluster.batch.list_namespaced_job(ns).items:
            cluster.delete_job(j.metadata.name, ns)
        cluster.wait(f"no workloads of {name}", lambda n=ns: not cluster.workloads(n), namespace=ns)
    pulumi("destroy", "--yes", "--skip-preview")
    pulumi("stack", "rm", "--yes")


def admitted(cluster: KubeSession, job: str, namespace: str, cluster_queue: str) -> None:
    """The Job's Workload admitted, its quota reserved in `cluster_queue` (Kueue's message),
    and the Job unsuspended."""
    k = cluster
    workload = k.wait(
        f"{job} admitted",
        lambda: (w := k.workload_for(job, namespace)) and is_true(w, "Admitted") and w,
        namespace=namespace,
    )
    reserved = condition(workload, "QuotaReserved")
    assert reserved and reserved["message"] == f"Quota reserved in ClusterQueue {cluster_queue}"
    k.wait(
        f"{job} unsuspended",
        lambda: k.get_job(job, namespace).spec.suspend is False,
        namespace=namespace,
    )
