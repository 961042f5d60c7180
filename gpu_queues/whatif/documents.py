"""Reading a what-if mix: every document of a manifest file or of every manifest under a
folder, `kind: List` expanded; a file or document that cannot be read becomes a MixDocument with
the error, so the rest still replays (gpu_queues/whatif/mix.py checks each against the stack).

A mix larger than its `Limits` (by default 100,000 workloads, or 100 MB of files) is refused
whole with MixTooLarge, before anything is replayed: the bytes from the files' sizes before
any is read, the workloads as the documents are counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues import yamlio
from gpu_queues.files import NotReadable, read_text

MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
MAX_WORKLOADS: Final = 100_000
MAX_BYTES: Final = 100_000_000  # 100 MB


class MixTooLarge(Exception):
    """The mix is over a limit; the message names it and the flag that raises it."""


@dataclass(frozen=True)
class Limits:
    """How large a mix the what-if takes (--max-workloads, --max-bytes)."""

    max_workloads: int = MAX_WORKLOADS
    max_bytes: int = MAX_BYTES


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def check_size(path: Path, limits: Limits) -> list[Path]:
    """The mix's files, once their sizes (read from the file system, not the files) are
    within the limit; MixTooLarge otherwise."""
    files = manifest_files(path)
    total = 0
    for file in files:
        try:
            total += file.stat().st_size
        except OSError:
            continue  # read_documents reports it as a row
    if total > limits.max_bytes:
        what = f"{len(files)} files" if len(files) != 1 else "one file"
        raise MixTooLarge(
            f"the mix at {path} is {_megabytes(total)} ({what}), over the limit of "
            f"{_megabytes(limits.max_bytes)} ({limits.max_bytes:,} bytes); split it, or raise "
            "the limit with --max-bytes N (make what-if MAX_BYTES=N)"
        )
    return files


def _too_many(path: Path, limits: Limits) -> MixTooLarge:
    return MixTooLarge(
        f"the mix at {path} has more than {limits.max_workloads:,} workloads, the limit; "
        "split it, or raise the limit with --max-workloads N (make what-if MAX_WORKLOADS=N)"
    )


@dataclass(frozen=True)
class MixDocument:
    source: str
    body: Any
    error: str | None = None


def manifest_files(path: Path) -> list[Path]:
    """A file, or every .yaml/.yml/.json file under a folder, in path order."""
    if path.is_dir():
        return sorted(
            p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
        )
    return [path]


# The documents of the texts last read, by text: the what-if counts a mix's workloads before
# anything starts (limits.mix_size_problem) and reads it again to replay it (mix.load_mix), and
# the advisor replays one mix many times; each read parsed and checked every file again (a
# third of the command's time over the 27 MB of Kueue's large-scale configuration). Keyed by
# the text itself, not the file's size and time, so an edited file is never answered from an
# older read: reading the bytes again is cheap beside parsing them. A text that failed is
# parsed again, so its error is the reader's. No caller changes a document (mix.check copies
# one before it writes).
_last_read: dict[tuple[str, int], list[Any]] = {}


def _load(file: Path, shown: str, max_bytes: int) -> list[Any]:
    """Every document of `file` as yamlio.load_all gives them (its exceptions, and
    NotReadable), from _last_read when the file's text is one read before."""
    text = read_text(file, shown, max_bytes)
    key = (text, max_bytes)
    if key not in _last_read:
        loaded = yamlio.load_all(text, shown, yamlio.Bounds(max_bytes=max_bytes))
        if len(_last_read) >= 64:
            _last_read.clear()
        _last_read[key] = loaded
    return _last_read[key]


def read_documents(
    path: Path, root: Path | None = None, limits: Limits | None = None
) -> list[MixDocument]:
    """Every document of every manifest file, `kind: List` expanded; unreadable files and
    documents become Documents with an error, so the rest still replays. MixTooLarge when
    the mix is over `limits` (the default ones when None)."""
    limits = limits or Limits()
    docs: list[MixDocument] = []
    for file in check_size(path, limits):
        shown = str(file.relative_to(root)) if root and file.is_relative_to(root) else str(file)
        try:
            loaded = _load(file, shown, limits.max_bytes)
        except NotReadable as exc:
            docs.append(MixDocument(shown, None, str(exc)))
            continue
        except yamlio.YamlRefused as exc:
            docs.append(MixDocument(shown, None, str(exc)))
            continue
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark else ""
            docs.append(MixDocument(shown, None, f"{shown} is not valid YAML{where}"))
            continue
        number = 0
        for body in loaded:
            if body is None:
                continue
            items = (
                body.get("items") if isinstance(body, dict) and body.get("kind") == "List" else None
            )
            for item in items if isinstance(items, list) else [body]:
                number += 1
                docs.append(MixDocument(f"{shown}#{number}", item))
                if len(docs) > limits.max_workloads:
                    raise _too_many(path, limits)
    return docs


def count_documents(path: Path, limits: Limits) -> int:
    """How many workloads the mix holds, checked against `limits` (MixTooLarge): what the
    what-if checks before any sandbox starts."""
    return len(read_documents(path, None, limits))
