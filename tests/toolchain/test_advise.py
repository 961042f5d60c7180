"""The quota advisor (make advise, gpu_queues/advise) on the real fast engine: a small stack and
mix whose best answer is worked out by hand below, through the whole command.

One flavor `gpu`, one node of 8 GPUs, cohort `pool`. `starved` holds 2 GPUs of nominal quota
and may borrow; `idle` holds 6 and lends none (lendingLimit 0). At 0 s idle submits one job of
2 GPUs, then starved four, each running 1 h. Today starved runs one job at a time: its waits
are 0, 1 h, 2 h, 3 h (p90 3 h) while 4 of idle's GPUs sit idle; idle's job waits 0 s.

The best any setting can do: at 0 s the node holds four 2-GPU jobs, idle's (whose wait must
stay 0: a p90 of 0 s may not get worse at all) and three of starved's; starved's fourth starts
when they end, at 1 h. So after: starved 0, 0, 0, 1 h (p90 1 h), idle 0.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.advise.cli import main
from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.quantity import parse_quantity
from sandbox.paths import ROOT
from tests.builders import Job, Mix

pytestmark = pytest.mark.toolchain

HOUR = 3600
STACK = """\
# A stack written for this test: one GPU node shared by two teams.
config:
  gpu-queues:flavors:
  - name: gpu
    nodes:   # one node of 8 GPUs
      count: 1
      resources: {cpu: 64, memory: 256Gi, nvidia.com/gpu: 8}
  gpu-queues:cohort: {name: pool}
  gpu-queues:teams:
  - name: idle
    namespace: team-idle
    clusterQueue: idle-cq
    localQueue: gpu-queue
    cohort: pool
    resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
      - name: gpu
        resources:
          cpu: {nominalQuota: 32}
          memory: {nominalQuota: 128Gi}
          nvidia.com/gpu: {nominalQuota: 6, lendingLimit: 0}   # keeps its GPUs to itself
  - name: starved
    namespace: team-starved
    clusterQueue: starved-cq
    localQueue: gpu-queue
    cohort: pool
    resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
      - name: gpu
        resources:
          cpu: {nominalQuota: 32}
          memory: {nominalQuota: 128Gi}
          nvidia.com/gpu: {nominalQuota: 2}
"""


def job(name: str, team: str) -> Job:
    """2 GPUs for 1 h, submitted at 0 s."""
    return (
        Job(name, f"team-{team}").queue("gpu-queue").submit_at("0s").duration("1h")
        .image("busybox").requests(cpu="1", memory="1Gi", gpu="2").limits(gpu="2")
    )  # fmt: skip


def waits(run: dict[str, Any]) -> dict[str, int | None]:
    return {w["name"]: w["waitSeconds"] for w in run["workloads"]}


def test_the_advisor_gives_the_starved_team_what_the_idle_one_keeps(tmp_path: Path) -> None:
    (tmp_path / "toolchain").mkdir()
    shutil.copyfile(ROOT / "toolchain" / "pins.env", tmp_path / "toolchain" / "pins.env")
    (tmp_path / "Pulumi.small.yaml").write_text(STACK)
    jobs = [job("i1", "idle")] + [job(f"s{i}", "starved") for i in range(1, 5)]
    mix = Mix(*jobs).write(tmp_path / "mix.yaml")
    out = tmp_path / "out"
    args = ["--stack", "small", "--root", str(tmp_path), "--workloads", str(mix)]
    assert main([*args, "--out", str(out), "--budget", "600"]) == 0

    advice = json.loads((out / "advice.json").read_text())
    assert set(advice) == {"before", "after", "changes", "replays"}
    assert waits(advice["before"]) == {"i1": 0, "s1": 0, "s2": HOUR, "s3": 2 * HOUR, "s4": 3 * HOUR}
    assert waits(advice["after"]) == {"i1": 0, "s1": 0, "s2": 0, "s3": 0, "s4": HOUR}
    assert advice["replays"] >= 2 and advice["changes"]

    proposal = (out / "Pulumi.small.yaml").read_text()
    config = load_config(parse_config(proposal, "proposal"))  # the program's validation
    gpus = [
        int(parse_quantity(f.resources["nvidia.com/gpu"].nominal_quota))
        for t in config.teams
        for g in t.resource_groups
        for f in g.flavors
    ]
    assert sum(gpus) <= 8  # never above the node
    # Only the GPU lines of the two teams change; comments and layout are kept.
    changed = {
        (a, b) for a, b in zip(STACK.splitlines(), proposal.splitlines(), strict=True) if a != b
    }
    assert changed and all(
        "nvidia.com/gpu: {" in a and "nvidia.com/gpu: {" in b for a, b in changed
    )
    assert "# keeps its GPUs to itself" in proposal and proposal.startswith("# A stack written")
    md = (out / "advice.md").read_text()
    assert "policy pack: passed" in md and "config validation: passed" in md
    assert "pulumi preview: not run" in md  # no stack `small` in this checkout's backend


def test_a_goal_beyond_the_hardware_says_so_and_gives_the_best_found(tmp_path: Path) -> None:
    """`starved max < 30m` needs all four of its jobs at 0 s: 8 GPUs, and idle's job needs 2
    of the same 8. The best found is the one above (starved's max 1 h); exit 3."""
    (tmp_path / "toolchain").mkdir()
    shutil.copyfile(ROOT / "toolchain" / "pins.env", tmp_path / "toolchain" / "pins.env")
    (tmp_path / "Pulumi.small.yaml").write_text(STACK)
    jobs = [job("i1", "idle")] + [job(f"s{i}", "starved") for i in range(1, 5)]
    mix = Mix(*jobs).write(tmp_path / "mix.yaml")
    out = tmp_path / "out"
    args = ["--stack", "small", "--root", str(tmp_path), "--workloads", str(mix), "--out", str(out)]
    goal = "starved max < 30m and idle max < 30m"
    assert main([*args, "--goal", goal, "--budget", "600"]) == 3
    advice = json.loads((out / "advice.json").read_text())
    assert waits(advice["after"]) == {"i1": 0, "s1": 0, "s2": 0, "s3": 0, "s4": HOUR}
    assert (
        "No setting within the hardware the stack declares meets the goal"
        in (out / "advice.md").read_text()
    )
