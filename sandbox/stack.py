"""The real Pulumi CLI on a sandbox stack (`local` by default), from inside the namespace.

The committed Pulumi.<stack>.yaml never holds the sandbox's kubeconfig, and no sandbox
run writes to it. Pulumi keeps a stack's secrets salt in the stack file and `stack init`
writes it there, so the CLI runs in a shadow of the project under .sandbox/project: links
to the project's files, plus a generated Pulumi.<stack>.yaml. That file is the stack's
config (Pulumi.<stack>.yaml, or a `source` file) plus the sandbox kubeconfig as a Pulumi
secret (fed through stdin, never in argv or output) and any `overrides`. State lives in
.sandbox/pulumi, so it goes with the cluster it describes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from sandbox.paths import KUBECONFIG, ROOT, STATE

SHADOW = STATE / "project"
PULUMI_DIR = STATE / "pulumi"
RUN = ROOT / "toolchain" / "run"
NOT_LINKED = {".git", ".sandbox", ".pulumi", ".toolchain"}


def environment() -> dict[str, str]:
    return {**os.environ, "GPU_QUEUES_PULUMI_DIR": str(PULUMI_DIR)}


def _pulumi(
    args: list[str],
    *,
    stdin: str | None = None,
    check: bool = True,
    capture: bool = False,
    cwd: Path = SHADOW,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUN), "pulumi", "--non-interactive", *args],
        cwd=cwd,
        text=True,
        input=stdin,
        check=check,
        capture_output=capture,
        env=environment(),
    )


def shadow_project(project_dir: Path = ROOT) -> Path:
    """Links to the project's files (not its stack files) under .sandbox/project."""
    SHADOW.mkdir(parents=True, exist_ok=True)
    for entry in project_dir.iterdir():
        is_stack_file = entry.name.startswith("Pulumi.") and entry.name != "Pulumi.yaml"
        link = SHADOW / entry.name
        if entry.name in NOT_LINKED or is_stack_file or link.is_symlink():
            continue
        link.symlink_to(entry)
    return SHADOW


def prepare(
    stack: str,
    project_dir: Path = ROOT,
    source: Path | None = None,
    overrides: dict[str, str] | None = None,
) -> Path:
    """Write the shadow's Pulumi.<stack>.yaml, select (or create) the stack, add the secret."""
    shadow = shadow_project(project_dir)
    source = source or project_dir / f"Pulumi.{stack}.yaml"
    doc = (yaml.safe_load(source.read_text()) if source.exists() else None) or {}
    generated = shadow / f"Pulumi.{stack}.yaml"
    if generated.exists():  # keep the stack's salt: its state was encrypted with it
        salt = (yaml.safe_load(generated.read_text()) or {}).get("encryptionsalt")
        if salt:
            doc["encryptionsalt"] = salt
    generated.write_text(yaml.safe_dump(doc, sort_keys=False))
    _pulumi(["stack", "select", "--create", stack], capture=True)
    key = "gpu-queues:kubernetes.kubeconfig"
    _pulumi(
        ["config", "set", "--secret", "--path", key, "-s", stack],
        stdin=KUBECONFIG.read_text(),
        capture=True,
    )
    for path, value in (overrides or {}).items():
        _pulumi(["config", "set", "--path", path, value, "-s", stack], capture=True)
    return generated


def pulumi(
    *args: str,
    stack: str = "local",
    check: bool = True,
    capture: bool = False,
    project_dir: Path = ROOT,
    source: Path | None = None,
    overrides: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`pulumi <args> -s <stack>` in the shadow project, with the stack's config prepared."""
    prepare(stack, project_dir, source, overrides)
    return _pulumi([*args, "-s", stack], check=check, capture=capture)


def start(*args: str, stack: str = "local", log: Path) -> subprocess.Popen[bytes]:
    """`pulumi <args> -s <stack>` in the background, its output to `log`, for tests that run
    two at once: the stack must be prepared (`prepare`) first, as nothing here writes config."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(RUN), "pulumi", "--non-interactive", *args, "-s", stack],
            cwd=SHADOW,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment(),
        )


if __name__ == "__main__":
    # python -m sandbox.stack up --yes  ->  pulumi up --yes -s local (stack from GPU_QUEUES_STACK)
    result = pulumi(*sys.argv[1:], stack=os.environ.get("GPU_QUEUES_STACK", "local"), check=False)
    sys.exit(result.returncode)
