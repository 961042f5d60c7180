"""What the e2e tests of programs of someone else's share (test_library.py's Python program,
test_yaml_program.py's Pulumi YAML program): their Pulumi environment and how a command runs
in their directory, outside the repo."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sandbox import pulumi_stack, wheels


def environment() -> dict[str, str]:
    """The sandbox's Pulumi environment (state in .sandbox/pulumi, its passphrase) and nothing
    that would let the program import gpu_queues from this checkout. pip, wherever Pulumi runs
    it for the program or a plugin, installs from the wheels `make wheels` downloaded: the
    sandbox's namespace reaches no package index."""
    env = pulumi_stack.environment()
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels.WHEELS))
    return env


def run(
    cmd: list[str], cwd: Path, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        cmd, cwd=cwd, input=stdin, text=True, capture_output=True, env=environment()
    )
    if check:
        assert done.returncode == 0, f"{cmd[:4]}...\n{done.stdout}\n{done.stderr}"
    return done
