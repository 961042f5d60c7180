"""The committed mixes (workloads/staging, workloads/prod) and a mix of plain Pods on both
what-if engines: `make what-if ENGINE=sandbox` replays each on a fresh sandbox shaped like its
stack (the real control plane, Kueue's own binary), the fast engine replays it on the nodes
that stack declares (the ones the sandbox was shaped with), and every workload must come out
the same: outcome, flavor and wait, to the second (docs/what-if.md, Engines). A difference is
a failure of this test, not a footnote. Minutes each (a day of each stack's work on the
sandbox): `make test` runs them with the committed stacks' rehearsals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.whatif import agreement, fast
from gpu_queues.whatif.report import Run
from sandbox.shape import load_stack

pytestmark = pytest.mark.rehearse

ROOT = Path(__file__).resolve().parents[2]
PODS = Path(__file__).parent / "pods"  # Pulumi.pods.yaml and its mix
TIMEOUT = 1800


def story(workloads: list[dict[str, Any]]) -> dict[str, tuple[object, ...]]:
    return {
        f"{w['namespace']}/{w['name']}": (w["outcome"], w["flavor"], w["waitSeconds"])
        for w in workloads
    }


def sandbox_replay(
    stack: str, out: Path, quiet: float | None = None, root: Path = ROOT, mix: Path | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`make what-if ENGINE=sandbox` of the stack's mix (the committed one by default): its
    report's "new" side and replay.json's (the run's own figures: its quiet spell and longest
    pause)."""
    command = ["make", "--no-print-directory", "what-if", f"STACK={stack}", "ENGINE=sandbox",
               f"OUT={out}", f"WORKLOADS={mix or ROOT / 'workloads' / stack}"]  # fmt: skip
    if root != ROOT:
        command = [sys.executable, "-m", "sandbox.replay.cli", "--stack", stack,
                   "--root", str(root), "--workloads", str(mix), "--engine", "sandbox",
                   "--out", str(out)]  # fmt: skip
    if quiet is not None:
        command.append(f"QUIET={quiet}" if root == ROOT else f"--quiet={quiet}")
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


def both_engines(
    stack: str, tmp_path: Path, root: Path = ROOT, mix: Path | None = None
) -> dict[str, tuple[object, ...]]:
    """The mix's story on both engines, which must be the same: every workload's outcome,
    flavor and wait, and every step of its way there (admitted with its flavor, ran with its
    pods' nodes, evicted, stopped; gpu_queues.whatif.agreement). When they differ and the
    sandbox run itself says its quiet spell came close to ending a settle too early (a loaded
    machine), it is replayed once more with a quiet spell twice as long, as its note advises,
    and that run must agree; otherwise the first must."""
    mix = mix or ROOT / "workloads" / stack
    config = load_stack(root / f"Pulumi.{stack}.yaml")
    quick = fast.replay_mix(config, mix, stack=stack, label=stack)
    on_fast = story([w.public() for w in quick.workloads])
    out = tmp_path / "out"
    workloads, replayed = sandbox_replay(stack, out, root=root, mix=mix)
    told = agreement.explain(sandbox_run(out), quick, ("sandbox", "fast"))
    if told and unsure(replayed):
        quiet = 2 * float(replayed["quiet_seconds"])
        out = tmp_path / "again"
        workloads, replayed = sandbox_replay(stack, out, quiet, root, mix)
        told = agreement.explain(sandbox_run(out), quick, ("sandbox", "fast"))
    assert list(on_fast) == list(story(workloads))
    assert not told, f"the engines part:\n{told}"
    return on_fast


def sandbox_run(out: Path) -> Run:
    """The sandbox side's whole run (the timelines report.json leaves out)."""
    return Run.from_json(json.loads((out / "work" / "new" / "run.json").read_text()))


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_committed_mix_replays_the_same_on_both_engines(stack: str, tmp_path: Path) -> None:
    assert len(both_engines(stack, tmp_path)) >= 20  # the whole committed mix, not a stub


def test_plain_pods_replay_the_same_on_both_engines(tmp_path: Path) -> None:
    """Kueue's pod integration, with Jobs beside the Pods (pods/mix, worked out by hand). alpha
    and beta have 4 GPUs each of one node's 8, may borrow 4, and reclaim what they lent; alpha
    preempts lower priorities within its queue.
    - 0 s: pod nb-1 (2, low) and Job train (2, high) run in alpha's own 4.
    - 5m: pod nb-2 (4, low) borrows beta's idle 4 and runs.
    - 10m: Job b-1 (4) reclaims beta's 4: Kueue preempts nb-2 by deleting its pod, and nothing
      makes a plain Pod again, so it is preempted for good; b-1 runs to 30m.
    - 20m: pod hi (2, high) preempts nb-1 (low) in alpha's queue; both are gone, hi runs to 30m.
    - 25m: pod nb-3 (2, low) finds no room and nothing it may preempt: it waits until 30m,
      when train, b-1 and hi end (300 s), and runs to 40m.
    """
    on_fast = both_engines("pods", tmp_path, PODS, PODS / "mix")
    assert on_fast == {
        "pods-alpha/nb-1": ("preempted", None, 0),
        "pods-alpha/train": ("finished", "pods-gpu", 0),
        "pods-alpha/nb-2": ("preempted", None, 0),
        "pods-beta/b-1": ("finished", "pods-gpu", 0),
        "pods-alpha/hi": ("finished", "pods-gpu", 0),
        "pods-alpha/nb-3": ("finished", "pods-gpu", 300),
    }
