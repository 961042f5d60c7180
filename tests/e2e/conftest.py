"""e2e fixtures: the sandbox (already started by `make test`/`make test-e2e`, and these
tests run inside its network namespace) and one fresh `pulumi up` of the local stack."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG
from sandbox.walkthrough import KubeSession


@pytest.fixture(scope="session")
def sandbox_up() -> Path:
    assert KUBECONFIG.exists(), "the sandbox is not up: run `make sandbox-up` (or `make test-e2e`)"
    os.environ["KUBECONFIG"] = str(KUBECONFIG)
    # Every pulumi call of the session, through sandbox.pulumi_stack or not, sees the sandbox's
    # state.
    os.environ.update(stack.environment())
    return KUBECONFIG


@pytest.fixture(scope="session")
def local_up(sandbox_up: Path) -> subprocess.CompletedProcess[str]:
    """`pulumi up` of the local stack, once per session; its result is asserted by a test."""
    return stack.pulumi("up", "--yes", "--skip-preview", check=False, capture=True)


@pytest.fixture(scope="session")
def deployed(local_up: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert local_up.returncode == 0, local_up.stdout + local_up.stderr
    return local_up


@pytest.fixture(scope="session")
def cluster(deployed: subprocess.CompletedProcess[str]) -> KubeSession:
    return KubeSession(str(KUBECONFIG))


@pytest.fixture
def clean_jobs(cluster: KubeSession) -> Iterator[KubeSession]:
    """Each test starts and ends with no Jobs or Workloads in the namespaces it uses."""

    def wipe() -> None:
        for ns in ("default",):
            for j in cluster.batch.list_namespaced_job(ns).items:
                cluster.delete_job(j.metadata.name, ns)
            cluster.wait(
                f"no workloads in {ns}", lambda n=ns: not cluster.workloads(n), namespace=ns
            )

    wipe()
    yield cluster
    wipe()
