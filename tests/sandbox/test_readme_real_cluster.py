"""The README's "Using it on a real cluster" steps, run as a new user runs them from a fresh
clone, against a sandbox cluster whose kubeconfig stands in for ~/.kube/config (issue 16).

The steps are read from README.md itself (the section's sh block), so the docs cannot drift.
They run in a scratch copy of the project (the files a clone has, the venv linked), which
gets a sandbox of its own (its network namespace is named after the checkout path): the
committed stack files and this checkout's sandbox are left alone. `pulumi up` asks before it
changes anything; the test answers "yes" on a terminal, as the user does. Then the tools run
on the stack file the CLI wrote (salt, encrypted kubeconfig): quota diff and promotion.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_queues.pins import kueue_version
from sandbox import shape as fake_cluster

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Using it on a real cluster"
USER_KUBECONFIG = "~/.kube/config"
PROMPT = b"Do you want to perform this update?"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
# The user's own environment, not this test run's: a fresh clone has none of these.
CLEARED = (
    "KUBECONFIG",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_CONFIG_PASSPHRASE_FILE",
    "PULUMI_BACKEND_URL",
    "GPU_QUEUES_PULUMI_DIR",
    "GPU_QUEUES_STACK",
)


def readme_steps(readme: str) -> list[str]:
    """The commands of the section's first sh block, in order (comments dropped by bash)."""
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, f"README.md has no sh block under {SECTION!r}"
    return [line for line in block[1].splitlines() if line.strip()]


def test_the_steps_are_read_from_the_readme() -> None:
    steps = readme_steps((ROOT / "README.md").read_text())
    assert any("pulumi up" in s for s in steps) and any(USER_KUBECONFIG in s for s in steps)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the project as a clone has it, with a sandbox of its own (down afterwards):
    the clone's one sandbox, in its .sandbox as the README's steps expect, whichever sandbox
    instance (GPUQ_SANDBOX) this run of the tests uses."""
    monkeypatch.delenv("GPUQ_SANDBOX", raising=False)
    project = tmp_path / "clone"
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (ROOT / name).is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, project / name)  # mtimes kept: `make venv` is up to date
    (project / ".venv").symlink_to(ROOT / ".venv")
    # The cluster comes first: the sandbox needs the pinned binaries (links from the cache).
    subprocess.run(
        ["bash", "toolchain/build.sh"],
        cwd=project,
        check=True,
        capture_output=True,
        env={**os.environ, "KUEUE_VERSIONS": kueue_version()},  # what `make toolchain` links
    )
    up = subprocess.run(
        ["bash", "sandbox/sandbox.sh", "up"], cwd=project, capture_output=True, text=True
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield project
    finally:
        subprocess.run(["bash", "sandbox/sandbox.sh", "down"], cwd=project, capture_output=True)


def in_sandbox(project: Path, command: str, timeout: float = 900) -> tuple[int, str]:
    """Run `command` in bash inside the scratch sandbox's namespace, on a terminal; answer
    "yes" when pulumi asks to perform an update. Returns the exit code and the output."""
    argv = ["bash", "sandbox/sandbox.sh", "exec", "env"]
    argv += [f"--unset={name}" for name in CLEARED]
    argv += ["bash", "-c", f"set -euo pipefail; {command}"]
    primary, secondary = pty.openpty()
    child = subprocess.Popen(
        argv, cwd=project, stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True
    )
    os.close(secondary)
    out, answered, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the terminal closed: the command is done
                    break
                if not chunk:
                    break
                out += chunk
                if not answered and PROMPT in ANSI.sub(b"", out):
                    time.sleep(0.5)  # the prompt draws its choices after the question
                    os.write(primary, b"yes\r")
                    answered = True
            elif child.poll() is not None:
                break
        else:
            child.kill()
        code = child.wait(timeout=30)
    finally:
        os.close(primary)
    return code, ANSI.sub(b"", out).decode(errors="replace").replace("\r\n", "\n")


def _sandbox_logs(project: Path, lines: int = 40) -> str:
    """What the scratch sandbox's components last said (Kueue first), for a failure message."""
    logs = project / ".sandbox" / "logs"
    names = sorted(logs.glob("*.log"), key=lambda p: (not p.name.startswith("kueue"), p.name))
    return "\n".join(
        f"===== {log.name} (last {lines} lines)\n"
        + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
        for log in names
    )


def _committed() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(ROOT.glob("Pulumi.*.yaml"))}


def test_readme_real_cluster_steps_work_in_order(scratch: Path) -> None:
    committed = _committed()
    steps = readme_steps((scratch / "README.md").read_text())
    stack = next(re.search(r"stack select --create (\S+)", s)[1] for s in steps if "--create" in s)  # type: ignore[index]
    config = fake_cluster.load_stack(scratch / f"Pulumi.{stack}.yaml")
    # What the user's cluster already has: nodes for the flavors, the static shared volumes.
    cloud = scratch / ".sandbox" / f"{stack}-cloud.json"
    cloud.write_text(fake_cluster.manifests(config))
    kubectl = ".toolchain/bin/kubectl --kubeconfig .sandbox/kubeconfig"
    code, out = in_sandbox(scratch, f"{kubectl} apply -f {cloud}")
    assert code == 0, out

    kubeconfig = scratch / ".sandbox" / "kubeconfig"
    for step in steps:
        command = step.replace(USER_KUBECONFIG, str(kubeconfig))
        code, out = in_sandbox(scratch, command)
        assert code == 0, f"README step failed: {step}\n{out[-4000:]}\n{_sandbox_logs(scratch)}"
        if "pulumi up" in step:
            assert "Resources:" in out and "created" in out, out[-4000:]

    # The stack is up, with the secret the README set, and the queues the stack file declares.
    code, out = in_sandbox(scratch, f"toolchain/run pulumi stack output --json -s {stack}")
    assert code == 0, out
    outputs = json.loads(out[out.index("{") :])
    assert outputs["kueueVersion"] == config.kueue.version == kueue_version()
    assert outputs["clusterQueues"] == {t.name: t.cluster_queue for t in config.teams}
    for team in config.teams:
        code, out = in_sandbox(scratch, f"{kubectl} get clusterqueue {team.cluster_queue} -o name")
        assert code == 0 and team.cluster_queue in out, out
    code, out = in_sandbox(
        scratch,
        f"toolchain/run pulumi preview --expect-no-changes --policy-pack policies -s {stack}",
    )
    assert code == 0, out[-4000:]

    # What the steps write into the stack file (README; docs/deploying.md), and the tools read
    # it as is.
    text = (scratch / f"Pulumi.{stack}.yaml").read_text()
    assert re.search(r"^encryptionsalt: v1:", text, re.M)
    assert re.search(r"^  gpu-queues:kubernetes:\n    kubeconfig:\n      secure: v1:", text, re.M)
    code, out = in_sandbox(scratch, f"make quota-diff OLD={stack} NEW={stack}")
    assert code == 0 and "No quota changes." in out, out
    others = [s for s in ("dev", "staging", "prod") if s != stack]
    code, out = in_sandbox(scratch, f"make promote FROM={stack} TO={others[0]} ARGS=--dry-run")
    assert code == 0, out
    assert "secure: v1" not in out  # the ciphertext is never shown

    assert _committed() == committed  # the real checkout's stack files are untouched
