"""Faults during a fresh install, each on a sandbox of its own, driven from the host: `pulumi
up` SIGKILLed part-way and recovered the way docs/deploying.md says; Kueue killed twice while `up`
waits at the readiness gate. Both check that the sandbox leaves nothing on the machine: the
pod's mount paths exist only inside Kueue's private root, keys and tokens are 0600, and no
path is left behind after `sandbox down`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sandbox.kueue_pod import PID_FILE_NAME, WORK
from sandbox.paths import KUBECONFIG, KUBECTL, LOGS, ROOT, STATE
from sandbox.procs import start_time
from sandbox.pulumi_stack import PULUMI_DIR

pytestmark = pytest.mark.sandbox

SANDBOX = ROOT / "sandbox" / "sandbox.sh"
PY = ROOT / ".venv" / "bin" / "python"
DEPLOYING = ROOT / "docs" / "deploying.md"
POD_MOUNTS = (
    "/visibility",
    "/tmp/k8s-webhook-server/serving-certs",
    "/var/run/secrets/kubernetes.io/serviceaccount",
)
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
T = TypeVar("T")


def sandbox(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", str(SANDBOX), *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def inside(*argv: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """A command inside the sandbox's namespace (KUBECONFIG set), not checked."""
    return subprocess.run(
        ["bash", str(SANDBOX), "exec", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
    """`pulumi <args> -s local` in the sandbox (sandbox/pulumi_stack.py: the shadow project)."""
    return inside(PY, "-m", "sandbox.pulumi_stack", *args)


def kubectl(*args: str) -> str:
    done = inside(KUBECTL, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cluster_queues() -> list[str]:
    """The ClusterQueues in the cluster; none while their CRD is not there yet (kubectl says
    so one way or the other, as its discovery cache has the resource or not)."""
    done = inside(KUBECTL, "get", "clusterqueues", "-o", "name")
    if (
        "the server could not find the requested resource" in done.stderr
        or 'the server doesn\'t have a resource type "clusterqueues"' in done.stderr
    ):
        return []
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def wait_for(
    what: str,
    check: Callable[[], T | None],
    timeout: float,
    step: float = 0.1,
    meanwhile: Callable[[], None] = lambda: None,
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        meanwhile()
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(step)


# --- the engine's event log (pulumi --event-log) -------------------------------------------


def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # the line being written
            break
    return out


def step(event: dict[str, Any], kind: str) -> dict[str, Any] | None:
    meta: dict[str, Any] | None = event.get(kind, {}).get("metadata")
    return meta


def first(path: Path, kind: str, typ: str) -> dict[str, Any] | None:
    """The first event of a kind (resourcePreEvent: a step starts; resOutputsEvent: it is
    done) for a resource type."""
    return next((e for e in events(path) if (step(e, kind) or {}).get("type") == typ), None)


def creating() -> set[str]:
    """The resource types of the creates the local stack's checkpoint file (the state on disk,
    as a later command reads it) records as in flight."""
    found: set[str] = set()
    for checkpoint in (PULUMI_DIR / "backend").rglob("stacks/*/local.json"):
        try:
            deployment = json.loads(checkpoint.read_text()).get("checkpoint", {})
        except (OSError, ValueError):  # being written
            continue
        for op in (deployment.get("latest") or {}).get("pending_operations") or []:
            if op.get("type") == "creating":
                found.add(op["resource"]["type"])
    return found


STARTED: list[subprocess.Popen[bytes]] = []  # killed, if still running, when a test ends


def start_up(event_log: Path, log: Path) -> subprocess.Popen[bytes]:
    """`pulumi up` of the local stack, logging the engine's events (a flag Pulumi shows only
    with PULUMI_DEBUG_COMMANDS)."""
    with open(log, "wb") as out:
        STARTED.append(subprocess.Popen(
            ["bash", str(SANDBOX), "exec", str(PY), "-m", "sandbox.pulumi_stack", "up", "--yes",
             "--skip-preview", "--event-log", str(event_log)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PULUMI_DEBUG_COMMANDS": "true"},
        ))  # fmt: skip
    return STARTED[-1]


def running(up: subprocess.Popen[bytes], log: Path) -> Callable[[], None]:
    """A check for wait_for loops: the `up` must not have ended on its own meanwhile."""

    def check() -> None:
        assert up.poll() is None, f"pulumi up ended early:\n{log.read_text()}"

    return check


# --- processes ----------------------------------------------------------------------------


def children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat_file.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(stat_file.parent.name))
    return tree


def kill_tree(pid: int) -> list[int]:
    """SIGKILL a process and every descendant (pulumi, its language host, the program, the
    provider: the plugins run in process groups of their own), as a cancelled CI job is
    killed. They are frozen first, so none forks or reacts while the tree is collected."""
    frozen: list[int] = []
    while True:
        tree = children()
        todo, found = [pid], []
        while todo:
            p = todo.pop()
            found.append(p)
            todo.extend(tree.get(p, []))
        new = [p for p in found if p not in frozen]
        if not new:
            break
        for p in new:
            with contextlib.suppress(ProcessLookupError):  # it may have just exited
                os.kill(p, signal.SIGSTOP)
            frozen.append(p)
    for p in frozen:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    return frozen


def alive(pid: int) -> bool:
    return start_time(pid) is not None


def live_kueue() -> tuple[int, str] | None:
    """The kueue process the pod runner started, if it is running: (pid, start time)."""
    try:
        entry = json.loads((WORK / PID_FILE_NAME).read_text())
    except (OSError, ValueError):
        return None
    pid, start = int(entry["pid"]), entry["start"]
    return (pid, start) if start_time(pid) == start else None


# --- what the sandbox leaves on the machine -----------------------------------------------


def first_missing(path: str) -> Path | None:
    """The outermost part of `path` absent from the machine (what creating it would add)."""
    missing = None
    p = Path(path)
    while not p.exists():
        missing, p = p, p.parent
    return missing


@pytest.fixture
def fresh_sandbox() -> Iterator[dict[str, Path | None]]:
    """A sandbox of this test's own; yields, per pod mount path, what is absent beforehand."""
    sandbox("down")
    absent = {p: first_missing(p) for p in POD_MOUNTS}
    sandbox("up")
    yield absent
    while STARTED:  # a test that failed midway leaves no `pulumi up` behind
        run = STARTED.pop()
        if run.poll() is None:
            kill_tree(run.pid)
            run.wait()
    sandbox("down")


def assert_private(absent: dict[str, Path | None]) -> None:
    """Kueue sees its pod's mount paths; the machine has none it did not have; the files
    holding keys and tokens are their owner's alone."""
    kueue = live_kueue()
    assert kueue, "kueue is not running"
    for path, missing in absent.items():
        # Through the machine's symlinks (/var/run -> /run), as Kueue's root shows them too.
        inside_root = Path(f"/proc/{kueue[0]}/root") / os.path.realpath(path).lstrip("/")
        assert inside_root.is_dir(), path
        assert missing is None or not missing.exists(), f"{missing} was created on the machine"
        if Path(path).is_dir():  # there before: nothing of the pod's shows through
            assert not {p.name for p in inside_root.iterdir()} & {
                p.name for p in Path(path).iterdir()
            }, path
    volumes = WORK / "volumes"
    holding = [p for p in volumes.rglob("*") if p.is_file()]
    assert any(p.name == "token" for p in holding) and any(p.name == "tls.key" for p in holding)
    for p in [volumes, *volumes.rglob("*"), STATE / "pki", *(STATE / "pki").iterdir(), KUBECONFIG]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), f"{p}: {oct(mode)}"


def assert_nothing_left(absent: dict[str, Path | None]) -> None:
    sandbox("down")
    for missing in absent.values():
        assert missing is None or not missing.exists(), f"{missing} was left on the machine"


# --- 15: `pulumi up` SIGKILLed part-way through a fresh install ---------------------------


def deploying_recovery() -> list[list[str]]:
    """The steps docs/deploying.md gives after an interrupted `pulumi up`, as pulumi argument
    lists."""
    text = DEPLOYING.read_text()
    section = text.split("## An interrupted `pulumi up`", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    steps = []
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if command:
            assert command.startswith("toolchain/run pulumi "), command
            steps.append(shlex.split(command)[2:])
    return steps


@pytest.mark.parametrize(
    "skip_checkpoints",
    [
        pytest.param(None, id="toolchain-run-default"),  # toolchain/run skips them
        pytest.param("false", id="checkpoints"),  # a caller's PULUMI_SKIP_CHECKPOINTS=false
    ],
)
def test_an_up_killed_mid_install_converges_after_the_documented_recovery(
    fresh_sandbox: dict[str, Path | None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    skip_checkpoints: str | None,
) -> None:
    # Every pulumi command below inherits it (sandbox.sh exec, sandbox.pulumi_stack, toolchain/run).
    if skip_checkpoints is None:
        monkeypatch.delenv("PULUMI_SKIP_CHECKPOINTS", raising=False)
    else:
        monkeypatch.setenv("PULUMI_SKIP_CHECKPOINTS", skip_checkpoints)
    event_log, log = tmp_path / "events.jsonl", tmp_path / "up.log"
    started = time.monotonic()
    up = start_up(event_log, log)
    # The kill point: the first CRD has been created, so the cluster holds part of the install.
    wait_for(
        "a CRD created",
        lambda: first(event_log, "resOutputsEvent", CRD),
        timeout=240,
        meanwhile=running(up, log),
    )
    if skip_checkpoints is not None:
        # With checkpoints, also a create the state file on disk records as in flight. The
        # engine logs a step's event before it writes the step's pending operation, and a CRD's
        # create is over in milliseconds; the controller Deployment's lasts while Kueue rolls
        # out (seconds), so the kill lands while it is still in flight.
        wait_for(
            "the controller Deployment's create recorded as in flight",
            lambda: DEPLOYMENT in creating(),
            timeout=240,
            meanwhile=running(up, log),
        )
    killed = kill_tree(up.pid)
    up.wait()
    at = time.monotonic() - started
    wait_for("the killed processes gone", lambda: not any(alive(p) for p in killed), timeout=10)
    assert first(event_log, "resourcePreEvent", FLAVOR) is None  # the queues never started
    crds = kubectl("get", "crd", "-o", "name").split()
    assert cluster_queues() == []

    exported = pulumi("stack", "export")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    state = json.loads(exported.stdout)["deployment"]
    pending = state.get("pending_operations") or []
    recorded = state.get("resources") or []
    print(
        f"killed {len(killed)} processes {at:.1f}s into the install; the cluster had "
        f"{len(crds)} CRDs; the state recorded {len(recorded)} resources "
        f"and {len(pending)} pending operations ({sorted({p['type'] for p in pending})})"
    )
    assert crds
    if skip_checkpoints is None:
        # What docs/deploying.md says: the state is still the one before the killed run (a new
        # stack: empty), though the cluster holds what that run created.
        assert recorded == [] and pending == []
    else:
        # The engine's checkpoints recorded the creates in flight as pending operations, and
        # the kill left them there.
        assert pending and all(p["type"] == "creating" for p in pending)
        assert DEPLOYMENT in {p["resource"]["type"] for p in pending}

    # Without those steps, the next `up` is refused: the killed run's lock is there.
    again = pulumi("up", "--yes", "--skip-preview")
    assert again.returncode != 0
    refused = " ".join((again.stdout + again.stderr).split())
    assert "the stack is currently locked by 1 lock(s)" in refused, refused

    steps = deploying_recovery()
    assert [s[0] for s in steps] == ["cancel", "refresh", "up"]
    for args in steps:
        t0 = time.monotonic()
        done = pulumi(*args, "--yes")
        print(f"pulumi {' '.join(args)}: {time.monotonic() - t0:.1f}s")
        assert done.returncode == 0, f"pulumi {' '.join(args)}:\n{done.stdout}{done.stderr}"
        assert "pending operations" not in done.stdout, done.stdout
    state = json.loads(pulumi("stack", "export").stdout)["deployment"]
    assert not state.get("pending_operations")
    preview = pulumi("preview", "--expect-no-changes", "--diff")
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert cluster_queues() == ["clusterqueue.kueue.x-k8s.io/gpu-cluster-queue"]
    assert_private(fresh_sandbox)
    assert_nothing_left(fresh_sandbox)


# --- 16: Kueue killed while `up` waits at the readiness gate --------------------------------


def test_kueue_killed_twice_at_the_readiness_gate_is_restarted_and_up_succeeds(
    fresh_sandbox: dict[str, Path | None], tmp_path: Path
) -> None:
    event_log, log = tmp_path / "events.jsonl", tmp_path / "up.log"
    up = start_up(event_log, log)
    installed = wait_for(
        "the controller Deployment created",
        lambda: first(event_log, "resOutputsEvent", DEPLOYMENT),
        timeout=240,
        meanwhile=running(up, log),
    )
    # From here the gate holds the queues back until Kueue's webhooks answer.
    assert first(event_log, "resourcePreEvent", FLAVOR) is None
    kueue_log = LOGS / "kueue.log"
    kueue_log_start = kueue_log.stat().st_size if kueue_log.exists() else 0
    one = wait_for("kueue running", live_kueue, timeout=60)
    os.kill(one[0], signal.SIGKILL)
    two = wait_for("kueue restarted", lambda: (k := live_kueue()) and k != one and k, timeout=30)
    os.kill(two[0], signal.SIGKILL)  # a second, quick crash: right after its restart
    killed_at = time.time()
    assert up.wait(timeout=240) == 0, log.read_text()

    flavors = first(event_log, "resourcePreEvent", FLAVOR)
    assert flavors is not None
    assert flavors["timestamp"] >= int(killed_at)  # the gate waited for Kueue to come back
    restarts = re.findall(
        r"kueue exited with code -?\d+ after [\d.]+s; restarting in (\d+)s \(crash (\d+)\)",
        kueue_log.read_bytes()[kueue_log_start:].decode(errors="replace"),
    )
    assert restarts[:2] == [("1", "1"), ("2", "2")], restarts
    print(
        f"the gate waited {flavors['timestamp'] - installed['timestamp']}s after the install "
        f"(kueue killed twice); kueue restarts: {restarts}"
    )
    assert_private(fresh_sandbox)
    assert_nothing_left(fresh_sandbox)
