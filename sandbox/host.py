"""From the host: a sandbox started fresh, shaped like a stack file, and commands run inside
its network namespace (sandbox/sandbox.sh). The rehearsal (sandbox.rehearse.run) and the
what-if (sandbox.replay.cli) start their sandboxes here.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.paths import ROOT

SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]


class SandboxError(Exception):
    """The sandbox did not start; the message names the command that failed."""


def _sandbox(*args: str, quiet: bool = False) -> int:
    return subprocess.run([*SANDBOX, *args], cwd=ROOT, check=False, capture_output=quiet).returncode


@contextmanager
def fresh_sandbox(stack_name: str, stack_file: Path | None, keep: bool = False) -> Iterator[None]:
    """A sandbox started fresh, shaped like the stack file (sandbox.shape: its nodes,
    namespaces, volumes and Kueue release; any sandbox of this checkout is stopped first),
    and stopped afterwards unless `keep`. SandboxError when it does not start."""
    extra = [str(stack_file.resolve())] if stack_file else []
    _sandbox("down", quiet=True)
    started = time.monotonic()
    code = _sandbox("up", stack_name, *extra)
    if code != 0:
        shown = " ".join(["sandbox/sandbox.sh up", stack_name, *extra])
        raise SandboxError(f"`{shown}` failed (exit {code})")
    print(f"sandbox: up in {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if keep:
            print(
                "sandbox: still up: make sandbox-shell to look around, make sandbox-down",
                file=sys.stderr,
            )
        else:
            _sandbox("down", quiet=True)


def in_sandbox(*command: str) -> int:
    """Run the command inside the running sandbox's network namespace; its exit status."""
    return _sandbox("exec", *command)
