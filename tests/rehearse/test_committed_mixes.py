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

import pytest

from sandbox.replay import fast
from sandbox.shape import load_stack

pytestmark = pytest.mark.rehearse

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 1800


def story(workloads: list[dict[str, object]]) -> dict[str, tuple[object, ...]]:
    return {
        f"{w['namespace']}/{w['name']}": (w["outcome"], w["flavor"], w["waitSeconds"])
        for w in workloads
    }


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_committed_mix_replays_the_same_on_both_engines(stack: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        ["make", "--no-print-directory", "what-if", f"STACK={stack}", "ENGINE=sandbox",
         f"OUT={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())["new"]
    replayed = json.loads((out / "replay.json").read_text())["new"]
    assert replayed["engine"] == "sandbox"
    on_sandbox = story(report["workloads"])
    config = load_stack(ROOT / f"Pulumi.{stack}.yaml")
    quick = fast.replay_mix(config, ROOT / "workloads" / stack, stack=stack, label=stack)
    on_fast = story([w.public() for w in quick.workloads])
    assert len(on_sandbox) >= 20  # the whole committed mix, not a stub
    assert list(on_fast) == list(on_sandbox)
    differ = {k: (on_sandbox[k], on_fast[k]) for k in on_sandbox if on_sandbox[k] != on_fast[k]}
    assert not differ, f"sandbox vs fast, (outcome, flavor, wait): {differ}"
