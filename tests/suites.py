"""make test's suites, and how they run: one after another in a lane, the lanes side by side.

    python -m tests.suites              every suite, in LANES (what `make test` runs)
    python -m tests.suites e2e sandbox  those suites only, one after another
    python -m tests.suites --serial     every suite, one after another

On this 2-core machine the suites that drive a sandbox mostly wait on its cluster, so five
lanes run at once: the host's checks (lint, the unit, policy and property tests, the toolchain
tests) and MultiKueue; the e2e suite then the sandbox suite; the killed-install tests, the
generated stacks' rehearsals, then the committed stacks' (moved here when the toolchain suite
grew to 13 minutes and made the checks lane the longest); the what-if's engines held to each
other on hand-worked causes of Kueue's scheduling, then on a generated day of the operators'
kinds (about 6 minutes, in the shortest lane); and on generated days, then on the causes of
Kueue's integrations (the causes were one suite and lane of 65 minutes on 6 December 2026, 25
causes under five lanes' load, the longest lane; split so, 54 and 40 minutes in a heavier run
the same day, the crosscheck lane then 71 of its 76). Each
lane drives a sandbox of its own (GPUQ_SANDBOX, sandbox/paths.py: its own state folder and
network namespace), so no suite sees another's cluster. Run alone, a suite uses the sandbox the
caller chose (by default the checkout's one, which `make sandbox-shell` enters).

Each suite's output goes to .cache/tests/<suite>.log and is printed whole when the suite ends,
so lanes never interleave their lines. The run fails when any suite fails; every suite runs
even so, and the table at the end gives each one's time and result. pytest's exit 5 (no test
collected) is a failure: every suite here has tests to run. Ctrl-C (or SIGTERM) interrupts the
suites (pytest then tears its fixtures down) and stops the sandboxes they used.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = str(ROOT / ".venv" / "bin" / "python")
SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]
LOGS = ROOT / ".cache" / "tests"
INSTANCE_ENV = "GPUQ_SANDBOX"  # sandbox/paths.py
# The unit and policy suites run on every core (pytest-xdist; an idle worker takes over queued
# tests from a busy one); `make test-unit XDIST=...` changes that.
XDIST = os.environ.get("XDIST") or "-n auto --dist worksteal"
# They cache bytecode, and pytest its rewritten test modules, out of the tree in .cache/pycache,
# also where PYTHONDONTWRITEBYTECODE is set: compiling the project and rewriting the tests'
# asserts again costs each process about 4 s.
FAST = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(ROOT / ".cache" / "pycache")}
NO_TESTS = 5  # pytest's exit code when it collected nothing
# The unit, policy and property tests run in random order (pytest-randomly; each test sets up
# what it needs), a new seed each run, printed after the failures (tests/conftest.py);
# `make test-unit SEED=N` repeats one. The suites on the sandbox and the built toolchain keep
# their files' order: their tests share one cluster (or build) and are written as a sequence.
SEED = os.environ.get("SEED")
RANDOM = ["-p", "randomly", f"--randomly-seed={SEED}"] if SEED else []
ORDERED = ["-p", "no:randomly"]


def pytest(marker: str, *extra: str) -> list[str]:
    return [PY, "-m", "pytest", "-m", marker, "-q", "-p", "no:cacheprovider", *extra]


def in_sandbox(up: list[str], tests: list[str], topology: str = "") -> list[str]:
    """Start the sandbox, run the tests (a command) inside its namespace, print its logs when
    they fail, stop it; the tests' exit code (or the start's)."""
    sandbox = shlex.join(SANDBOX)
    env = f"GPUQ_TOPOLOGY={shlex.quote(topology)} " if topology else ""
    script = (
        f"{env}{sandbox} up {shlex.join(up)} || exit $?\n"
        f"{sandbox} exec {shlex.join(tests)}; rc=$?\n"
        f"if [ $rc -ne 0 ]; then {sandbox} logs; fi\n"
        f"{sandbox} down; exit $rc\n"
    )
    return ["bash", "-c", script]


# The slow tests of a sandbox suite, listed at its end: what to go by when moving suites
# between lanes.
DURATIONS = ["--durations=0", "--durations-min=20"]
FAULTS = "tests/sandbox/test_install_faults.py"
# The committed stacks: their rehearsals, and their mixes on both what-if engines.
STACKS = (
    "test_the_committed_stack_rehearses or test_the_committed_mix_replays_the_same_on_both_engines"
)
# The what-if's engines held to each other: each cause of their parting worked out by hand, in
# Kueue's scheduling and in its integrations (a module each); and a few seeds of the randomized
# cross-check. Each a suite of its own (together they made the longest lane, 59 minutes, on 4
# December 2026; the causes alone 65 minutes on 6 December).
ENGINES = "test_engine_causes"
INTEGRATIONS = "test_integration_causes"
CROSSCHECK = "test_crosscheck"
# Its seeds of the operators' kinds (their ids say so), a suite of their own in another lane.
OPERATORS = "operators"
# The rehearsal suites that take their part by name; the `rehearse` suite takes everything else.
BY_NAME = (STACKS, ENGINES, INTEGRATIONS, CROSSCHECK)


@dataclass(frozen=True)
class Suite:
    name: str
    argv: list[str]
    what: str
    env: dict[str, str] = field(default_factory=dict)
    sandbox: bool = False  # drives a sandbox: down at the end of an interrupted run


SUITES = {
    s.name: s
    for s in (
        Suite(
            "lint", ["make", "--no-print-directory", "lint"], "ruff, mypy, shellcheck, actionlint"
        ),
        Suite(
            "unit", pytest("unit or policy", *XDIST.split(), *RANDOM), "unit, policy, tools", FAST
        ),
        Suite("policy", pytest("policy", *XDIST.split(), *RANDOM), "policy rules alone", FAST),
        Suite(
            "deep",
            pytest(
                "(unit or policy) and hypothesis",
                "--hypothesis-profile=deep",
                *XDIST.split(),
                *RANDOM,
            ),
            "property tests, 10x examples",
            FAST,
        ),
        Suite(
            "toolchain",
            pytest("toolchain", *ORDERED),
            "the built CLI, plugins, every Kueue release",
        ),
        Suite(
            "e2e",
            in_sandbox(["local"], pytest("e2e", *ORDERED, *DURATIONS)),
            "in a sandbox of the local stack",
            sandbox=True,
        ),
        # Two suites each of the sandbox and rehearsal tests, so the lanes come out even: one
        # takes a part by name, the other everything else of the marker (a new test never
        # falls between them).
        Suite(
            "faults",
            pytest("sandbox", FAULTS, *ORDERED, *DURATIONS),
            "killed installs, from the host",
            sandbox=True,
        ),
        Suite(
            "sandbox",
            pytest("sandbox", f"--ignore={FAULTS}", *ORDERED, *DURATIONS),
            "sandbox lifecycle, shapes, README steps, what-if base, from the host",
            sandbox=True,
        ),
        Suite(
            "rehearse-stacks",
            pytest("rehearse", "-k", STACKS, *ORDERED, *DURATIONS),
            "staging and prod rehearsed, their mixes on both engines",
            sandbox=True,
        ),
        Suite(
            "rehearse",
            pytest(
                "rehearse", "-k", " and ".join(f"not ({k})" for k in BY_NAME), *ORDERED, *DURATIONS
            ),
            "generated and broken stacks rehearsed",
            sandbox=True,
        ),
        Suite(
            "engines",
            pytest("rehearse", "-k", ENGINES, *ORDERED, *DURATIONS),
            "the what-if's engines on hand-worked causes of Kueue's scheduling",
            sandbox=True,
        ),
        Suite(
            "integrations",
            pytest("rehearse", "-k", INTEGRATIONS, *ORDERED, *DURATIONS),
            "the what-if's engines on hand-worked causes of Kueue's integrations",
            sandbox=True,
        ),
        Suite(
            "crosscheck",
            pytest("rehearse", "-k", f"{CROSSCHECK} and not {OPERATORS}", *ORDERED, *DURATIONS),
            "the what-if's engines on generated days",
            sandbox=True,
        ),
        Suite(
            "operators",
            pytest("rehearse", "-k", f"{CROSSCHECK} and {OPERATORS}", *ORDERED, *DURATIONS),
            "the what-if's engines on a generated day of the operators' kinds",
            sandbox=True,
        ),
        Suite(
            "multikueue",
            in_sandbox([], pytest("multikueue", *ORDERED, *DURATIONS), topology="multikueue"),
            "manager and two workers",
            sandbox=True,
        ),
    )
}

# (lane, its sandbox instance, its suites in order), about even by the suites' times on a
# quiet machine (docs/development.md, Tests).
LANES: list[tuple[str, str, list[str]]] = [
    ("checks", "checks", ["lint", "unit", "deep", "toolchain", "multikueue"]),
    ("e2e", "e2e", ["e2e", "sandbox"]),
    ("faults", "faults", ["faults", "rehearse", "rehearse-stacks"]),
    ("engines", "engines", ["engines", "operators"]),
    ("crosscheck", "crosscheck", ["crosscheck", "integrations"]),
]

# The same suites one after another (--serial: a one-core machine, or a baseline to measure).
SERIAL = [
    "lint",
    "unit",
    "deep",
    "toolchain",
    "e2e",
    "faults",
    "sandbox",
    "rehearse-stacks",
    "rehearse",
    "engines",
    "integrations",
    "crosscheck",
    "operators",
    "multikueue",
]


@dataclass
class Result:
    suite: str
    lane: str
    code: int | None = None  # None: not run (interrupted before it started)
    seconds: float = 0.0
    cpu: float = 0.0  # user + system seconds of the suite's processes

    @property
    def verdict(self) -> str:
        if self.code is None:
            return "not run"
        if self.code == 0:
            return "passed"
        if self.code == NO_TESTS:
            return "FAILED (no tests collected, exit 5)"
        return f"FAILED (exit {self.code})"


def clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


class Runner:
    def __init__(self, lanes: Sequence[tuple[str, str | None, list[str]]]) -> None:
        self.lanes = lanes
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = threading.Event()
        self.results = [Result(n, lane) for lane, _, names in lanes for n in names]

    def say(self, text: str) -> None:
        with self.lock:
            print(f"[{clock(time.monotonic() - self.started):>6}] {text}", flush=True)

    def run_lane(self, lane: str, instance: str | None) -> None:
        env = lane_env(instance)
        for result in (r for r in self.results if r.lane == lane):
            if self.stopping.is_set():
                return
            self.run_suite(SUITES[result.suite], {**env, **SUITES[result.suite].env}, result)

    def run_suite(self, suite: Suite, env: dict[str, str], result: Result) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / f"{suite.name}.log"
        where = env.get(INSTANCE_ENV) or "the checkout's"
        self.say(f"{suite.name}: started" + (f" (sandbox: {where})" if suite.sandbox else ""))
        t0 = time.monotonic()
        with log.open("wb") as out:
            # A session of its own: an interrupt reaches it from here, after the others.
            child = subprocess.Popen(
                suite.argv,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            with self.lock:
                self.running[suite.name] = child
            if self.stopping.is_set():  # interrupted as it started: not among those signalled
                _signal(child, signal.SIGINT)
            # Reaped here alone (the interrupt only signals): its exit and the CPU time of
            # its process tree, the clusters' daemons aside (they leave the tree).
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            with self.lock:
                del self.running[suite.name]
        result.code, result.seconds = child.returncode, time.monotonic() - t0
        result.cpu = usage.ru_utime + usage.ru_stime
        text = log.read_text(errors="replace")
        with self.lock:
            bar = f"----- {suite.name}: {result.verdict} in {clock(result.seconds)} "
            print(f"{bar:-<100}\n{text.rstrip()}\n{'-' * 100}", flush=True)

    def interrupt(self) -> None:
        """SIGINT to every running suite's process group (pytest tears its fixtures down, as
        on Ctrl-C), SIGKILL to what is left after a minute."""
        self.stopping.set()
        with self.lock:
            children = list(self.running.values())
        for child in children:
            _signal(child, signal.SIGINT)
        for sig in (signal.SIGKILL, None):
            deadline = time.monotonic() + 60
            while self.running and time.monotonic() < deadline:
                time.sleep(0.2)  # each lane reaps its own suite
            with self.lock:
                left = list(self.running.values())
            for child in left:
                if sig is not None:
                    _signal(child, sig)

    def stop_sandboxes(self) -> None:
        for lane, instance, names in self.lanes:
            if any(SUITES[n].sandbox for n in names):
                subprocess.run([*SANDBOX, "down"], env=lane_env(instance), cwd=ROOT, check=False)
                self.say(f"stopped the {lane} lane's sandbox")

    def table(self) -> str:
        wall = clock(time.monotonic() - self.started)
        rows = [
            "| suite | lane | result | time | CPU |",
            "| --- | --- | --- | ---: | ---: |",
            *(
                f"| {r.suite} | {r.lane} | {r.verdict} | {clock(r.seconds)} | {clock(r.cpu)} |"
                for r in self.results
            ),
        ]
        how = f"{len(self.lanes)} lanes side by side" if len(self.lanes) > 1 else "one by one"
        return (
            f"suites ({how}), {wall} in all (CPU: user + system seconds of each suite's own "
            "processes, the sandbox clusters' daemons not included):\n" + "\n".join(rows)
        )


def lane_env(instance: str | None) -> dict[str, str]:
    """The environment of a lane's suites: its sandbox instance ("": the checkout's own one;
    None: whichever the caller's environment names)."""
    env = dict(os.environ)
    if instance:
        env[INSTANCE_ENV] = instance
    elif instance == "":
        env.pop(INSTANCE_ENV, None)
    return env


