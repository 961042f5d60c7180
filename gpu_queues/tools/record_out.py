"""Where `gpuq record` (gpu_queues/tools/record.py) writes a recording: one .yaml file, or a
folder of one file per namespace that it keeps as its own. Every file lands inside OUT, links
resolved (gpu_queues/files.py, the rule every writer of the project follows); what else is in
the folder is never read unless it is a regular file, so a FIFO there cannot hang it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Protocol

from gpu_queues.files import OutsideProject, inside

HEADER: Final = "# Recorded by gpu_queues.tools.record"


class Recording(Protocol):
    """What is written of a recording (gpu_queues.tools.record.Recording)."""

    def files(self, single: bool) -> dict[str, str]: ...

    def header(self, start: float | None, items: list[Any]) -> str: ...


class RecordError(Exception):
    """The recording cannot be written; the message says why."""


def write(recording: Recording, out: Path) -> list[Path]:
    """Write the recording to `out` (a .yaml/.yml file: one file; else a folder, one file per
    namespace). Files a recording wrote before and that this one has no namespace for are
    removed; any other manifest in the folder is refused (it would be replayed with it)."""
    single = out.suffix.lower() in (".yaml", ".yml")
    files = recording.files(single)
    if single:
        out.parent.mkdir(parents=True, exist_ok=True)
        target = _inside(out, out.parent)
        target.write_text(files[""] if files else recording.header(None, []), encoding="utf-8")
        return [out]
    out.mkdir(parents=True, exist_ok=True)
    stale = []
    for path in sorted(out.iterdir()):
        if path.name in files or path.suffix.lower() not in (".yaml", ".yml", ".json"):
            continue
        try:  # a FIFO or a folder is not ours; a link is read where it leads, never written
            ours = path.is_file() and path.read_text(encoding="utf-8").startswith(HEADER)
        except (OSError, UnicodeDecodeError):
            ours = False
        if not ours:
            raise RecordError(
                f"{path} is a manifest this tool did not write; a mix folder is replayed whole, "
                "so record into an empty folder (or one only recordings wrote)"
            )
        stale.append(path)
    targets = {name: _inside(out / name, out) for name in files}  # refused before any change
    for path in stale:
        path.unlink()
    written = []
    for name, text in files.items():
        targets[name].write_text(text, encoding="utf-8")
        written.append(out / name)
    return written


def _inside(path: Path, folder: Path) -> Path:
    """Where `path` is written: in `folder`, links resolved (a link out of it is refused), and
    a regular file or none yet (writing into a FIFO would wait for a reader for ever)."""
    try:
        target = inside(path, folder, "the recording's folder")
    except OutsideProject as exc:
        raise RecordError(str(exc)) from None
    if target.exists() and not target.is_file():
        raise RecordError(f"{path} is not a regular file: refusing to write into it")
    return target
