"""The real Pulumi CLI on a sandbox stack (`local` by default), from inside the namespace.

The committed Pulumi.<stack>.yaml never holds the sandbox's kubeconfig, and no sandbox
run writes to it. Pulumi keeps a stack's secrets salt in the stack file and `stack init`
writes it there, so the CLI runs in a shadow of the project under .sandbox/project: links
to the project's files, plus a generated Pulumi.<stack>.yaml. That file is the stack's
config (Pulumi.<stack>.yaml, or a `source` file; a sandbox-only stack's file is in
tests/e2e/stacks) plus the kubeconfig of the sandbox cluster it deploys to as a Pulumi secret
(fed through stdin, never in argv or output) and any `overrides`. State lives in
.sandbox/pulumi, so it goes with the clusters it describes; all stacks share it, so one stack
can read another's outputs (a MultiKueue manager its workers' kubeconfigs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from gpu_queues import yamlio
from gpu_queues.files import read_text
from gpu_queues.tools import pulumi_cli
from sandbox import topology
from sandbox.paths import ROOT, STATE

SHADOW = STATE / "project"
PULUMI_DIR = STATE / "pulumi"
NOT_LINKED = {".git", ".sandbox", ".pulumi", ".toolchain"}


def environment() -> dict[str, str]:
    """This process's environment with the sandbox's state and none of a caller's settings for
    real stacks (CI's shared state and passphrase: pulumi_cli.REAL_STATE). The sandbox's stacks
    share names with real ones (`make rehearse STACK=prod`), so state elsewhere would be a real
    stack's."""
    return pulumi_cli.private_state(PULUMI_DIR)


def _pulumi(
    args: list[str],
    *,
    stdin: str | None = None,
    check: bool = True,
    capture: bool = False,
    cwd: Path = SHADOW,
) -> subprocess.CompletedProcess[str]:
    """`pulumi ARGS` in the shadow project (check: pulumi_cli.PulumiError on failure)."""
    return pulumi_cli.run(
        args, cwd=cwd, env=environment(), stdin=stdin, check=check, capture=capture
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


def source_of(stack: str, project_dir: Path = ROOT) -> Path:
    """Pulumi.<stack>.yaml of the project, else the sandbox-only one in tests/e2e/stacks."""
    name = f"Pulumi.{stack}.yaml"
    own = project_dir / name
    return (
        own
        if own.exists() or not (topology.E2E_STACKS / name).exists()
        else topology.E2E_STACKS / name
    )


def prepare(
    stack: str,
    project_dir: Path = ROOT,
    source: Path | None = None,
    overrides: dict[str, str] | None = None,
) -> Path:
    """Write the shadow's Pulumi.<stack>.yaml, select (or create) the stack, add the secret:
    the kubeconfig of the sandbox cluster the stack deploys to (topology.cluster_of_stack)."""
    shadow = shadow_project(project_dir)
    source = source or source_of(stack, project_dir)
    text = read_text(source, source.name) if source.exists() else ""
    doc = (yamlio.load(text, source.name) if text else None) or {}
    generated = shadow / f"Pulumi.{stack}.yaml"
    if generated.exists():  # keep the stack's salt: its state was encrypted with it
        salt = (yamlio.load(generated.read_text(), generated.name) or {}).get("encryptionsalt")
        if salt:
            doc["encryptionsalt"] = salt
    generated.write_text(yaml.safe_dump(doc, sort_keys=False))
    _pulumi(["stack", "select", "--create", stack], capture=True)
    key = "gpu-queues:kubernetes.kubeconfig"
    _pulumi(
        ["config", "set", "--secret", "--path", key, "-s", stack],
        stdin=topology.cluster_of_stack(stack).kubeconfig.read_text(),
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
    return pulumi_cli.start(args, stack=stack, cwd=SHADOW, env=environment(), log=log)


if __name__ == "__main__":
    # python -m sandbox.pulumi_stack up --yes  ->  pulumi up --yes -s local (stack from
    # GPU_QUEUES_STACK)
    result = pulumi(*sys.argv[1:], stack=os.environ.get("GPU_QUEUES_STACK", "local"), check=False)
    sys.exit(result.returncode)
