"""Which Kueue release a stack runs, at a revision or in the work tree: its own `kueue.version`,
else KUEUE_VERSION of toolchain/pins.env in the same tree. One rule for the PR preview's Kueue
section (gpu_queues.tools.kueue_diff), the what-if's sides and the advisor, so a what-if base
runs the release that section calls the old one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.config.stackfile import (
    ROOT,
    StackFileError,
    git_output,
    read_config,
    resolve_commit,
)
from gpu_queues.kueue.versions import supported, unsupported_message


@dataclass(frozen=True)
class StackRelease:
    """The release a stack file resolves to, and the config it was read from."""

    version: str
    own: bool
    """The stack sets `kueue.version` itself (else it follows the pin)."""
    raw: dict[str, Any]
    rev: str | None

    @property
    def source(self) -> str:
        """Where the version comes from, for messages."""
        if self.own:
            return "its own kueue.version"
        return "toolchain/pins.env" + (f" at {self.rev}" if self.rev else "")


def own_version(raw: Mapping[str, Any]) -> str | None:
    """The stack config's own `kueue.version`, None when it follows the pin."""
    kueue = raw.get(keys.KEY_KUEUE)
    version = kueue.get("version") if isinstance(kueue, dict) else None
    return str(version) if version else None


def pinned_at(root: Path, rev: str | None) -> str:
    """KUEUE_VERSION of toolchain/pins.env in the work tree (rev None) or at `rev`:
    FileNotFoundError without one in the work tree, StackFileError at a revision."""
    if rev is None:
        text = (root / "toolchain" / "pins.env").read_text(encoding="utf-8")
    else:
        try:
            text = git_output(root, "show", f"{resolve_commit(root, rev)}:toolchain/pins.env")
        except StackFileError:
            raise StackFileError(f"no toolchain/pins.env at revision {rev!r}") from None
    for line in text.splitlines():
        if line.startswith("KUEUE_VERSION="):
            return line.partition("=")[2].strip()
    raise StackFileError(f"toolchain/pins.env{f' at {rev}' if rev else ''} has no KUEUE_VERSION")


def stack_release(stack: str, root: Path = ROOT, rev: str | None = None) -> StackRelease:
    """The release Pulumi.<stack>.yaml runs in the work tree (rev None) or at `rev`. The pin is
    read only for a stack that sets no version: one that sets its own needs no
    toolchain/pins.env beside it."""
    raw = read_config(stack, root, rev)
    own = own_version(raw)
    return StackRelease(own or pinned_at(root, rev), own is not None, raw, rev)


def kueue_release_problem(stack_name: str, version: str) -> str | None:
    """Why the program cannot run the stack's Kueue release (None when it can): any supported
    release runs, the pin or a stack that sets its own `kueue.version` ahead of the pin
    (docs/upgrading.md)."""
    if version not in supported():
        return f"stack {stack_name!r} runs Kueue {version}: {unsupported_message(version)}"
    return None
