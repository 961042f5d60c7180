"""e2e fixtures: the sandbox (already started by `make test`/`make test-e2e`, and these
tests run inside its network namespace), the session's stacks on it (`stacks`: one for every
module, tests/e2e/deployments.py says what each may take for granted) and the local stack
deployed with a fresh `pulumi up`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG
from sandbox.walkthrough import KubeSession
from tests.e2e.deployments import Deployments

STACKS = pytest.StashKey[Deployments]()


@pytest.fixture(scope="session")
def sandbox_up() -> Path:
    assert KUBECONFIG.exists(), "the sandbox is not up: run `make sandbox-up` (or `make test-e2e`)"
    os.environ["KUBECONFIG"] = str(KUBECONFIG)
    # Every pulumi call of the session, through sandbox.pulumi_stack or not, sees the sandbox's
    # state.
    os.environ.update(stack.environment())
    return KUBECONFIG


@pytest.fixture(scope="session")
def stacks(sandbox_up: Path, request: pytest.FixtureRequest) -> Deployments:
    """The session's stacks and the config each is deployed with: ask it for a config."""
    made = Deployments()
    request.config.stash[STACKS] = made
    return made


@pytest.fixture(scope="session")
def local_up(stacks: Deployments) -> subprocess.CompletedProcess[str]:
    """The session's first `pulumi up` of the local stack (on the sandbox, a fresh install);
    its result is asserted by a test."""
    return stacks.up("local")


@pytest.fixture(scope="session")
def deployed(local_up: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert local_up.returncode == 0, local_up.stdout + local_up.stderr
    return local_up


@pytest.fixture(scope="session")
def cluster(deployed: subprocess.CompletedProcess[str]) -> KubeSession:
    return KubeSession(str(KUBECONFIG))


@pytest.fixture(scope="module", autouse=True)
def local_as_committed(request: pytest.FixtureRequest) -> Iterator[None]:
    """The ordering rule every module keeps (tests/e2e/deployments.py): once deployed, `local`
    is as committed when a module starts (deployed again here if a failed `up` left it
    unknown) and is not left otherwise when it ends."""
    made = request.config.stash.get(STACKS, None)
    if made is not None and made.asked("local") and not made.committed("local"):
        done = made.up("local")
        assert done.returncode == 0, done.stdout + done.stderr
    yield
    made = request.config.stash.get(STACKS, None)  # the module may have made it
    if made is None or not made.asked("local"):
        return
    known = made.deployed.get("local")
    assert known is None or made.committed("local"), (
        f"{request.module.__name__} left the local stack deployed otherwise than committed"
    )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """What the session deployed: every `pulumi up` and `destroy` the stacks fixture ran."""
    made = config.stash.get(STACKS, None)
    if made is not None:
        ran = ", ".join(f"{s}: {what}" for s, what in made.log)
        terminalreporter.write_line(f"e2e stacks: {len(made.log)} pulumi operations ({ran})")


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
