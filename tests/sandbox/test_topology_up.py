"""`sandbox.sh up` with a topology, from the host: a topology's clusters are shaped by its own
stacks (a STACK is refused), an unknown topology is refused by name, and a running sandbox
of one topology is never reused for another."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]


def sandbox(*args: str, topology: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUQ_TOPOLOGY": topology}
    return subprocess.run([*SANDBOX, *args], capture_output=True, text=True, timeout=300, env=env)


def namespace_exists() -> bool:
    name = sandbox("name").stdout.strip()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return any(line.split()[0] == name for line in listed.splitlines() if line.strip())


def test_a_stack_for_the_multikueue_topology_is_refused_before_anything_starts() -> None:
    sandbox("down")
    done = sandbox("up", "prod", topology="multikueue")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "shaped by its own stacks" in done.stderr and "STACK does not apply" in done.stderr
    assert not namespace_exists()


def test_an_unknown_topology_is_refused_by_name() -> None:
    sandbox("down")
    done = sandbox("up", topology="ring-of-seven")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown sandbox topology 'ring-of-seven'" in done.stderr
    assert not namespace_exists()


def test_a_running_single_cluster_is_not_reused_as_the_multikueue_topology() -> None:
    try:
        up = sandbox("up", "local")
        assert up.returncode == 0, up.stdout + up.stderr
        again = sandbox("up", topology="multikueue")
        assert again.returncode == 1, again.stdout + again.stderr
        assert "already up with topology single, not multikueue" in again.stderr
        # It is left as it was: still the one cluster, still usable.
        assert sandbox("up", "local").returncode == 0
    finally:
        sandbox("down")
