"""The commands README.md and docs/ show name things that exist: make targets, gpuq tools
and their options (the README's real-cluster steps are run for real by
tests/sandbox/test_readme_real_cluster.py)."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import shlex
import sys
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
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
    checked = set()
    for doc, command in shown_commands():
        words = shlex.split(command)
        if words[:1] == ["make"]:
            named = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
            missing = [w for w in named if w not in targets]
            assert not missing, f"{doc}: `{command}` names no Makefile target {missing}"
            checked.update(named)
    # The docs' blocks were found and read: the everyday targets are among those checked.
    assert {"test", "test-unit", "promote", "what-if"} <= checked, checked


def run_as_main(module: str, *args: str) -> tuple[object, str, str]:
    """`python -m module args` in this interpreter, the way `-m` runs it (runpy, as __main__):
    its exit code, stdout and stderr. (A new interpreter per tool cost ~0.3 s each.)"""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = [module, *args]
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(),
        ):
            # runpy warns that the module was imported before (by other tests): the copy it
            # runs as __main__ is a fresh one all the same.
            warnings.simplefilter("ignore", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        code: object = 0
    except SystemExit as exit:
        code = exit.code or 0
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def test_shown_tool_commands_exist_with_their_options() -> None:
    helps: dict[str, str] = {}
    for doc, command in shown_commands():
        words = shlex.split(command)
        if words[:2] != ["python", "-m"] or not words[2].startswith("gpu_queues.tools."):
            continue
        if words[2] not in helps:
            code, stdout, stderr = run_as_main(words[2], "--help")
            assert code == 0, f"{doc}: `{command}`: {stderr}"
            helps[words[2]] = stdout
        for option in (w.split("=", 1)[0] for w in words[3:] if w.startswith("--")):
            assert option in helps[words[2]], f"{doc}: `{command}`: {words[2]} has no {option}"
    assert {"gpu_queues.tools.quota_diff", "gpu_queues.tools.promote"} <= set(helps)


def gpuq_lines() -> list[tuple[str, str]]:
    """(document, command) for every `gpuq ...` the docs show: sh/bash block lines and inline
    code spans."""
    out = [(doc, c) for doc, c in shown_commands() if c.startswith("gpuq ")]
    for doc in DOCS:
        out += [(doc.name, c) for c in re.findall(r"`(gpuq [^`]+)`", doc.read_text())]
    return out


def test_shown_gpuq_commands_exist_with_their_options() -> None:
    from gpu_queues import cli as gpuq

    checked = set()
    for doc, command in gpuq_lines():
        words = shlex.split(command)
        name, rest = words[1], words[2:]
        if name in ("--help", "-h", gpuq.COMPLETION):  # gpuq's own: tests/unit/test_gpuq.py
            continue
        assert name in gpuq.COMMANDS, f"{doc}: `{command}`: gpuq has no command {name!r}"
        module = gpuq.module_for(name, rest)
        shown = gpuq.options(gpuq.help_text(module))
        for option in (w.split("=", 1)[0] for w in rest if w.startswith("--")):
            assert option in shown, f"{doc}: `{command}`: gpuq {name} has no {option}"
        checked.add(name)
    # The docs' gpuq lines were found and read: the everyday ones are among those checked.
    assert {"status", "record", "what-if"} <= checked, checked
