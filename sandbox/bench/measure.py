"""One measured step of the scale benchmark: a command run to completion, its wall time, the CPU
of its process tree split by role, the sandbox's CPU meanwhile and the load it ran under."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox.paths import STATE

# CPU seconds are summed per role over the measured process tree, by command name.
ROLES = (
    ("pulumi-resource", "provider"),
    ("pulumi-language", "language host"),
    ("pulumi", "engine"),
    ("python", "program"),
    ("kubectl", "kubectl"),
)
# The sandbox processes that serve the requests (their CPU is counted for every step).
CLUSTER_COMMANDS = ("kube-apiserver", "etcd", "kueue")
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, str, float] | None:
    """(parent pid, command name, CPU seconds so far) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    comm = text[text.index("(") + 1 : text.rindex(")")]
    return int(fields[1]), comm, (int(fields[11]) + int(fields[12])) / TICK


def _process_table() -> dict[int, tuple[int, str, float]]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            table[int(entry)] = stat
    return table


def _descendants(root: int, table: dict[int, tuple[int, str, float]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cluster_cpu() -> float:
    """CPU seconds used so far by the sandbox's API server, etcd and Kueue (0 with no sandbox:
    the `upstream` mode needs none)."""
    try:
        state = json.loads((STATE / "state.json").read_text())
    except FileNotFoundError:
        return 0.0
    table = _process_table()
    total = 0.0
    for entry in state.get("processes", {}).values():
        pid = int(entry["pid"])
        for p in {pid, *_descendants(pid, table)}:
            if p in table and table[p][1].startswith(CLUSTER_COMMANDS):
                total += table[p][2]
    return total


@dataclass
class Step:
    seconds: float
    cpu: float
    """CPU seconds of the whole process tree (rusage of the reaped children)."""
    cpu_by_role: dict[str, float]
    """CPU seconds per role, from polling /proc (short-lived processes may be missed)."""
    cluster_cpu: float
    load: float
    """1-minute load average when the step started."""
    output: str


class StepFailed(Exception):
    """A measured command failed; the benchmark stops rather than report a broken number."""


def measure(argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None) -> Step:
    """Run argv to completion and measure it: wall time, CPU, the load it ran under."""
    import resource
    import threading

    load = os.getloadavg()[0]
    cluster_before = cluster_cpu()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen: dict[int, tuple[str, float]] = {}
    chunks: list[str] = []
    started = time.monotonic()
    with subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        out = proc.stdout
        reader = threading.Thread(target=lambda: chunks.append(out.read() if out else ""))
        reader.start()
        while proc.poll() is None:
            table = _process_table()
            for pid in {proc.pid, *_descendants(proc.pid, table)} & table.keys():
                seen[pid] = (table[pid][1], table[pid][2])
            time.sleep(0.25)
        seconds = time.monotonic() - started
        reader.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_role: dict[str, float] = {}
    for comm, cpu in seen.values():
        role = next((r for prefix, r in ROLES if comm.startswith(prefix)), "other")
        by_role[role] = by_role.get(role, 0.0) + cpu
    output = "".join(chunks)
    if proc.returncode != 0:
        raise StepFailed(f"`{' '.join(argv)}` exited {proc.returncode}:\n{output[-4000:]}")
    return Step(
        seconds=seconds,
        cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        cpu_by_role=by_role,
        cluster_cpu=cluster_cpu() - cluster_before,
        load=load,
        output=output,
    )
