"""Processes of the sandbox: started detached, recorded in .sandbox/state.json with their start
times (so a reused pid is never taken for one of ours), stopped by process group, waited on.
Each one's log is in .sandbox/logs/."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.paths import LOGS, ROOT, STATE

STATE_FILE = STATE / "state.json"
READY_TIMEOUT = 90.0

# Clusters start side by side: their records in state.json are updated one at a time.
_STATE_LOCK = threading.Lock()


def start_time(pid: int) -> str | None:
    """The process's start time, or None when it is gone (an unreaped zombie counts as gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def run_checked(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run a command to completion, its output captured; CalledProcessError when it fails."""
    return subprocess.run(args, check=True, text=True, capture_output=True, **kw)


def load_state() -> dict[str, Any]:
    if STATE_FILE.exists():
        loaded: dict[str, Any] = json.loads(STATE_FILE.read_text())
        return loaded
    return {"processes": {}}


def save_state(state: dict[str, Any]) -> None:
    """Replace the state file in one step: the clusters of a topology start in threads, and a
    reader (`wait_for`) must never see a half-written file (a truncated read failed the
    MultiKueue sandbox's start with a JSON error)."""
    tmp = STATE_FILE.with_name(f".{STATE_FILE.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, STATE_FILE)


def alive(entry: dict[str, Any]) -> bool:
    return bool(start_time(int(entry["pid"])) == entry["start"])


def log_path(name: str) -> Path:
    """A process's log: .sandbox/logs/<name>.log (a worker's under logs/<cluster>/)."""
    return LOGS / f"{name}.log"


def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
    path = log_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    with _STATE_LOCK:
        state = load_state()
        state["processes"][name] = {
            "pid": proc.pid,
            "start": start_time(proc.pid),
            "argv": argv,
            "env": env or {},
        }
        save_state(state)


def restarting(argv: list[str], delay: float = 1.0) -> list[str]:
    """`argv` run again `delay` seconds after each exit, as a kubelet restarts a pod's container
    (restartPolicy Always), for an operator that exits by design when it loses the API server
    (the mpi-operator's leader election: sandbox/mpi_operator.py). Its group is stopped whole
    (stop), the loop with it."""
    loop = f'while :; do "$@"; echo "exited ($?); again in {delay:g} s" >&2; sleep {delay:g}; done'
    return ["bash", "-c", loop, "restarting", *argv]


def signal_group(entry: dict[str, Any], sig: signal.Signals) -> None:
    """Send the signal to the process's group, if the process is still ours and there."""
    if alive(entry):
        with contextlib.suppress(ProcessLookupError):  # it may have just exited
            os.killpg(int(entry["pid"]), sig)


def stop(entry: dict[str, Any], grace: float) -> None:
    """SIGTERM the process group, SIGKILL it if still there after `grace` seconds."""
    signal_group(entry, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive(entry) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(entry):
        signal_group(entry, signal.SIGKILL)
        _wait_gone(entry)


def _wait_gone(entry: dict[str, Any], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while alive(entry):
        if time.monotonic() > deadline:
            raise RuntimeError(f"pid {entry['pid']} survived SIGKILL for {timeout:.0f}s")
        time.sleep(0.05)


def wait_for(what: str, check: Callable[[], Any], timeout: float = READY_TIMEOUT) -> None:
    """Poll `check` until it is true; fails at once when a recorded process has exited."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as e:
            last = e
        for name, entry in load_state()["processes"].items():
            if not alive(entry):
                raise RuntimeError(f"{name} exited while waiting for {what}; see {log_path(name)}")
        time.sleep(0.2)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}: {last}")
