"""`gpuq`, the one command (gpu_queues/cli.py; issue 38, item 4): every subcommand's --help, the
module each runs with the rest of the command line, a clear error for one it does not have,
the make target that runs the same, the script in the venv and in the wheel, the bash
completion, and the progress line (gpu_queues/progress.py) only on a terminal."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from gpu_queues import cli as gpuq
from gpu_queues.progress import CLEAR, Progress
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

SUBCOMMANDS = (
    "status", "record", "what-if", "advise", "eta", "promote", "quota-diff", "kueue-diff",
    "pin-kueue",
)  # fmt: skip


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = gpuq.main(argv)
    except SystemExit as exit:  # argparse's --help and usage errors
        code = int(exit.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_gpuq_has_the_commands_people_run() -> None:
    assert set(SUBCOMMANDS) == set(gpuq.COMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_has_its_help_under_its_gpuq_name(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([name, "--help"], capsys)
    assert code == 0
    assert out.startswith(f"usage: gpuq {name} "), out[:200]
    assert "--help" in out


def test_gpuq_alone_or_with_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    listed = re.findall(r"^  (\S+)  ", out, re.M)
    assert listed == [*gpuq.COMMANDS, "completion"]
    code, out, err = run([], capsys)
    assert (code, out) == (2, "") and err.startswith("usage: gpuq <command>")


def test_an_unknown_command_is_a_clear_error_naming_the_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["stauts", "--stack", "prod"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("gpuq: no command 'stauts' (did you mean status?); the commands: ")
    assert all(name in err for name in SUBCOMMANDS)
    code, _, err = run(["frobnicate"], capsys)
    assert code == 2 and "did you mean" not in err and "no command 'frobnicate'" in err


def test_completion_needs_the_shell_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["completion"], capsys)
    assert (code, out) == (2, "") and "gpuq completion bash" in err


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], str]] = []

    def runner(self, module: str) -> Any:
        from gpu_queues.invoked import prog

        def main(argv: list[str]) -> int:
            self.calls.append((module, argv, prog("python -m")))
            return 7

        return main


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["status", "--stack", "prod", "--json"], "gpu_queues.tools.status"),
        (["status", "--stack", "prod", "--eta", "--horizon", "2h"], "gpu_queues.tools.eta"),
        (["eta", "--stack", "prod"], "gpu_queues.tools.eta"),
        (["record", "--stack", "prod", "--out", "mix/"], "gpu_queues.tools.record"),
        (["what-if", "--stack", "staging", "--workloads", "w"], "sandbox.replay.cli"),
        (["advise", "--stack", "prod", "--goal", "research p90 < 2h"], "gpu_queues.advise.cli"),
        (["promote", "dev", "staging", "--dry-run"], "gpu_queues.tools.promote"),
        (["quota-diff", "prod@origin/main", "prod"], "gpu_queues.tools.quota_diff"),
        (["kueue-diff", "prod@origin/main", "prod"], "gpu_queues.tools.kueue_diff"),
        (["pin-kueue", "--check"], "gpu_queues.release.pin"),
    ],
)
def test_the_dispatcher_runs_the_modules_main_with_the_rest_of_the_line(
    argv: list[str], module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    monkeypatch.setattr(gpuq, "runner", recorder.runner)
    assert gpuq.main(argv) == 7  # its exit status, as it returned it
    assert recorder.calls == [(module, argv[1:], f"gpuq {argv[0]}")]


def test_the_what_if_runs_the_sandbox_side_only_where_the_checkout_has_it(tmp_path: Path) -> None:
    """In the checkout, `gpuq what-if` is `make what-if` (the sandbox engine can be chosen);
    an installed library without sandbox/ runs its own command (the fast engine)."""
    assert gpuq.module_for("what-if", []) == "sandbox.replay.cli"
    assert gpuq.module_for("what-if", [], root=tmp_path) == "gpu_queues.whatif.cli"
    (tmp_path / "sandbox" / "replay").mkdir(parents=True)
    (tmp_path / "sandbox" / "replay" / "cli.py").write_text("")
    assert gpuq.module_for("what-if", [], root=tmp_path) == "sandbox.replay.cli"


def test_a_command_that_needs_the_checkout_says_so_in_an_installed_library(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def runner(module: str) -> Any:
        raise ModuleNotFoundError("No module named 'policies'", name="policies")

    monkeypatch.setattr(gpuq, "runner", runner)
    code, _, err = run(["advise", "--stack", "prod"], capsys)
    assert code == 2
    assert err.startswith("gpuq advise: needs a gpu-queues checkout (its policies package ")
    assert "`make advise`" in err

    def broken(module: str) -> Any:
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")

    monkeypatch.setattr(gpuq, "runner", broken)
    with pytest.raises(ModuleNotFoundError):  # a broken install is not hidden
        gpuq.main(["status"])


def recipes() -> dict[str, str]:
    """Each Makefile target's recipe (its lines after the target line)."""
    found: dict[str, str] = {}
    name = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        target = re.match(r"^([A-Za-z][\w-]*):", line)
        if target:
            name = target.group(1)
            found[name] = ""
        elif name and line.startswith("\t"):
            found[name] += line + "\n"
        elif not line.startswith(" "):
            name = None
    return found


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_is_what_its_make_target_runs(name: str) -> None:
    command = gpuq.COMMANDS[name]
    recipe = recipes()[command.make]
    for module in {command.checkout or command.module, *command.when.values()}:
        assert re.search(rf"(-m |,){re.escape(module)}[,)\s]", recipe), (module, recipe)


