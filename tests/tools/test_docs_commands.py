"""The commands README.md and docs/ show name things that exist: make targets, gpuq tools
and their options (the README's real-cluster steps are run for real by
tests/sandbox/test_readme_real_cluster.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def shown_commands() -> list[tuple[str, str]]:
    """(document, command line) for every line of every sh/bash block."""
    out = []
    for doc in DOCS:
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", doc.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = line.split("  #", 1)[0].strip()
                if command and not command.startswith(("#", "$")):
                    out.append((doc.name, command))
    return out


def test_shown_make_targets_exist() -> None:
    targets = set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    for doc, command in shown_commands():
        words = shlex.split(command)
        if words[:1] == ["make"]:
            named = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
            missing = [w for w in named if w not in targets]
            assert not missing, f"{doc}: `{command}` names no Makefile target {missing}"


def test_shown_gpuq_commands_exist_with_their_options() -> None:
    helps: dict[str, str] = {}
    for doc, command in shown_commands():
        words = shlex.split(command)
        if words[:2] != ["python", "-m"] or not words[2].startswith("gpuq."):
            continue
        if words[2] not in helps:
            done = subprocess.run(
                [sys.executable, "-m", words[2], "--help"],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, f"{doc}: `{command}`: {done.stderr}"
            helps[words[2]] = done.stdout
        for option in (w.split("=", 1)[0] for w in words[3:] if w.startswith("--")):
            assert option in helps[words[2]], f"{doc}: `{command}`: {words[2]} has no {option}"
    assert {"gpuq.quota_diff", "gpuq.promote"} <= set(helps)
