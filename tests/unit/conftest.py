"""Temporary projects with Pulumi.<stack>.yaml files (optionally in a git repo) for gpuq (stack
files to write there can be built with tests/builders.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Write = Callable[..., Path]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def write(project: Path) -> Write:
    def _write(stack: str, text: str) -> Path:
        path = project / f"Pulumi.{stack}.yaml"
        path.write_text(text)
        return path

    return _write


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    return project
