"""Sandbox instances (GPUQ_SANDBOX, sandbox/paths.py and sandbox/sandbox.sh): each its own
state folder and network namespace, derived the same way on both sides; a name that could
reach outside .sandbox/instances is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox import paths

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_each_sandbox_instance_has_its_own_state_and_namespace() -> None:
    assert paths.state_dir("") == ROOT / ".sandbox"
    assert paths.state_dir("e2e") == ROOT / ".sandbox" / "instances" / "e2e"
    with pytest.raises(ValueError, match=r"GPUQ_SANDBOX='\.\./x'"):
        paths.state_dir("../x")

    def name(instance: str | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "GPUQ_SANDBOX"}
        if instance is not None:
            env["GPUQ_SANDBOX"] = instance
        return subprocess.run(
            ["bash", str(ROOT / "sandbox" / "sandbox.sh"), "name"],
            env=env,
            capture_output=True,
            text=True,
        )

    names = {name(i).stdout.strip() for i in (None, "", "e2e", "checks")}
    assert len(names) == 3 and all(n.startswith("gpuq-") for n in names)
    bad = name("../x")
    assert bad.returncode == 2 and "GPUQ_SANDBOX=../x" in bad.stderr
