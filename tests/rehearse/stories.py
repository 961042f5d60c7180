"""The story of a hand-worked case (tests/rehearse/causes/<case>/: a small stack and mix) on the
what-if's two engines: the fast one, and a fresh sandbox with the real Kueue, kube-scheduler and
the integrations' own controllers; each workload's steps (admitted with its flavor, ran with its
pods' nodes, evicted with the reason, stopped), held to the story worked out by hand and to each
other (gpu_queues.whatif.agreement). The causes of their parting are told in two modules, each a
suite of its own (tests/suites.py): test_engine_causes.py (Kueue's scheduling: quotas, cohorts,
preemption, fair sharing, stop policies, topology, the scheduler's ties) and
test_integration_causes.py (Kueue's integrations: JobSet, LWS, pod groups, KubeRay, the Kubeflow
jobs, serving workloads).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.pins import kueue_version
from gpu_queues.whatif import agreement, fast
from gpu_queues.whatif.changes import changed_over
from gpu_queues.whatif.report import Run
from sandbox.crosscheck.run import placement_order

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).parent / "causes"
TIMEOUT = 900
Story = dict[str, list[tuple[float, str, str]]]


def stack_text(case: str) -> str:
    """The case's stack file, on the pinned Kueue release."""
    text = (CASES / case / "stack.yaml").read_text()
    if "\n  gpu-queues:kueue:\n" in text:  # the case sets the manager: the version joins it
        return text.replace(
            "\n  gpu-queues:kueue:\n", f"\n  gpu-queues:kueue:\n    version: {kueue_version()}\n", 1
        )
    return text.replace(
        "config:\n", f"config:\n  gpu-queues:kueue: {{version: {kueue_version()}}}\n", 1
    )


def stories(
    case: str, tmp_path: Path, changed: Sequence[tuple[float, str]] = ()
) -> tuple[Run, Run]:
    """(sandbox run, fast run) of the case, the stack named after it; `changed`: the stack's
    changes mid-replay, (second, the stack file's text from then on) each, as `--change`."""
    stack = f"cause-{case}"
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(stack_text(case))
    mix = CASES / case / "mix.yaml"
    out = tmp_path / "out"
    command = [sys.executable, "-m", "sandbox.replay.cli", "--stack", stack, "--root",
               str(tmp_path), "--workloads", str(mix), "--engine", "sandbox",
               "--out", str(out)]  # fmt: skip
    read = []
    for i, (at, text) in enumerate(changed):
        path = tmp_path / f"change-{i}.yaml"
        path.write_text(text)
        command += ["--change", f"{at:g}s={path}"]
        read.append((at, str(path), load_config(parse_config(text, path.name))))
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    real = Run.from_json(json.loads((out / "work" / "new" / "run.json").read_text()))
    config = load_config(parse_config(stack_text(case), stack))
    # As the randomized cross-check does: the sandbox's Workload UIDs (Kueue's last tie-break)
    # and the order its watch saw the admissions of one cycle in (Kueue writes them on
    # goroutines of their own, so which job's pods reach the scheduler first is the runtime's).
    uids = {(w.namespace, w.name): w.workload_uid for w in real.workloads if w.workload_uid}
    quick = fast.replay_mix(
        config, mix, stack=stack, label=stack, workload_uids=uids,
        placement_order=placement_order(real), changes=changed_over(config, read),
    )  # fmt: skip
    return real, quick


def told(run: Run) -> Story:
    """Each workload's steps, the ends of its runs among them, in time order."""
    out: Story = {}
    for w in run.workloads:
        steps = [(float(at), what, detail) for at, what, detail in w.timeline]
        steps += [(float(end), "stopped", "") for _, end in w.intervals if end is not None]
        out[w.name] = sorted(steps, key=lambda s: s[0])
    return out


def same_story(
    case: str, tmp_path: Path, want: Story, changed: Sequence[tuple[float, str]] = ()
) -> Run:
    real, quick = stories(case, tmp_path, changed)
    assert told(quick) == want, "the fast engine tells another story than the hand-worked one"
    assert agreement.explain(real, quick, ("sandbox", "fast")) == ""
    return real
