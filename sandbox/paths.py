"""Where the sandbox keeps things: one place for every path the sandbox modules share."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".toolchain" / "bin"  # the pinned toolchain (make toolchain)
STATE = ROOT / ".sandbox"  # gitignored; everything of one sandbox life
LOGS = STATE / "logs"
KUBECONFIG = STATE / "kubeconfig"
KUBECTL = BIN / "kubectl"