def test_the_venv_has_gpuq_as_a_command() -> None:
    """`make venv` installs the checkout: .venv/bin/gpuq runs this tree's dispatcher from
    anywhere (and this tree's other packages with it)."""
    script = Path(sys.executable).parent / "gpuq"
    assert script.is_file(), "run `make venv`"
    done = subprocess.run(
        [str(script), "what-if", "--help"], cwd="/", capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: gpuq what-if ")


def test_the_wheel_carries_the_gpuq_script_and_the_build_backend_is_pinned(
    tmp_path: Path,
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"gpuq": "gpu_queues.cli:main"}
    backend = project["build-system"]["requires"]
    pinned = (ROOT / "requirements.txt").read_text()
    assert all(re.search(rf"^{re.escape(b)}\s", pinned, re.M) for b in backend), backend
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
         "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("gpu_queues-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (entry,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "gpuq = gpu_queues.cli:main" in z.read(entry).decode()
    assert "gpu_queues/cli.py" in names and "gpu_queues/whatif/fast.py" in names
    assert not [n for n in names if n.startswith(("sandbox/", "policies/", "tests/"))]


def complete(script: str, *words: str) -> list[str]:
    """What bash offers for the last of `words` (after `gpuq`), with the script loaded."""
    line = " ".join(f"'{w}'" for w in ("gpuq", *words))
    probe = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _gpuq; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_the_commands_and_each_commands_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, script, _ = run(["completion", "bash"], capsys)
    assert code == 0 and "complete -o default -F _gpuq gpuq" in script
    assert complete(script, "") == [*gpuq.COMMANDS, "completion"]
    assert complete(script, "wh") == ["what-if"]
    assert complete(script, "what-if", "--ba") == ["--base"]
    assert complete(script, "what-if", "--stack", "staging", "--engine", "x", "--max-") == [
        "--max-bytes",
        "--max-workloads",
    ]
    # status takes --eta's options too: `gpuq status --eta --horizon 2h`
    assert complete(script, "status", "--eta", "--hor") == ["--horizon"]
    assert complete(script, "advise", "--g") == ["--goal"]
    assert complete(script, "completion", "") == ["bash"]
    assert complete(script, "what-if", "workl") == []  # values: bash's own (file names)


# --- the progress line ------------------------------------------------------------------


def test_off_a_terminal_the_progress_line_adds_nothing() -> None:
    stream = io.StringIO()
    with Progress("what-if", stream, interval=0.01) as progress:
        progress.update("replaying base")
        progress.say("what-if: base: fast engine, Kueue v0.18.3")
        time.sleep(0.05)
        progress.update("replaying new")
        progress.say("what-if: new: fast engine, Kueue v0.18.3")
    assert stream.getvalue() == (
        "what-if: base: fast engine, Kueue v0.18.3\nwhat-if: new: fast engine, Kueue v0.18.3\n"
    )


def test_on_a_terminal_the_progress_line_is_redrawn_under_the_output_and_cleared() -> None:
    leader, follower = os.openpty()
    with open(follower, "w", encoding="utf-8") as stream:
        with Progress("what-if", stream, interval=0.01) as progress:
            progress.update("replaying base")
            time.sleep(0.1)  # the time keeps counting while the work blocks
            progress.say("what-if: base: fast engine")
        stream.flush()
        seen = os.read(leader, 65536).decode()
    os.close(leader)
    assert "what-if: replaying base (0s)" in seen
    assert seen.count("what-if: replaying base") >= 3  # redrawn by the thread, not only once
    # The command's own line starts on a cleared line, and the terminal is left clean.
    assert CLEAR + "what-if: base: fast engine\r\n" in seen
    assert seen.endswith(CLEAR)


def test_a_dumb_terminal_gets_no_progress_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    leader, follower = os.openpty()
    with open(follower, "w", encoding="utf-8") as stream:
        with Progress("advise", stream, interval=0.01) as progress:
            progress.update("replaying")
            progress.say("advise: start")
            time.sleep(0.03)
        stream.flush()
        seen = os.read(leader, 65536).decode()
    os.close(leader)
    assert seen == "advise: start\r\n"
