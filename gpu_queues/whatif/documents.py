"""Reading a what-if mix: every document of a manifest file or of every manifest under a
folder, `kind: List` expanded; a file or document that cannot be read becomes a MixDocument with
the error, so the rest still replays (gpu_queues/whatif/mix.py checks each against the stack).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")


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


def read_documents(path: Path, root: Path | None = None) -> list[MixDocument]:
    """Every document of every manifest file, `kind: List` expanded; unreadable files and
    documents become Documents with an error, so the rest still replays."""
    docs: list[MixDocument] = []
    for file in manifest_files(path):
        shown = str(file.relative_to(root)) if root and file.is_relative_to(root) else str(file)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            docs.append(MixDocument(shown, None, f"cannot read {shown}: {exc}"))
            continue
        try:
            loaded = list(yaml.safe_load_all(text))
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
    return docs
