"""The sandbox's lifecycle, from the host: up and down are idempotent, two rounds leave
nothing behind, and nothing of the cluster is reachable from the host's network."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from sandbox.paths import STATE

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "sandbox" / "sandbox.sh"


def sandbox(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", str(SANDBOX), *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has exited; only its parent's reaping is left


def host_port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_up_and_down_twice_leave_nothing_behind() -> None:
    name = sandbox("name").stdout.strip()
    if name in namespaces():
        sandbox("down")
    for _ in range(2):
        sandbox("up")
        again = sandbox("up")  # idempotent: already up
        assert "already up" in again.stdout
        assert name in namespaces()
        pids = [
            p["pid"] for p in json.loads((STATE / "state.json").read_text())["processes"].values()
        ]
        assert pids and all(alive(p) for p in pids)
        # The API server answers inside the namespace only.
        inside = sandbox("exec", str(ROOT / ".toolchain/bin/kubectl"), "get", "--raw", "/readyz")
        assert inside.stdout.strip() == "ok"
        assert not host_port_open(6443)
        sandbox("down")
        sandbox("down")  # idempotent: already down
        assert name not in namespaces()
        assert not any(alive(p) for p in pids)
        assert not (STATE / "state.json").exists()
        assert not (STATE / "kubeconfig").exists()
        assert not (STATE / "pulumi").exists()


def test_the_host_has_no_route_into_the_sandbox_ranges() -> None:
    # Pod and service ranges are addresses on the namespace's lo, never on the host.
    out = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout
    assert "10.244." not in out and "10.96." not in out
