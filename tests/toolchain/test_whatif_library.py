"""The fast what-if as a library user runs it (docs/what-if.md, "From Python"; issue 38, item 1):
the documentation's own example, run as it is, gives what `gpuq what-if` reports for the same
stack and mix, and so does the README's shorter one; entries already read give the same run;
and on a terminal the command shows its progress line, in a pipe nothing more than before.

The engine of the pinned release must be built (`make toolchain`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.whatif import FastEngineError, fast, replay
from gpu_queues.whatif import cli as whatif_cli
from gpu_queues.whatif.engine_input import frameworks, manager_configuration
from gpu_queues.whatif.mix import Catalog, load_mix
from gpu_queues.whatif.report import report_json
from tests.conftest import ROOT

pytestmark = pytest.mark.toolchain

DOC = ROOT / "docs" / "what-if.md"
MIX = ROOT / "workloads" / "staging"


def documented_example() -> str:
    section = DOC.read_text().split("## From Python", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    return code


def run_example(code: str) -> subprocess.CompletedProcess[str]:
    """The example run as a user would paste it, from the checkout; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_documented_example_runs_as_it_is_and_agrees_with_the_command(tmp_path: Path) -> None:
    done = run_example(documented_example())
    teams = [t["name"] for t in read_config("staging")["teams"]]
    printed = done.stdout.splitlines()
    assert [line.split()[0] for line in printed[: len(teams)]] == teams
    assert "\n| Team | ClusterQueue | Admitted |" in done.stdout  # report.md's team table
    # The command replays the same side the same way (the pin's release, the same mix).
    out = tmp_path / "out"
    argv = ["--stack", "staging", "--workloads", str(MIX), "--until", "24h", "--out", str(out)]
    assert whatif_cli.main(argv) == 0
    command = json.loads((out / "report.json").read_text())["new"]
    library = report_json(replay(read_config("staging"), MIX, stack="staging", until="24h"), None)
    assert library["new"]["workloads"] == command["workloads"]
    assert library["new"]["teams"] == command["teams"]
    for team, line in zip(command["teams"], printed, strict=False):
        assert line.split()[:3] == [team["team"], str(team["admitted"]), str(team["pending"])]


def readme_example() -> str:
    """The README's shorter example: the python block of "Using it as a library" that imports
    the replay."""
    section = (ROOT / "README.md").read_text().split("## Using it as a library", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    (code,) = [b for b in blocks if "from gpu_queues.whatif import replay" in b]
    return code


def test_the_readmes_example_runs_as_it_is_and_prints_each_teams_figures() -> None:
    done = run_example(readme_example())
    run = replay(read_config("staging"), MIX, stack="staging", until="24h")
    assert done.stdout.splitlines() == [
        f"{t.team} {t.admitted} {t.pending} {t.wait_p90}" for t in run.teams
    ]


def test_entries_already_read_replay_as_the_mix_they_came_from() -> None:
    config = read_config("staging")
    run = replay(config, MIX, stack="staging")
    typed = load_config({k: v for k, v in config.items() if k != "kubernetes"})
    catalog = Catalog.from_stack(typed, frameworks(manager_configuration(typed)))
    entries = load_mix(MIX, catalog, ROOT)
    again = replay(typed, entries, stack="staging")
    assert report_json(again, None) == report_json(run, None)


def test_a_missing_engine_is_a_clear_error_naming_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUQ_WHATIF_BIN", str(tmp_path))
    with pytest.raises(FastEngineError) as refused:
        replay(read_config("staging"), MIX, stack="staging")
    said = str(refused.value)
    assert said.startswith(f"{tmp_path}/gpuq-whatif-v")
    assert "`make toolchain`" in said and "$GPUQ_WHATIF_BIN" in said


def test_engines_built_elsewhere_are_found_through_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = fast.load_stack_file(ROOT / "Pulumi.staging.yaml").kueue.version
    (tmp_path / f"gpuq-whatif-{version}").symlink_to(fast.BIN / f"gpuq-whatif-{version}")
    monkeypatch.setenv("GPUQ_WHATIF_BIN", str(tmp_path))
    run = replay(read_config("staging"), MIX, stack="staging")
    assert run.meta.kueue_binary == str(tmp_path / f"gpuq-whatif-{version}")
    assert run.workloads


def read_all(fd: int, into: list[bytes]) -> None:
    """Everything written to a terminal, until its other end closes."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end is closed and all is read
            return
        if not chunk:
            return
        into.append(chunk)


def test_the_progress_line_shows_on_a_terminal_and_not_in_a_pipe(tmp_path: Path) -> None:
    version = fast.load_stack_file(ROOT / "Pulumi.staging.yaml").kueue.version
    gpuq = str(Path(sys.executable).parent / "gpuq")
    argv = [gpuq, "what-if", "--stack", "staging", "--workloads", str(MIX), "--base", "HEAD"]
    piped = subprocess.run(
        [*argv, "--out", str(tmp_path / "piped")], cwd=ROOT, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    # In a pipe: the command's own lines, as before, and nothing else.
    assert [re.sub(r"@[0-9a-f]{10}", "@REV", line) for line in piped.stderr.splitlines()] == [
        f"what-if: staging@REV: fast engine, Kueue {version}",
        f"what-if: staging (work tree): fast engine, Kueue {version}",
    ]
    leader, follower = os.openpty()
    seen: list[bytes] = []
    reader = threading.Thread(target=read_all, args=(leader, seen))
    reader.start()
    try:
        with subprocess.Popen(
            [*argv, "--out", str(tmp_path / "tty")], cwd=ROOT, stdout=subprocess.PIPE,
            stderr=follower,
        ) as tty:  # fmt: skip
            os.close(follower)
            tty.communicate()
        reader.join(timeout=60)
    finally:
        os.close(leader)
    assert tty.returncode == 0
    text = b"".join(seen).decode()
    assert "what-if: replaying staging (work tree) on the fast engine (" in text
    # Its own lines as in a pipe, each on a cleared line, and the terminal's line left clean.
    assert f"\r\x1b[Kwhat-if: staging (work tree): fast engine, Kueue {version}\r\n" in text
    assert text.endswith("\r\x1b[K")
    assert json.loads((tmp_path / "tty" / "report.json").read_text()) == json.loads(
        (tmp_path / "piped" / "report.json").read_text()
    )
