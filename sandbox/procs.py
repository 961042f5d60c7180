"""Processes of the sandbox, recognised by pid and start time so a reused pid is never taken
for one of ours."""

from __future__ import annotations

from pathlib import Path


def start_time(pid: int) -> str | None:
    """The process's start time, or None when it is gone (an unreaped zombie counts as gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]
