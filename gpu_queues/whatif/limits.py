"""How large a mix the what-if takes: --max-workloads and --max-bytes, the same flags on the
command (checked before any engine starts) and on the sandbox's engine (checked again where
it reads the mix, in the sandbox). The limits themselves are gpu_queues.whatif.documents'.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpu_queues.whatif.documents import (
    MAX_BYTES,
    MAX_WORKLOADS,
    Limits,
    MixTooLarge,
    count_documents,
)


def _count(text: str) -> int:
    """A positive whole number, `_` or `,` allowed between digits (100_000, 200,000)."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return value


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    """--max-workloads and --max-bytes: how large a mix the what-if takes (the CLI checks
    before any sandbox starts, the engine again when it reads the mix)."""
    parser.add_argument(
        "--max-workloads", type=_count, default=MAX_WORKLOADS, metavar="N",
        help=f"refuse a mix of more workloads (default {MAX_WORKLOADS:,})",
    )  # fmt: skip
    parser.add_argument(
        "--max-bytes", type=_count, default=MAX_BYTES, metavar="N",
        help=f"refuse a mix of more bytes of files (default {MAX_BYTES:,}: 100 MB)",
    )  # fmt: skip


def mix_size_problem(workloads: Path, limits: Limits) -> str | None:
    """Why the mix is too large to replay (over a limit), else None: its files' sizes first
    (from the file system, before any file is read), then its workloads counted."""
    try:
        count_documents(workloads, limits)
    except MixTooLarge as exc:
        return str(exc)
    return None


def limits_of(args: Any) -> Limits:
    return Limits(args.max_workloads, args.max_bytes)