def _signal(child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it has just ended
        os.killpg(child.pid, sig)


def main(argv: list[str]) -> int:
    if argv == ["--serial"]:  # make test's suites one after another, as before the lanes
        argv = SERIAL
    unknown = [a for a in argv if a not in SUITES]
    if unknown:
        print(f"unknown suite(s) {unknown}; known: {sorted(SUITES)}", file=sys.stderr)
        return 2
    if argv:  # one after another, on the caller's sandbox
        lanes: list[tuple[str, str | None, list[str]]] = [("alone", None, argv)]
    else:
        lanes = list(LANES)
    runner = Runner(lanes)

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Both interrupt: on SIGINT too, in case this process was started with SIGINT ignored (a
    # background job of a script): a handler, unlike "ignored", is not inherited by the suites.
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGINT, terminated)
    threads = [
        threading.Thread(target=runner.run_lane, args=(lane, instance), daemon=True)
        for lane, instance, _ in lanes
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=1)
    except KeyboardInterrupt:
        runner.say("interrupted: stopping the running suites")
        runner.interrupt()
        for t in threads:
            t.join(timeout=10)
        runner.stop_sandboxes()
        print(runner.table(), flush=True)
        return 130
    print(runner.table(), flush=True)
    failed = [r for r in runner.results if r.code != 0]
    if failed:
        print(f"failed: {', '.join(r.suite for r in failed)} (logs in {LOGS})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
