"""The one way this project runs the Pulumi CLI (promote, status, the sandbox, the what-if).

    run(["preview"], stack="dev")                   the finished command (output captured)
    stack_outputs("dev")                            `pulumi stack output --json`, parsed
    config_value("gpu-queues:kubernetes.kubeconfig", "dev", cwd=project)
                                                    one config value, decrypted into memory
    start(["up", "--yes"], stack="local", cwd=..., log=...)    the same in the background
    private_state(Path(".sandbox/pulumi"))          an environment whose stacks live there only

Every command goes through toolchain/run, which sets the environment: the pinned CLI first on
PATH, a file backend and PULUMI_HOME under .pulumi/ (or $GPU_QUEUES_PULUMI_DIR), the passphrase
in a private file it names in PULUMI_CONFIG_PASSPHRASE_FILE (a caller's passphrase wins: CI's
secret), no update checks, no plugin downloads. Every command is `pulumi --non-interactive ...`
and a stack is passed as `-s STACK`. Nothing secret is ever in argv: the passphrase is a file
and a secret value goes through stdin.

A command that fails is a PulumiError naming the command (`pulumi ...`, which holds no secret),
its exit status and its stderr. It never carries what was fed to stdin; stdout, which may hold
decrypted values (`config get`), stays on the error object (as CalledProcessError's `stdout`)
and is not part of its message.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RUN = Path("toolchain") / "run"  # relative to the project root

# Where a caller's environment points Pulumi for real stacks (CI's shared state, a Pulumi
# Cloud token, CI's passphrase). private_state() drops them.
REAL_STATE = (
    "PULUMI_BACKEND_URL",
    "PULUMI_ACCESS_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_CONFIG_PASSPHRASE_FILE",
)
STATE_DIR = "GPU_QUEUES_PULUMI_DIR"  # toolchain/run's state directory (default: .pulumi)

Result = subprocess.CompletedProcess[str]


class PulumiError(subprocess.CalledProcessError):
    """A Pulumi command exited non-zero. `args` are the CLI's arguments (`pulumi` excluded);
    the message names the command, its exit status and its stderr, never stdin or stdout."""

    def __init__(
        self, args: Sequence[str], returncode: int, stdout: str | None, stderr: str | None
    ) -> None:
        super().__init__(returncode, ["pulumi", *args], stdout, stderr)
        self.pulumi_args = tuple(args)

    @property
    def command(self) -> str:
        return " ".join(["pulumi", *self.pulumi_args])

    @property
    def reason(self) -> str:
        """The last line of stderr (where the CLI puts its `error: ...`), or ''."""
        lines = (self.stderr or "").strip().splitlines()
        return lines[-1] if lines else ""

    def __str__(self) -> str:
        said = (self.stderr or "").strip()
        return f"`{self.command}` exited {self.returncode}" + (f": {said}" if said else "")


class PulumiOutputError(ValueError):
    """The CLI succeeded but did not print what was asked for (JSON of the expected shape)."""


def private_state(state: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment (`base`, default os.environ) with the state directory `state` and none
    of the caller's settings for real stacks: the stacks there share names with real ones, so
    state or a passphrase from elsewhere would be a real stack's."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in REAL_STATE}
    return {**env, STATE_DIR: str(state)}


def argv(args: Sequence[str], *, stack: str | None = None, root: Path = ROOT) -> list[str]:
    """The command line: `toolchain/run pulumi --non-interactive ARGS [-s STACK]`."""
    return [
        str(root / RUN),
        "pulumi",
        "--non-interactive",
        *args,
        *(["-s", stack] if stack is not None else []),
    ]


def _shown(args: Sequence[str], stack: str | None) -> list[str]:
    return [*args, *(["-s", stack] if stack is not None else [])]


def run(
    args: Sequence[str],
    *,
    stack: str | None = None,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    capture: bool = True,
    check: bool = True,
    timeout: float | None = None,
    root: Path = ROOT,
) -> Result:
    """`pulumi ARGS [-s STACK]` in `cwd` through `root`'s toolchain/run; `env` (default: this
    process's) is what toolchain/run starts from. capture=False leaves stdout and stderr on
    the terminal. check: a non-zero exit raises PulumiError; otherwise the caller reads
    `returncode`. timeout (seconds): subprocess.TimeoutExpired once it has passed."""
    done = subprocess.run(
        argv(args, stack=stack, root=root),
        cwd=cwd,
        env=None if env is None else dict(env),
        input=stdin,
        text=True,
        capture_output=capture,
        check=False,
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise PulumiError(_shown(args, stack), done.returncode, done.stdout, done.stderr)
    return done


def start(
    args: Sequence[str],
    *,
    log: Path,
    stack: str | None = None,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    root: Path = ROOT,
) -> subprocess.Popen[bytes]:
    """`pulumi ARGS [-s STACK]` in the background, stdout and stderr to the file `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            argv(args, stack=stack, root=root),
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
        )


def stack_outputs(
    stack: str, *, cwd: Path = ROOT, env: Mapping[str, str] | None = None, root: Path = ROOT
) -> dict[str, Any]:
    """`pulumi stack output --json -s STACK` as a dict (secret outputs masked, as the CLI
    prints them without --show-secrets). PulumiError if the CLI fails, PulumiOutputError if
    it prints something other than a JSON object."""
    done = run(["stack", "output", "--json"], stack=stack, cwd=cwd, env=env, root=root)
    try:
        outputs = json.loads(done.stdout or "{}")
    except ValueError as exc:
        raise PulumiOutputError(f"stack output of {stack!r} is not JSON: {exc}") from None
    if not isinstance(outputs, dict):
        raise PulumiOutputError(f"stack output of {stack!r} is not a JSON object")
    return outputs


def config_value(
    key: str,
    stack: str,
    *,
    path: bool = True,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    root: Path = ROOT,
) -> str:
    """`pulumi config get [--path] KEY -s STACK`: the value as the CLI prints it, a secret
    decrypted into this process's memory (never printed, never written). PulumiError if the
    CLI fails; its message has the CLI's stderr only."""
    args = ["config", "get", *(["--path"] if path else []), key]
    return run(args, stack=stack, cwd=cwd, env=env, root=root).stdout
