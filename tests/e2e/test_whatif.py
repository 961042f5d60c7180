"""The what-if replay on the real Kueue and kube-scheduler, on a mix whose outcome is worked
out by hand below; then `gpuq status` reads the cluster the replay left and must tell the
same story in the same format.

The stack (stacks/Pulumi.local-whatif.yaml) shares the sandbox's node (8 GPUs, 64 cpu) in
cohort wi-pool: alpha has 4 GPUs and may borrow 2; beta has 4 and never borrows; gamma has
CPU only (100 of the 128 cpu its flavor declares, more than the node has). Priorities:
wi-low 10, wi-normal 100, wi-high 1000; a job without one has 0. The mix (whatif/mix):

  0     a-train  alpha 4 GPU normal    admitted (alpha's own 4)
  0     a-sweep  alpha 2 GPU low       admitted, borrowing 2 of beta's idle GPUs
  10m   b-train  beta 4 GPU, 1h        beta reclaims: Kueue preempts the borrower's lowest
                                       priority workload, a-sweep (InCohortReclamation);
                                       b-train admitted at once
  20m   b-small  beta 1 GPU            beta is at its 4 and may not borrow: waits
  25m   b-big    beta 5 GPU            more than beta may ever use: waits for good
  30m   a-urgent alpha 2 GPU high      alpha is at its 4, nothing to borrow: Kueue preempts
                                       the lower a-train inside alpha (InClusterQueue);
                                       then a-sweep fits alpha's nominal again: readmitted
  40m   g-big    gamma 96 cpu          within gamma's quota, bigger than any node: admitted,
                                       never scheduled
  1h10m b-train ends                   beta is free: b-small admitted (waited 50m); a-train
                                       (normal) now fits by borrowing 2 if a-sweep (low)
                                       goes: Kueue preempts a-sweep again, a-train readmitted
The replay ends there. GPU-hours: a-train 4 x 30m, a-sweep 2 x (10m + 40m), a-urgent
2 x 40m: alpha 5.0; beta: b-train 4 x 1h = 4.0. Mistakes in the mix are rows of their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.kueue.client import file_client
from gpu_queues.tools import status
from gpu_queues.whatif import fast
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import Run
from gpu_queues.whatif.workloads import Rest
from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG
from sandbox.replay.engine import replay_mix
from sandbox.shape import load_stack
from sandbox.walkthrough import KubeSession
from tests.e2e.deployments import Deployments

pytestmark = pytest.mark.e2e

STACK = "local-whatif"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
MIX = Path(__file__).parent / "whatif" / "mix"
NAMESPACES = ("wi-alpha", "wi-beta", "wi-gamma")

# name: (outcome, flavor, wait in simulated seconds)
EXPECTED = {
    "a-train": ("admitted", "wi-gpu", 0),
    "a-sweep": ("preempted", None, 0),
    "a-urgent": ("admitted", "wi-gpu", 0),
    "b-train": ("finished", "wi-gpu", 0),
    "b-small": ("admitted", "wi-gpu", 3000),
    "b-big": ("pending", None, None),
    "g-big": ("unschedulable", "wi-gpu", 0),
    "stray": ("invalid", None, None),
    "wrong-queue": ("invalid", None, None),
    "bad-duration": ("invalid", None, None),
    "bad-priority": ("invalid", None, None),
    "g-jobset": ("invalid", None, None),  # spec.replicatedJobs: must not be empty
    "settings": ("unsupported", None, None),
}


def _wipe(k: KubeSession) -> None:
    for ns in NAMESPACES:
        for j in k.batch.list_namespaced_job(ns).items:
            k.delete_job(j.metadata.name, ns)
        k.wait(f"no workloads in {ns}", lambda n=ns: not k.workloads(n), namespace=ns, timeout=90)


@pytest.fixture(scope="module")
def replayed(cluster: KubeSession, stacks: Deployments) -> Iterator[Run]:
    """The mix replayed on the stack (which stays deployed, as every stack of the session
    does); no job of it left afterwards."""
    done = stacks.up(STACK, source=SOURCE)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield replay_mix(load_stack(SOURCE), MIX, stack=STACK, label=STACK)
    finally:
        _wipe(cluster)


def test_the_replay_shows_the_outcomes_worked_out_by_hand(replayed: Run) -> None:
    got = {w.name: (w.outcome, w.flavor, w.wait_seconds) for w in replayed.workloads}
    assert got == EXPECTED, render(replayed, None)
    by = {w.name: w for w in replayed.workloads}
    # Kueue's own words: the reclaim, the preemption by priority, the holds, the scheduler.
    assert (by["a-sweep"].message or "").startswith("evicted 2x, last: Preempted (InClusterQueue)")
    assert "now: couldn't assign flavors to pod set main" in (by["a-sweep"].message or "")
    assert by["a-sweep"].preemptions == 2
    assert (by["a-train"].message or "").startswith("evicted 1x, last: Preempted (InClusterQueue)")
    assert (by["b-big"].message or "").startswith(
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
        "flavor wi-gpu"
    )
    assert "Insufficient cpu" in (by["g-big"].message or "")
    assert "namespace nobody: no team owns it" in (by["stray"].message or "")
    assert "queue gpu-queue does not exist in namespace wi-alpha" in (
        by["wrong-queue"].message or ""
    )
    assert "'soon' is not a duration" in (by["bad-duration"].message or "")
    assert "priority class urgent is not declared" in (by["bad-priority"].message or "")
    teams = {t.team: t for t in replayed.teams}
    assert (teams["alpha"].admitted, teams["alpha"].pending) == (2, 1)
    assert (teams["beta"].admitted, teams["beta"].pending) == (2, 1)
    assert (teams["gamma"].admitted, teams["gamma"].pending) == (1, 0)
    assert teams["alpha"].gpu_hours == pytest.approx(5.0)
    assert teams["beta"].gpu_hours == pytest.approx(4.0)
    assert teams["gamma"].gpu_hours == 0
    assert (teams["alpha"].wait_p50, teams["alpha"].wait_p90) == (0, 0)
    # beta waited 0 (b-train), 50m (b-small) and forever (b-big).
    assert (teams["beta"].wait_p50, teams["beta"].wait_p90) == (3000, None)
    assert replayed.meta.simulated_seconds == 4200
    assert replayed.meta.longest_silence_seconds < replayed.meta.quiet_seconds
    md = render(replayed, None)
    assert "| alpha | wi-alpha-cq | 2 | 1 | 5.0 | 0s | 0s |" in md
    assert "| beta | wi-beta-cq | 2 | 1 | 4.0 | 50m | not admitted |" in md


def test_the_replay_records_each_run_of_a_workload_for_the_charts(replayed: Run) -> None:
    """The runs (WorkloadResult.intervals) of the story above: a-sweep reclaimed at 10m and
    readmitted at 30m, a-train preempted at 30m and readmitted at 1h10m, when b-train ends
    and b-small gets in; what is still running at the end has no end."""
    runs = {w.name: w.intervals for w in replayed.workloads if w.intervals}
    assert runs == {
        "a-train": [(0, 1800), (4200, None)],
        "a-sweep": [(0, 600), (1800, 4200)],
        "b-train": [(600, 4200)],
        "a-urgent": [(1800, None)],
        "b-small": [(4200, None)],
    }
    end = replayed.meta.simulated_seconds
    for w in replayed.workloads:  # the runs sum to the GPU time counted
        ran = sum((e if e is not None else end) - s for s, e in w.intervals)
        assert ran == pytest.approx(w.gpu_seconds), w.name


def test_status_reads_the_same_story_from_the_live_cluster(replayed: Run) -> None:
    rest = Rest(file_client(KUBECONFIG))
    teams = [(t.team, t.cluster_queue) for t in replayed.teams]
    live = status.read_status(rest, teams, datetime.now(UTC).timestamp(), "sandbox")
    predicted = {w.name: w.outcome for w in replayed.workloads if w.team}
    predicted = {n: o for n, o in predicted.items() if o not in ("invalid", "unsupported")}
    assert {w.name: w.outcome for w in live.workloads} == predicted
    assert [(t.team, t.admitted, t.pending) for t in live.teams] == [
        (t.team, t.admitted, t.pending) for t in replayed.teams
    ]
    by = {w.name: w for w in live.workloads}
    # The visibility API: a-sweep waits first in alpha's queues, b-big first in beta's.
    assert (by["a-sweep"].message or "").startswith(
        "position 0 in ClusterQueue wi-alpha-cq, 0 in LocalQueue alpha-queue; Preempted"
    )
    assert (by["b-big"].message or "").startswith(
        "position 0 in ClusterQueue wi-beta-cq, 0 in LocalQueue beta-queue; couldn't assign"
    )
    assert "Insufficient cpu" in (by["g-big"].message or "")
    assert by["a-train"].flavor == "wi-gpu" and by["a-train"].gpus == 4


def test_status_command_reads_the_stacks_own_kubeconfig(replayed: Run) -> None:
    # The stack's kubeconfig is a secret in the sandbox's shadow project; the command reads it
    # through the Pulumi CLI, as it would read a real stack's.
    done = subprocess.run(
        [sys.executable, "-m", "gpu_queues.tools.status", "--stack", STACK, "--project",
        str(stack.SHADOW),
         "--json"],
        capture_output=True, text=True, check=False, env={**stack.environment(), "KUBECONFIG": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"workloads", "teams"}
    assert [(t["team"], t["admitted"], t["pending"]) for t in data["teams"]] == [
        (t.team, t.admitted, t.pending) for t in replayed.teams
    ]
    assert "BEGIN" not in done.stdout + done.stderr  # no key material in what it prints


def test_the_fast_engine_tells_the_same_story_as_the_sandbox(replayed: Run) -> None:
    """The cross-check of the two engines (docs/what-if.md, Engines): the same stack and mix,
    replayed on the fast engine (the same Kueue release's code on a simulated clock) with the
    nodes this sandbox really has, give every workload the same outcome, flavor, wait and
    preemptions, every run the same intervals, and every team the same figures."""
    rest = Rest(file_client(KUBECONFIG))
    nodes = [
        {k: n[k] for k in ("apiVersion", "kind", "metadata", "spec", "status") if k in n}
        for n in rest.get("/api/v1/nodes")["items"]
    ]
    for n in nodes:
        n.setdefault("apiVersion", "v1")
        n.setdefault("kind", "Node")
    quick = fast.replay_mix(load_stack(SOURCE), MIX, stack=STACK, label=STACK, nodes=nodes)

    def story(run: Run) -> list[tuple[Any, ...]]:
        return [
            (w.name, w.outcome, w.flavor, w.wait_seconds, w.preemptions, w.intervals)
            for w in run.workloads
        ]

    assert story(quick) == story(replayed), render(quick, None)
    assert [
        (t.team, t.admitted, t.pending, t.gpu_hours, t.wait_p50, t.wait_p90) for t in quick.teams
    ] == [
        (t.team, t.admitted, t.pending, t.gpu_hours, t.wait_p50, t.wait_p90) for t in replayed.teams
    ]
    assert quick.meta.simulated_seconds == replayed.meta.simulated_seconds
    assert quick.meta.engine == "fast" and replayed.meta.engine == "sandbox"
