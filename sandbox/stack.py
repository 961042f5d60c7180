"""The real Pulumi CLI on a sandbox stack (`local` by default), from inside the namespace.

The committed Pulumi.<stack>.yaml never holds the sandbox's kubeconfig: each run writes
.sandbox/Pulumi.<stack>.yaml, the committed config plus the kubeconfig as a Pulumi secret
(encrypted by the passphrase provider, fed through stdin so it never appears in argv or
output), and passes it with --config-file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".sandbox"
RUN = ROOT / "toolchain" / "run"
KUBECONFIG = STATE / "kubeconfig"
CONFIG_FILE_COMMANDS = {"up", "preview", "refresh", "destroy", "config"}


def _pulumi(
    args: list[str],
    *,
    stdin: str | None = None,
    check: bool = True,
    capture: bool = False,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUN), "pulumi", "--non-interactive", *args],
        cwd=cwd,
        text=True,
        input=stdin,
        check=check,
        capture_output=capture,
    )


def config_file(
    stack: str,
    project_dir: Path = ROOT,
    source: Path | None = None,
    overrides: dict[str, str] | None = None,
) -> Path:
    """Write the generated config file for `stack` and return its path: the stack's config
    (Pulumi.<stack>.yaml, or `source`), the sandbox kubeconfig as a secret, and `overrides`
    (config paths as `pulumi config set --path` takes them, e.g. gpu-queues:kueue.manifest.path)."""
    committed = source or project_dir / f"Pulumi.{stack}.yaml"
    generated = STATE / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(committed.read_text()) if committed.exists() else {}
    doc = doc or {}
    if generated.exists():  # keep the stack's salt: its state was encrypted with it
        salt = (yaml.safe_load(generated.read_text()) or {}).get("encryptionsalt")
        if salt:
            doc["encryptionsalt"] = salt
    STATE.mkdir(exist_ok=True)
    generated.write_text(yaml.safe_dump(doc, sort_keys=False))
    _pulumi(
        [
            "config",
            "set",
            "--secret",
            "--path",
            "gpu-queues:kubernetes.kubeconfig",
            "-s",
            stack,
            "--config-file",
            str(generated),
        ],
        stdin=KUBECONFIG.read_text(),
        capture=True,
        cwd=project_dir,
    )
    for key, value in (overrides or {}).items():
        _pulumi(
            ["config", "set", "--path", key, value, "-s", stack, "--config-file", str(generated)],
            capture=True,
            cwd=project_dir,
        )
    return generated


def select(stack: str, project_dir: Path = ROOT) -> None:
    _pulumi(["stack", "select", "--create", stack], capture=True, cwd=project_dir)


def pulumi(
    *args: str,
    stack: str = "local",
    check: bool = True,
    capture: bool = False,
    project_dir: Path = ROOT,
    source: Path | None = None,
    overrides: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`pulumi <args> -s <stack>`, with the generated config file where the command takes one."""
    select(stack, project_dir)
    extra = ["-s", stack]
    if args and args[0] in CONFIG_FILE_COMMANDS:
        extra += ["--config-file", str(config_file(stack, project_dir, source, overrides))]
    return _pulumi([*args, *extra], check=check, capture=capture, cwd=project_dir)


if __name__ == "__main__":
    # python -m sandbox.stack up --yes  ->  pulumi up --yes -s local (stack from GPU_QUEUES_STACK)
    result = pulumi(*sys.argv[1:], stack=os.environ.get("GPU_QUEUES_STACK", "local"), check=False)
    sys.exit(result.returncode)
