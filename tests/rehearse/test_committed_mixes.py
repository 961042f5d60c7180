"""The committed mixes (workloads/staging, workloads/prod) on both what-if engines: `make
what-if ENGINE=sandbox` replays each on a fresh sandbox shaped like its stack (the real
control plane, Kueue's own binary), the fast engine replays it on the nodes that stack
declares (the ones the sandbox was shaped with), and every workload must come out the same:
outcome, flavor and wait, to the second (docs/what-if.md, Engines). A difference is a failure
of this test, not a footnote. Minutes each (a day of each stack's work on the sandbox): `make
test` runs them with the committed stacks' rehearsals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sandbox.replay import fast
from sandbox.shape import load_stack

pytestmark = pytest.mark.rehearse

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 1800


def story(workloads: list[dict[str, Any]]) -> dict[str, tuple[object, ...]]:
    return {
        f"{w['namespace']}/{w['name']}": (w["outcome"], w["flavor"], w["waitSeconds"])
        for w in workloads
    }


def sandbox_replay(
    stack: str, out: Path, quiet: float | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`make what-if ENGINE=sandbox` of the committed mix: its report's "new" side and
    replay.json's (the run's own figures: its quiet spell and longest pause)."""
    command = ["make", "--no-print-directory", "what-if", f"STACK={stack}", "ENGINE=sandbox",
               f"OUT={out}"]  # fmt: skip
    if quiet is not None:
        command.append(f"QUIET={quiet}")
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    replayed = json.loads((out / "replay.json").read_text())["new"]
    assert replayed["engine"] == "sandbox"
    report = json.loads((out / "report.json").read_text())["new"]
    return report["workloads"], replayed


def unsure(replayed: dict[str, Any]) -> bool:
    """The sandbox run says its settling cannot be trusted: the cluster paused mid-reaction
    for more than three quarters of the quiet spell that counts as settled (the run's note
    says to replay with a longer one; sandbox/replay/engine.py)."""
    return float(replayed["longest_silence_seconds"]) > 0.75 * float(replayed["quiet_seconds"])


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_committed_mix_replays_the_same_on_both_engines(stack: str, tmp_path: Path) -> None:
    """When the engines differ and the sandbox run itself says its quiet spell came close to
    ending a settle too early (a loaded machine), it is replayed once more with a quiet spell
    twice as long, as its note advises, and that run must agree; otherwise the first must."""
    config = load_stack(ROOT / f"Pulumi.{stack}.yaml")
    quick = fast.replay_mix(config, ROOT / "workloads" / stack, stack=stack, label=stack)
    on_fast = story([w.public() for w in quick.workloads])
    workloads, replayed = sandbox_replay(stack, tmp_path / "out")
    on_sandbox = story(workloads)
    if on_sandbox != on_fast and unsure(replayed):
        quiet = 2 * float(replayed["quiet_seconds"])
        workloads, replayed = sandbox_replay(stack, tmp_path / "again", quiet)
        on_sandbox = story(workloads)
    assert len(on_sandbox) >= 20  # the whole committed mix, not a stub
    assert list(on_fast) == list(on_sandbox)
    differ = {k: (on_sandbox[k], on_fast[k]) for k in on_sandbox if on_sandbox[k] != on_fast[k]}
    assert not differ, f"sandbox vs fast, (outcome, flavor, wait): {differ}"
