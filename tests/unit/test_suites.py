"""tests/suites.py, the runner of `make test`'s suites, on stand-in suites: a failing suite
fails the run and the others still run, pytest's "no tests collected" (exit 5) is a failure,
every suite's time is in the table; and the lanes it runs side by side never share a sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import paths
from sandbox.crosscheck.generate import OPERATORS_FROM
from tests import suites
from tests.rehearse import test_crosscheck

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def shell(script: str) -> list[str]:
    return ["bash", "-c", script]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(suites, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(
        suites,
        "SUITES",
        {
            s.name: s
            for s in (
                suites.Suite("ok", shell("echo fine; echo $GPUQ_SANDBOX > ok.env"), ""),
                suites.Suite("broken", shell("echo 'it broke' >&2; exit 3"), ""),
                suites.Suite("empty", shell("echo 'no tests ran'; exit 5"), ""),
                suites.Suite("after", shell("echo $GPUQ_SANDBOX > after.env"), ""),
            )
        },
    )
    monkeypatch.setattr(suites, "ROOT", tmp_path)
    return tmp_path


def test_a_failing_suite_fails_the_run_and_the_rest_still_run(
    fake: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        suites, "LANES", [("a", "one", ["ok", "broken", "after"]), ("b", "", ["empty"])]
    )
    assert suites.main([]) == 1
    out = capsys.readouterr().out
    assert "| ok | a | passed |" in out
    assert "| broken | a | FAILED (exit 3) |" in out
    assert "| empty | b | FAILED (no tests collected, exit 5) |" in out
    assert "| after | a | passed |" in out  # after the failure, in the same lane
    assert "it broke" in out and "no tests ran" in out  # each suite's output, printed whole
    assert (fake / "logs" / "broken.log").read_text() == "it broke\n"
    assert "failed: broken, empty" in out
    # Each lane's suites run on its sandbox instance.
    assert (fake / "ok.env").read_text() == (fake / "after.env").read_text() == "one\n"


def test_passing_suites_pass_the_run(
    fake: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(suites, "LANES", [("a", "x", ["ok"]), ("b", "y", ["after"])])
    assert suites.main([]) == 0
    out = capsys.readouterr().out
    assert "suites (2 lanes side by side)" in out and "| after | b | passed |" in out
    assert (fake / "after.env").read_text() == "y\n"


def test_suites_named_run_one_by_one_on_the_callers_sandbox(
    fake: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GPUQ_SANDBOX", "mine")
    assert suites.main(["after", "empty"]) == 1
    assert (fake / "after.env").read_text() == "mine\n"
    assert "| empty | alone | FAILED (no tests collected, exit 5) |" in capsys.readouterr().out
    assert suites.main(["nonesuch"]) == 2


def test_make_test_runs_every_suite_once_and_no_two_lanes_share_a_sandbox() -> None:
    names = [n for _, _, lane in suites.LANES for n in lane]
    assert sorted(names) == sorted(suites.SERIAL)
    assert set(names) == set(suites.SUITES) - {"policy"}  # policy: within unit
    instances = [instance for _, instance, _ in suites.LANES]
    assert len(set(instances)) == len(instances)
    for instance in instances:
        paths.state_dir(instance or "")  # a valid name


def test_the_split_suites_take_every_test_of_their_marker() -> None:
    """A marker's tests split over two suites: one by name, the other the rest."""

    def args(name: str) -> list[str]:
        argv = suites.SUITES[name].argv
        return argv[argv.index("pytest") + 1 :]

    assert args("faults")[:2] == ["-m", "sandbox"] and suites.FAULTS in args("faults")
    assert args("sandbox")[:2] == ["-m", "sandbox"]
    assert f"--ignore={suites.FAULTS}" in args("sandbox")
    assert (ROOT / suites.FAULTS).is_file()
    stacks, rest = args("rehearse-stacks"), args("rehearse")
    assert stacks[:2] == rest[:2] == ["-m", "rehearse"]
    assert stacks[stacks.index("-k") + 1] == suites.STACKS
    engines = args("engines")
    assert engines[:2] == ["-m", "rehearse"]
    assert engines[engines.index("-k") + 1] == suites.ENGINES
    integrations = args("integrations")
    assert integrations[:2] == ["-m", "rehearse"]
    assert integrations[integrations.index("-k") + 1] == suites.INTEGRATIONS
    crosscheck = args("crosscheck")
    assert crosscheck[:2] == ["-m", "rehearse"]
    assert crosscheck[crosscheck.index("-k") + 1] == (
        f"{suites.CROSSCHECK} and not {suites.OPERATORS}"
    )
    operators = args("operators")
    assert operators[:2] == ["-m", "rehearse"]
    assert operators[operators.index("-k") + 1] == f"{suites.CROSSCHECK} and {suites.OPERATORS}"
    assert rest[rest.index("-k") + 1] == (
        f"not ({suites.STACKS}) and not ({suites.ENGINES}) and not ({suites.INTEGRATIONS})"
        f" and not ({suites.CROSSCHECK})"
    )
    tests = "".join(p.read_text() for p in sorted((ROOT / "tests/rehearse").glob("test_*.py")))
    for name in suites.STACKS.split(" or "):  # each name is a test that exists
        assert f"def {name}(" in tests, name
    # Each name is a module of the marker.
    for module in (suites.ENGINES, suites.INTEGRATIONS, suites.CROSSCHECK):
        assert (ROOT / "tests/rehearse" / f"{module}.py").is_file(), module
    # The crosscheck's seeds of the operators' kinds, and only they, carry the name the
    # operators suite takes (in their ids; pytest's -k matches ids too).
    cases = test_crosscheck.CASES
    ids = [c.id for c in cases if not isinstance(c, int)]
    assert ids == [f"{suites.OPERATORS}-{seed}" for seed in test_crosscheck.OPERATOR_SEEDS]
    assert [c for c in cases if isinstance(c, int)] == list(test_crosscheck.SEEDS)
    assert all(seed >= OPERATORS_FROM for seed in test_crosscheck.OPERATOR_SEEDS)
    assert all(seed < OPERATORS_FROM for seed in test_crosscheck.SEEDS)
