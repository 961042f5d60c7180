"""Where the sandbox keeps things: one place for every path the sandbox modules share."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".toolchain" / "bin"  # the pinned toolchain (make toolchain)
# GPUQ_SANDBOX=<name> selects another sandbox of this checkout: its state under
# .sandbox/instances/<name> and a network namespace of its own (sandbox/sandbox.sh derives both
# the same way), so `make test` runs its sandbox suites side by side (tests/suites.py). Unset,
# the checkout's one sandbox in .sandbox, which `make sandbox-shell` and `make demo` use.
INSTANCE_ENV = "GPUQ_SANDBOX"
INSTANCE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,30}")


def state_dir(instance: str) -> Path:
    """The state folder of a sandbox instance ("" for the checkout's default one)."""
    if not instance:
        return ROOT / ".sandbox"
    if not INSTANCE_NAME.fullmatch(instance):
        raise ValueError(
            f"{INSTANCE_ENV}={instance!r}: a sandbox instance is named by lowercase letters, "
            "digits and '-' (at most 31)"
        )
    return ROOT / ".sandbox" / "instances" / instance


STATE = state_dir(os.environ.get(INSTANCE_ENV, ""))  # gitignored; everything of one sandbox life
LOGS = STATE / "logs"
KUBECONFIG = STATE / "kubeconfig"
KUBECTL = BIN / "kubectl"
