"""The fast what-if engine (toolchain/go/whatif on the pinned Kueue's own code) against truths
worked out without it: each expected wait comes from the order of the mix alone, from a tiny
queue model written here, or by hand in the test's docstring. Exact to the second.

The engine must be built (`make toolchain`); the stacks and mixes are made here, so nothing
depends on a committed stack's numbers.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.stackfile import parse_config, read_config
from gpu_queues.release.module import ROOT
from gpu_queues.whatif import engine_input, fast
from gpu_queues.whatif.changes import changed_over
from gpu_queues.whatif.engine_input import frameworks
from gpu_queues.whatif.mix import Catalog, load_mix
from gpu_queues.whatif.report import Run, WorkloadResult, report_json
from tests.builders import (
    Flavor,
    Job,
    JobSet,
    KubeflowJob,
    Mix,
    MPIJob,
    Node,
    Pod,
    PyTorchJob,
    RayCluster,
    RayJob,
    Stack,
    Team,
)
from tests.rehearse.stories import CASES, stack_text

pytestmark = pytest.mark.toolchain

NS = "team-{}"
R = TypeVar("R", Job, Pod)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # the engine's simulated second 0 (sim.go)


def queued(built: R, gpus: int, at: int, runs: int | None, priority: str | None) -> R:
    """In its team's queue, submitted `at` seconds in, running `runs` seconds (for ever without),
    one container of `gpus` GPUs."""
    built.queue("gpu-queue")
    if priority:
        built.priority_class(priority)
    built.submit_at(at)
    if runs is not None:
        built.duration(runs)
    gpu = str(gpus)
    return built.image("busybox").requests(cpu="100m", memory="128Mi", gpu=gpu).limits(gpu=gpu)


def job(
    name: str,
    team: str,
    gpus: int,
    *,
    at: int = 0,
    runs: int | None = None,
    priority: str | None = None,
    pods: int = 1,
) -> Job:
    built = Job(name, NS.format(team)).parallelism(pods).completions(pods)
    return queued(built, gpus, at, runs, priority)


def pod(
    name: str,
    team: str,
    gpus: int,
    *,
    at: int = 0,
    runs: int | None = None,
    priority: str | None = None,
) -> Pod:
    """A plain Pod (Kueue's pod integration) with job()'s labels, annotations and pod spec."""
    return queued(Pod(name, NS.format(team)), gpus, at, runs, priority)


def replay(
    stack: Stack,
    jobs: Sequence[
        Job | Pod | JobSet | PyTorchJob | RayJob | MPIJob | KubeflowJob | dict[str, Any]
    ],
    tmp: Path,
    **kw: Any,
) -> Run:
    config: StackConfig = load_config(stack.raw())
    mix = Mix(*jobs).write(tmp / "mix.yaml")
    return fast.replay_mix(config, mix, stack="truth", label="truth", **kw)


def by_name(run: Run) -> Mapping[str, Any]:
    return {w.name: w for w in run.workloads}


def replayed_seed(seed: int, tmp_path: Path) -> Run:
    """The cross-check's generated stack and mix of `seed` (sandbox/crosscheck/generate.py) on
    the fast engine alone, to be held to the figures of that seed's sandbox run."""
    from gpu_queues.config.model import load_config
    from gpu_queues.config.stackfile import parse_config
    from sandbox.crosscheck.generate import generate

    case = generate(seed)
    mix = tmp_path / "mix.yaml"
    mix.write_text(case.mix_text)
    config = load_config(parse_config(case.stack_text, case.stack))
    return fast.replay_mix(config, mix, stack=case.stack, label=f"seed {seed}")


def waits(run: Run) -> dict[str, float | None]:
    return {w.name: w.wait_seconds for w in run.workloads}


def one_queue(strategy: str, gpus: int = 8) -> Stack:
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=gpus)
    team.set(queueingStrategy=strategy)
    return Stack().flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=gpus)).team(team)


def fifo_model(
    jobs: list[tuple[str, int, int, int]], capacity: int, strict: bool
) -> dict[str, float]:
    """A queue of one ClusterQueue whose quota is the hardware: (name, gpus, submit, duration)
    in mix order. At every instant the jobs that end free their GPUs first; then the waiting
    jobs are taken in order, each admitted if it fits; StrictFIFO stops at the first that does
    not, BestEffortFIFO goes on past it."""
    free, waiting, running = capacity, [], []  # running: (end, gpus)
    started: dict[str, float] = {}
    times = sorted({s for _, _, s, _ in jobs})
    submitted = 0
    now = 0
    while submitted < len(jobs) or waiting:
        later = [t for t in times if t > now]
        free += sum(g for end, g in running if end <= now)
        running = [r for r in running if r[0] > now]
        while submitted < len(jobs) and jobs[submitted][2] <= now:
            waiting.append(jobs[submitted])
            submitted += 1
        still = []
        blocked = False
        for name, g, _s, d in waiting:
            if not blocked and g <= free:
                free -= g
                started[name] = now
                running.append((now + d, g))
            else:
                still.append((name, g, _s, d))
                blocked = blocked or strict
        waiting = still
        nxt = [t for t in later if t > now] + [e for e, _ in running if e > now]
        if not nxt:
            break
        now = min(nxt)
    return {name: started[name] - s for name, _, s, _ in jobs if name in started}


def random_fifo_mix(seed: int) -> list[tuple[str, int, int, int]]:
    rng = random.Random(seed)
    at = 0
    out = []
    for i in range(14):
        at += rng.choice([0, 0, 5, 30, 120])
        out.append((f"j{i:02d}", rng.choice([1, 2, 4, 6, 8]), at, rng.choice([60, 300, 900])))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("strategy", ["StrictFIFO", "BestEffortFIFO"])
def test_one_queue_waits_follow_from_the_order_alone(
    strategy: str, seed: int, tmp_path: Path
) -> None:
    mix = random_fifo_mix(seed)
    jobs = [job(n, "a", g, at=s, runs=d) for n, g, s, d in mix]
    run = replay(one_queue(strategy), jobs, tmp_path)
    expected = fifo_model(mix, 8, strict=strategy == "StrictFIFO")
    assert waits(run) == {n: expected.get(n) for n, *_ in mix}
    assert all(w.outcome == "finished" for w in run.workloads), [w.outcome for w in run.workloads]


def test_best_effort_lets_a_small_job_pass_a_blocked_big_one(tmp_path: Path) -> None:
    """8 GPUs. big-a (6) runs 0-100 s; big-b (4, at 1 s) cannot fit beside it; small (2, at
    2 s) fits the 2 left. BestEffortFIFO: small starts at 2 s (wait 0) and big-b at 100 s (wait
    99). StrictFIFO: small waits behind big-b, both start at 100 s (wait 98)."""
    jobs = [
        job("big-a", "a", 6, at=0, runs=100),
        job("big-b", "a", 4, at=1, runs=100),
        job("small", "a", 2, at=2, runs=50),
    ]
    best = replay(one_queue("BestEffortFIFO"), jobs, tmp_path)
    assert waits(best) == {"big-a": 0, "big-b": 99, "small": 0}
    strict = replay(one_queue("StrictFIFO"), jobs, tmp_path)
    assert waits(strict) == {"big-a": 0, "big-b": 99, "small": 98}


def cohort_pair(preempt: Mapping[str, str], lend: int | None = None) -> Stack:
    flavor = Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=8)
    teams = []
    for name in ("a", "b"):
        t = Team(name).namespace(NS.format(name)).cohort("pool")
        t.quota("gpu", cpu=32, memory="256Gi", gpu=4).borrowing("gpu", gpu=4)
        t.set(preemption=dict(preempt))
        teams.append(t)
    if lend is not None:
        teams[0].lending("gpu", gpu=lend)
    return Stack().flavor(flavor).cohort("pool").team(*teams)


def test_borrowing_from_an_idle_team_and_reclaim_when_it_returns(tmp_path: Path) -> None:
    """a and b have 4 GPUs each in one cohort. a's 8-GPU job borrows b's idle 4 at 0 s; at
    600 s b asks for its 4: Kueue reclaims them (InCohortReclamation), b waits 0 s, and a's
    job waits again."""
    stack = cohort_pair({"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"})
    jobs = [job("a-wide", "a", 8, at=0), job("b-own", "b", 4, at=600, runs=300)]
    run = by_name(replay(stack, jobs, tmp_path))
    assert run["a-wide"].wait_seconds == 0
    assert run["b-own"].wait_seconds == 0
    assert run["b-own"].outcome == "finished"
    # b-own ends at 900 s: a-wide borrows again then, and runs to the end.
    assert run["a-wide"].outcome == "admitted"
    assert run["a-wide"].preemptions == 1
    assert "InCohortReclamation" in (run["a-wide"].message or "")
    assert run["a-wide"].gpu_seconds == 600 + 0  # ran 0-600 s; readmitted at the last event


def test_priority_preemption_inside_a_cluster_queue(tmp_path: Path) -> None:
    """One queue of 4 GPUs that preempts lower priorities. low (4) runs from 0 s; high (4) at
    60 s preempts it at once (wait 0) and runs 120 s; low is readmitted at 180 s, having
    waited 0 s for its first admission."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=4))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
    )
    jobs = [
        job("low", "a", 4, at=0, runs=600, priority="low"),
        job("high", "a", 4, at=60, runs=120, priority="high"),
    ]
    run = by_name(replay(stack, jobs, tmp_path))
    assert (run["high"].outcome, run["high"].wait_seconds) == ("finished", 0)
    assert run["low"].preemptions == 1
    assert "InClusterQueue" in (run["low"].message or "")
    # low ran 0-60 s, then again from 180 s for its full 600 s: finished at 780 s.
    assert run["low"].outcome == "finished"
    assert run["low"].gpu_seconds == 60 + 600


@pytest.mark.parametrize(("lend", "fits"), [(None, True), (3, True), (1, False)])
def test_a_lending_limit_caps_what_a_team_lends(
    lend: int | None, fits: bool, tmp_path: Path
) -> None:
    """b may borrow up to 4, and asks for 7 (its 4 + 3 of a's idle 4). a lends all of them
    when it sets no lendingLimit, 3 with lendingLimit 3, only 1 with lendingLimit 1: then
    b's job never fits."""
    stack = cohort_pair({"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}, lend)
    run = by_name(replay(stack, [job("b-big", "b", 7, at=0, runs=60)], tmp_path))
    if fits:
        assert (run["b-big"].outcome, run["b-big"].wait_seconds) == ("finished", 0)
    else:
        assert run["b-big"].outcome == "pending"
        assert "insufficient" in (run["b-big"].message or "")


def test_pods_that_fit_no_node_start_when_a_pod_on_their_node_ends(tmp_path: Path) -> None:
    """Quota is not placement: two nodes of 8 GPUs and a queue of 16. a and b (4 GPUs each,
    at 0 s) go to different nodes (least allocated first), so at 10 s wide (8 GPUs) is
    admitted at once but fits neither node (16 cpu each: half a node's). When a ends at 100 s
    its node is free and wide runs, 100-150 s, as kube-scheduler retries a pod when another
    pod leaves a node. (The engine once never tried such a pod again.)"""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=16)
    stack = Stack().flavor(Flavor("gpu").nodes(2, cpu=32, memory="256Gi", gpu=8)).team(team)
    # a and b take half a node's cpu each: the scheduler's scores tell the nodes apart
    jobs = [job("a", "a", 4, at=0, runs=100).requests(cpu="16"),
            job("b", "a", 4, at=0, runs=1000).requests(cpu="16"),
            job("wide", "a", 8, at=10, runs=50)]  # fmt: skip
    run = by_name(replay(stack, jobs, tmp_path))
    assert run["wide"].wait_seconds == 0
    assert run["wide"].intervals == [(100, 150)]
    assert run["wide"].outcome == "finished"
    assert run["b"].intervals == [(0, 1000)]


def test_a_waiting_pod_takes_the_first_node_a_multi_pod_job_frees(tmp_path: Path) -> None:
    """A job's pods end one at a time, in their nodes' name order, and the waiting pods are
    tried on each end (kube-scheduler retries them on every pod deletion): the waiting pod
    takes the first node freed, not the one it would score best with the whole job gone.
    Three nodes of 8 GPUs and 8 cpu, quota for all: c (1 cpu, no GPU) at 0 s on n-0, the first
    of equals; s (7 cpu) at 1 s on n-1; m (2 pods of 8 GPUs) at 2 s on n-2 (empty) and n-0;
    big (8 GPUs) at 3 s is admitted but fits no node. At 100 s m ends, n-0's pod first: big
    runs there (n-2, emptier, had both ended at once), 100-150 s. (The engine freed a job's
    nodes all at once until 5 December 2026; cross-check seed 35 parted so.)"""
    team = Team("a").namespace(NS.format("a")).quota("n", cpu=24, memory="96Gi", gpu=24)
    flavor = Flavor("n").labels({"pool": "n"}).nodes(3, cpu=8, memory="32Gi", gpu=8)
    stack = Stack().flavor(flavor).team(team)
    jobs = [job("c", "a", 0, at=0, runs=1000).requests(cpu="1"),
            job("s", "a", 0, at=1, runs=1000).requests(cpu="7"),
            job("m", "a", 8, at=2, runs=98, pods=2).requests(cpu="2"),
            job("big", "a", 8, at=3, runs=50).requests(cpu="2")]  # fmt: skip
    run = by_name(replay(stack, jobs, tmp_path))
    ran = {name: [s for s in run[name].timeline if s[1] == "ran"] for name in run}
    assert ran["c"] == [(0, "ran", "n-0")] and ran["s"] == [(1, "ran", "n-1")]
    assert ran["m"] == [(2, "ran", "n-0, n-2")]
    assert ran["big"] == [(100, "ran", "n-0")]
    assert run["big"].intervals == [(100, 150)]


def test_a_cohort_tree_lends_a_divisions_quota_only_as_its_lending_limit_says() -> None:
    """Worked out by hand (the tree case's stack): research holds 8 GPUs of its own and lends
    none out of the division; llm (research) and ads (product) have 8 each and may borrow 8.
    a1 (llm) and b1 (ads) run at 0 s on their own quota; b2 (ads, through its second
    namespace's LocalQueue) at 60 s finds nothing it may borrow and waits for b1's end (600 s);
    a2 (llm) at 120 s borrows its division's 8; a3 at 180 s is past llm's borrowing limit and
    waits for a2's end (1320 s). The held team's c1 is never admitted. With research lending
    its quota, b2 borrows it at once (60 s), and a2 waits until b1 ends (600 s): ads then uses no
    more than its own 8 and research's 8 are idle again."""
    run = case_run("tree")
    admitted = {n: [t for t, what, _ in w.timeline if what == "admitted"] for n, w in run.items()}
    assert admitted == {"a1": [0], "b1": [0], "b2": [600], "a2": [120], "a3": [1320], "c1": []}
    assert run["c1"].outcome == "pending" and "inactive" in (run["c1"].message or "")
    lends = case_run("tree", lambda text: text.replace(", lendingLimit: 0}", "}"))
    admitted = {n: [t for t, what, _ in w.timeline if what == "admitted"] for n, w in lends.items()}
    assert admitted["b2"] == [60] and admitted["a2"] == [600]


def case_run(
    case: str,
    edit: Callable[[str], str] = lambda text: text,
    changed: Sequence[tuple[float, str]] = (),
) -> Mapping[str, Any]:
    """A case of tests/rehearse/causes on the fast engine, its stack edited; `changed`: the
    stack's changes mid-replay, (second, the stack file's text from then on) each."""
    config = load_config(parse_config(edit(stack_text(case)), f"cause-{case}"))
    read = [
        (at, f"change-{i}", load_config(parse_config(text, f"change-{i}")))
        for i, (at, text) in enumerate(changed)
    ]
    run = fast.replay_mix(
        config, CASES / case / "mix.yaml", stack=f"cause-{case}", label=case,
        changes=changed_over(config, read),
    )  # fmt: skip
    return by_name(run)


def admitted_at(run: Mapping[str, Any], at: float) -> list[str]:
    return sorted(
        n for n, w in run.items() if any(t == at and e == "admitted" for t, e, _ in w.timeline)
    )


def test_fair_sharing_weights_give_the_heavier_team_twice_the_borrowed_gpus() -> None:
    """Worked out by hand from Kueue's fair sharing (the weights case: 12 GPUs of the cohort's,
    none of the teams'; preemption strategies LessThanOrEqualToFinalShare, then
    LessThanInitialShare). light fills the 12 at 0 s. At 1 m heavy (weight 2) asks for 10: its
    head may preempt while heavy's share after admitting it, (k+1)/2, is at most light's after
    losing one, 12-k-1: k <= 7, so heavy gets 8 and light keeps 4, 2:1 as the weights say,
    light's most recently admitted evicted (l04-l11, InCohortFairSharing). At 1h1m heavy's 8
    end: one head per ClusterQueue per cycle, h08 and h09 beside light's l04-l09. At 2h the
    first four of light end and l10, l11 run. With equal weights heavy stops at 6."""
    run = case_run("weights")
    assert admitted_at(run, 60) == [f"h{i:02d}" for i in range(8)]
    evicted = sorted(n for n, w in run.items() if any(e == "evicted" for _, e, _ in w.timeline))
    assert evicted == [f"l{i:02d}" for i in range(4, 12)]
    assert all(
        d == "Preempted (InCohortFairSharing)"
        for n in evicted
        for _, e, d in run[n].timeline
        if e == "evicted"
    )
    assert admitted_at(run, 3660) == ["h08", "h09", *(f"l{i:02d}" for i in range(4, 10))]
    assert admitted_at(run, 7200) == ["l10", "l11"]
    equal = case_run("weights", lambda text: text.replace("weight: 2", "weight: 1"))
    assert admitted_at(equal, 60) == [f"h{i:02d}" for i in range(6)]


def test_hold_stops_admissions_and_hold_and_drain_evicts_at_the_instant_asked() -> None:
    """Worked out by hand (the drain case: teams a and b, 4 GPUs each of one 8-GPU node; a1
    and b1 of 4 GPUs run 3h from 0 s, a3 of 2 GPUs comes at 40m for 20m). The sandbox holds
    both engines to the story of drained() (tests/rehearse/test_engine_causes.py: held at
    30m, drained at 1h, started at 1h30m). Here what each policy alone does:
    - held at 30m, started at 1h30m: a1 runs on (a Hold evicts nothing) and a3 waits for
      its team's quota, not only for the start: a1 holds it to 3h, a3 runs 3h to 3h20m;
    - drained at 1h and never started: a1 stops at 1h and a3 (40m) never runs, nor a1 again;
      b1 runs its 3h untouched."""
    text = stack_text("drain")

    def policy(name: str) -> str:
        return text.replace("stopPolicy: None", f"stopPolicy: {name}")

    held = case_run("drain", changed=[(1800, policy("Hold")), (5400, policy("None"))])
    assert [s for s in held["a1"].timeline if s[1] == "evicted"] == []
    assert held["a1"].intervals == [(0, 10800)]
    assert [t for t, e, _ in held["a3"].timeline if e == "admitted"] == [10800]
    drained = case_run("drain", changed=[(3600, policy("HoldAndDrain"))])
    assert drained["a1"].intervals == [(0, 3600)]
    assert [(t, e, d) for t, e, d in drained["a1"].timeline if e == "evicted"] == [
        (3600, "evicted", "ClusterQueueStopped")
    ]
    assert drained["a1"].outcome == "pending"
    assert drained["a3"].timeline == [] and drained["a3"].outcome == "pending"
    assert drained["b1"].intervals == [(0, 10800)]


def two_queues(scope: bool) -> Stack:
    """One team of 2 GPUs with two LocalQueues, train in team-t and eval in team-u, ordered by
    admission fair sharing when `scope` (usage counted in GPUs only: cpu and memory weigh 0)."""
    team = Team("t").quota("gpu", cpu=64, memory="512Gi", gpu=2)
    raw = team.raw()
    del raw["namespace"], raw["localQueue"]
    raw["namespaces"] = [NS.format("t"), NS.format("u")]
    raw["localQueues"] = [
        {"name": "gpu-queue", "namespace": NS.format("t")},
        {"name": "gpu-queue", "namespace": NS.format("u")},
    ]
    if scope:
        raw["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    afs = {"usageHalfLifeTime": "1h", "usageSamplingInterval": "5m"}
    afs["resourceWeights"] = {"cpu": 0, "memory": 0, "nvidia.com/gpu": 1}
    flavor = Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=2)
    return Stack().kueue(manager={"admissionFairSharing": afs}).flavor(flavor).team(raw)


def test_admission_fair_sharing_lets_the_idle_queue_of_a_team_go_first(tmp_path: Path) -> None:
    """Worked out by hand from Kueue's admission fair sharing (one team, 2 GPUs, two
    LocalQueues: t's j1-j4 at 0 s, u's k1-k4 at 30 s, 1 GPU and 10 minutes each). j1 and j2
    take the 2 GPUs at 0 s. At 10 m they end: without admissionScope the ClusterQueue takes its
    workloads in creation order, j3 and j4. With it, each head comes from the LocalQueue of
    least usage: u has used nothing, t has held 2 GPUs for 10 minutes, so k1 goes first, and
    then k2 too (u's usage is k1's entry penalty, 1 GPU times 1 - 2^(-5m/1h), about 0.06,
    less than t's); j3 waits."""
    jobs = [job(f"j{i}", "t", 1, at=0, runs=600) for i in range(1, 5)]
    jobs += [job(f"k{i}", "u", 1, at=30, runs=600) for i in range(1, 5)]
    fifo = by_name(replay(two_queues(scope=False), jobs, tmp_path))
    assert admitted_at(fifo, 0) == ["j1", "j2"] and admitted_at(fifo, 600) == ["j3", "j4"]
    fair = by_name(replay(two_queues(scope=True), jobs, tmp_path))
    assert admitted_at(fair, 0) == ["j1", "j2"]
    assert admitted_at(fair, 600) == ["k1", "k2"]
    assert [t for t, e, _ in fair["j3"].timeline if e == "admitted"] != [600]


def test_plain_pods_queue_run_and_finish_as_jobs_do(tmp_path: Path) -> None:
    """Kueue's pod integration on the engine: its webhook gates each Pod, its pod reconciler
    makes the Workload and ungates the pod on admission. A StrictFIFO queue of 8 GPUs: pod p1
    (6 GPUs, 0-600 s), Job j2 (4 GPUs at 60 s) waits for it (540 s) and runs 600-700 s, pod p3
    (2 GPUs at 120 s) waits behind j2 in strict order until 600 s (480 s) and runs 600-900 s."""
    jobs = [pod("p1", "a", 6, at=0, runs=600), job("j2", "a", 4, at=60, runs=100),
            pod("p3", "a", 2, at=120, runs=300)]  # fmt: skip
    run = by_name(replay(one_queue("StrictFIFO"), jobs, tmp_path))
    assert {n: (w.kind, w.outcome, w.wait_seconds) for n, w in run.items()} == {
        "p1": ("Pod", "finished", 0),
        "j2": ("Job", "finished", 540),
        "p3": ("Pod", "finished", 480),
    }
    assert [run[n].intervals for n in ("p1", "j2", "p3")] == [
        [(0, 600)],
        [(600, 700)],
        [(600, 900)],
    ]


def test_a_preempted_plain_pod_is_gone_for_good(tmp_path: Path) -> None:
    """Kueue preempts a plain Pod by deleting it, and nothing makes it again: one queue of 4
    GPUs that preempts lower priorities; pod low (4 GPUs) runs from 0 s, Job high (4) at 60 s
    preempts it at once and runs 120 s. low ran 60 s and is not readmitted after 180 s (a
    Job would be); its Workload is finished by Kueue as its owner is gone."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=4))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
    )
    jobs = [pod("low", "a", 4, at=0, runs=600, priority="low"),
            job("high", "a", 4, at=60, runs=120, priority="high")]  # fmt: skip
    run = by_name(replay(stack, jobs, tmp_path, until=1200))
    assert (run["high"].outcome, run["high"].wait_seconds) == ("finished", 0)
    assert run["low"].intervals == [(0, 60)]
    assert run["low"].preemptions == 1
    assert run["low"].outcome == "preempted"
    assert "InClusterQueue" in (run["low"].message or "")
    assert "nothing makes a plain Pod again" in (run["low"].message or "")


def test_one_admission_per_cluster_queue_per_cycle_keeps_file_order(tmp_path: Path) -> None:
    """Thirty 1-GPU jobs submitted at the same instant to a queue of 8: the first eight in
    mix order run (Kueue breaks the tie of equal priority and creation time by UID, which the
    engine derives from the mix order), the rest wait for them, in order."""
    jobs = [job(f"j{i:02d}", "a", 1, at=0, runs=100) for i in range(30)]
    run = replay(one_queue("StrictFIFO"), jobs, tmp_path)
    assert waits(run) == {f"j{i:02d}": 100.0 * (i // 8) for i in range(30)}


def test_the_same_stack_and_mix_give_a_byte_identical_report(tmp_path: Path) -> None:
    stack = cohort_pair({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})
    rng = random.Random(7)
    jobs = [
        job(f"w{i:03d}", rng.choice("ab"), rng.choice([1, 2, 4]), at=rng.randrange(0, 3600, 7),
            runs=rng.choice([60, 600, 1800]))
        for i in range(120)
    ]  # fmt: skip
    first = json.dumps(report_json(replay(stack, jobs, tmp_path), None), indent=2)
    for _ in range(2):
        again = json.dumps(report_json(replay(stack, jobs, tmp_path), None), indent=2)
        assert again == first


def test_the_e2e_story_worked_out_by_hand(tmp_path: Path) -> None:
    """tests/e2e/test_whatif.py's mix and stack, whose every outcome, flavor and wait that
    test's docstring works out by hand, on the fast engine with the e2e sandbox's one node
    (8 GPUs, 64 cpu, 512Gi): the same answers, and the same GPU-hours."""
    from sandbox.shape import load_stack
    from tests.e2e import test_whatif as e2e

    sandbox_node = Node("sandbox-node").capacity(cpu="64", memory="512Gi", gpu="8", pods="110")
    run = fast.replay_mix(
        load_stack(e2e.SOURCE),
        e2e.MIX,
        stack=e2e.STACK,
        label=e2e.STACK,
        nodes=[sandbox_node.obj()],
    )
    assert {w.name: (w.outcome, w.flavor, w.wait_seconds) for w in run.workloads} == e2e.EXPECTED
    teams = {t.team: t for t in run.teams}
    assert (teams["alpha"].gpu_hours, teams["beta"].gpu_hours) == (5.0, 4.0)
    assert run.meta.simulated_seconds == 4200
    assert by_name(run)["a-sweep"].preemptions == 2


def test_wait_for_pods_ready_evicts_on_the_simulated_clock(tmp_path: Path) -> None:
    """Kueue's waitForPodsReady timeout runs on the engine's clock: a queue of 4 GPUs on one
    node. stuck (4 GPUs) asks for a node label no node has (Kueue looks only at the flavor's
    own label keys, so it admits it at 0 s) and its pod fits no node; after the 10-minute
    timeout Kueue evicts it (PodsReadyTimeout) and small (4 GPUs, submitted at 60 s) gets the
    quota at 600 s: a wait of 540 s, to the second, and runs to 700 s. Without the timeout
    (the next test), small waits for ever behind it."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    stack = (
        Stack()
        .flavor(Flavor("gpu").nodes(1, cpu=64, memory="512Gi", gpu=4))
        .kueue(manager={"waitForPodsReady": {"timeout": "10m"}})
        .team(team)
    )
    stuck = job("stuck", "a", 4, at=0, runs=300).pod_spec(nodeSelector={"disk": "nvme"})
    jobs = [stuck, job("small", "a", 4, at=60, runs=100)]
    # The mix's last event is at 60 s: --until carries the replay on past the timeout.
    run = by_name(replay(stack, jobs, tmp_path, until=1200))
    assert run["small"].wait_seconds == 540
    assert run["small"].intervals == [(600, 700)]
    # stuck, requeued after the eviction (with Kueue's backoff), is admitted again when small
    # ends at 700 s, and its pod still fits no node: the next timeout would be at 1300 s.
    assert (run["stuck"].wait_seconds, run["stuck"].outcome) == (0, "unschedulable")
    assert run["stuck"].intervals == []  # its pod never ran


def test_requeue_backoff_doubles_on_the_simulated_clock_and_stops_at_its_limit(
    tmp_path: Path,
) -> None:
    """Kueue's requeue backoff after a waitForPodsReady eviction, on the engine's clock: 60 s,
    then 120 s (60 s x 2^(n-1), Kueue's jitter is below a millisecond here and the time is
    kept to the second), and after backoffLimitCount requeues the workload is deactivated.
    One node and a queue of 4 GPUs; stuck (4 GPUs) fits no node, so each admission ends in an
    eviction 10 minutes later. Probes (4 GPUs, 20 s each) show who holds the quota when:

    - stuck: admitted 0 s, evicted 600 s, backoff to 660 s; admitted 660 s, evicted 1260 s,
      backoff 120 s to 1380 s; admitted 1380 s, evicted 1980 s: a third eviction with a limit
      of 2 requeues deactivates it.
    - p1 at 630 s: stuck is backing off, so p1 runs at once (wait 0).
    - p2 at 670 s: stuck holds the quota from 660 s, p2 waits for its eviction at 1260 s (590).
    - p3 at 1330 s: a backoff that did not double (60 s) would have readmitted stuck at
      1320 s; with 120 s it waits until 1380 s and p3 runs at once (0).
    - p4 at 1390 s: stuck holds the quota from 1380 s, until 1980 s (590).
    - p5 at 2600 s: stuck is deactivated, not back at 1980 s + 240 s (wait 0, not 220 s).
    """
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    manager = {
        "waitForPodsReady": {
            "timeout": "10m",
            "requeuingStrategy": {"backoffBaseSeconds": 60, "backoffLimitCount": 2},
        }
    }
    stack = (
        Stack()
        .flavor(Flavor("gpu").nodes(1, cpu=64, memory="512Gi", gpu=4))
        .kueue(manager=manager)
        .team(team)
    )
    stuck = job("stuck", "a", 4, at=0, runs=300).pod_spec(nodeSelector={"disk": "nvme"})
    probes = {"p1": 630, "p2": 670, "p3": 1330, "p4": 1390, "p5": 2600}
    jobs = [stuck] + [job(n, "a", 4, at=at, runs=20) for n, at in probes.items()]
    run = by_name(replay(stack, jobs, tmp_path, until=3000))
    assert {n: run[n].wait_seconds for n in probes} == {
        "p1": 0,
        "p2": 590,
        "p3": 0,
        "p4": 590,
        "p5": 0,
    }
    assert all(run[n].outcome == "finished" for n in probes)
    # Kueue's message for it: deactivated by the limit, after three evictions.
    assert run["stuck"].outcome == "pending"
    last = "evicted 3x, last: DeactivatedDueToRequeuingLimitExceeded"
    assert last in (run["stuck"].message or "")


def test_without_wait_for_pods_ready_the_stuck_job_holds_its_quota(tmp_path: Path) -> None:
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    stack = Stack().flavor(Flavor("gpu").nodes(1, cpu=64, memory="512Gi", gpu=4)).team(team)
    stuck = job("stuck", "a", 4, at=0, runs=300).pod_spec(nodeSelector={"disk": "nvme"})
    jobs = [stuck, job("small", "a", 4, at=60, runs=100)]
    run = by_name(replay(stack, jobs, tmp_path, until=1200))
    assert run["stuck"].outcome == "unschedulable"
    assert (run["small"].outcome, run["small"].wait_seconds) == ("pending", None)


def test_the_engine_reads_and_patches_as_the_in_memory_client_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine serves reads from its own cache and applies patches by its own path, in one
    JSON round trip (toolchain/go/whatif/reads.go, patch.go), because controller-runtime's
    in-memory client took most of a replay's time doing each in several. The answer must not
    move: a mix with borrowing, reclaim and priority preemption in a cohort, replayed with the
    plain client (GPUQ_WHATIF_PLAIN_CLIENT) and without, gives the same report."""
    stack = cohort_pair({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})
    stack.set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
    rng = random.Random(11)
    jobs = [
        job(f"w{i:03d}", rng.choice("ab"), rng.choice([1, 2, 4, 8]), at=rng.randrange(0, 7200, 7),
            runs=rng.choice([60, 600, 1800]), priority=rng.choice(["low", "high"]))
        for i in range(150)
    ]  # fmt: skip
    fast_run = replay(stack, jobs, tmp_path)
    monkeypatch.setenv("GPUQ_WHATIF_PLAIN_CLIENT", "1")
    plain_run = replay(stack, jobs, tmp_path)
    assert sum(w.preemptions for w in plain_run.workloads) >= 5  # the mix exercises eviction
    assert sum(1 for w in plain_run.workloads if (w.wait_seconds or 0) > 0) >= 20  # and queueing
    assert json.dumps(report_json(fast_run, None), indent=2) == json.dumps(
        report_json(plain_run, None), indent=2
    )


def three_borrowers(fair_sharing: bool) -> Stack:
    """Teams c, a and b (declared in that order) with 2 GPUs each in one cohort of 6, each
    free to borrow 4; with `fair_sharing`, Kueue's fair sharing decides by tournament."""
    teams = []
    for name in ("c", "a", "b"):
        t = Team(name).namespace(NS.format(name)).cohort("pool")
        t.quota("gpu", cpu=16, memory="128Gi", gpu=2).borrowing("gpu", gpu=4)
        t.set(preemption={"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"})
        teams.append(t)
    stack = Stack().flavor(Flavor("gpu").capacity(cpu=48, memory="384Gi", gpu=6))
    if fair_sharing:
        stack.kueue(manager={"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}})
    return stack.cohort("pool").team(*teams)


@pytest.mark.parametrize("fair_sharing", [False, True], ids=["classical", "fair-sharing"])
def test_ties_across_cluster_queues_go_by_submission_order_on_every_run(
    fair_sharing: bool, tmp_path: Path
) -> None:
    """c's 6-GPU job holds the whole cohort until 600 s. At 10 s b, c and a (in that order)
    each submit a 4-GPU job: equal priority, equal creation time, each borrowing, so when the
    cohort frees at 600 s only one fits and Kueue's scheduler has nothing left to tell them
    apart (the classical order: borrowing, priority, timestamp; the fair-sharing tournament:
    equal shares, then the same). Kueue leaves that tie to Go's map order, random on every
    call; the engine takes them in the order they were submitted, as a cluster's creation
    times (and the sandbox engine, a second apart) order them (docs/what-if.md, Ties): b-cq at
    600 s, c-cq when b's ends at 700 s, a-cq at 800 s, whatever the order of the stack's
    teams (c, a, b) or of their names, and the same on every run."""
    jobs = [job("c-hold", "c", 6, at=0, runs=600)]
    jobs += [job(f"{t}-tie", t, 4, at=10, runs=100) for t in ("b", "c", "a")]
    expected = {"c-hold": 0.0, "b-tie": 590.0, "c-tie": 690.0, "a-tie": 790.0}
    for _ in range(5):
        assert waits(replay(three_borrowers(fair_sharing), jobs, tmp_path)) == expected


def engine_document(
    stack: Stack, jobs: list[Job | dict[str, Any]], tmp: Path
) -> tuple[str, dict[str, Any]]:
    """The stack's Kueue release and the engine's input for the mix, as the replay makes it."""
    config: StackConfig = load_config(stack.raw())
    mix = Mix(*jobs).write(tmp / "mix.yaml")
    configuration = engine_input.manager_configuration(config)
    entries = load_mix(mix, Catalog.from_stack(config, frameworks(configuration)))
    return config.kueue.version, engine_input.engine_input(config, entries, configuration, None)


def engine_output(version: str, document: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's output lines for the input, but its wall-clock figure."""
    lines = fast.run_engine(version, document)
    for line in lines:
        line.pop("wallSeconds", None)
    return lines


def test_the_engine_writes_the_same_bytes_on_every_run(tmp_path: Path) -> None:
    """The engine's own output (every Workload as Kueue left it, conditions and their times
    included) is the same on every run but for its wall-clock figure: Kueue's Requeued
    condition takes its time from metav1.Now(), which the engine makes the simulated now.
    The mix has preemptions, so Requeued conditions are there to be written."""
    stack = cohort_pair({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})
    jobs = [job("a-wide", "a", 8, at=0), job("b-own", "b", 4, at=600, runs=300)]
    version, document = engine_document(stack, jobs, tmp_path)

    def output() -> list[str]:
        return [json.dumps(line, sort_keys=True) for line in engine_output(version, document)]

    first = output()
    assert '"type": "Requeued"' in "".join(first)
    # Every time in it is a simulated one: from the engine's epoch (sim.go) to the end, Kueue's
    # clock running at most a few seconds ahead within an instant (a second a submission and a
    # requeue batch at one instant, as on a cluster: sim.go, submitting and settle).
    end = json.loads(first[-1])["simulatedSeconds"]
    times = re.findall(r'"lastTransitionTime": "([^"]+)"', "".join(first))
    latest = EPOCH + timedelta(seconds=end + 10)
    assert times and max(times) <= latest.strftime("%Y-%m-%dT%H:%M:%SZ")
    time.sleep(1.1)  # another wall-clock second
    assert output() == first


def raw_engine_output(version: str, document: dict[str, Any]) -> bytes:
    """The engine's stdout for the input, byte for byte, but the summary's wall-clock figure."""
    done = subprocess.run(
        [str(fast.binary(version))],
        input=json.dumps(document).encode(),
        capture_output=True,
        check=True,
        env={**os.environ, "GPUQ_KUEUE_VERSION": version},
    )
    return re.sub(rb'"wallSeconds":[0-9.eE+-]+,', b"", done.stdout)


def staging_day() -> tuple[StackConfig, Path]:
    return load_config(read_config("staging")), ROOT / "workloads" / "staging"


def serving_preempted() -> tuple[StackConfig, Path]:
    config = load_config(parse_config(stack_text("serving-preempted"), "serving-preempted"))
    return config, CASES / "serving-preempted" / "mix.yaml"


@pytest.mark.parametrize(
    ("mix", "preempts"),
    [
        pytest.param(staging_day, 3, id="staging"),
        pytest.param(serving_preempted, 1, id="serving-preempted"),
    ],
)
def test_the_engine_writes_the_same_bytes_on_every_run_on_a_committed_mix(
    mix: Callable[[], tuple[StackConfig, Path]], preempts: int
) -> None:
    """A committed mix on the stack's own release: five runs, one output, byte for byte (but
    the summary's wall-clock seconds): every Workload as Kueue left it with its
    resourceVersion, the timelines, the count of reconciles and scheduling cycles. A
    dependence on Go's map order or the goroutines' order anywhere in the engine or its copy
    of Kueue moves one of them (docs/what-if.md, Ties, the same on every run), and so does a
    time taken from the wall clock. staging's day: a cohort tree of two weighted divisions and
    a reserve, fair sharing, waitForPodsReady, reclaims and priority preemption.
    serving-preempted: a Deployment's replica preempted and its Workloads deleted while
    Kueue's finalizer holds them, whose deletionTimestamp the in-memory client takes from the
    wall clock (metav1.Now()) and the engine makes the simulated now; the runs are a second
    apart on the wall clock, so a wall-clock time among them differs."""
    config, path = mix()
    configuration = engine_input.manager_configuration(config)
    entries = load_mix(path, Catalog.from_stack(config, frameworks(configuration)))
    document = engine_input.engine_input(config, entries, configuration, None)
    outputs = set()
    for _ in range(5):
        outputs.add(raw_engine_output(config.kueue.version, document))
        time.sleep(0.3)  # five runs span more than a wall-clock second
    assert len(outputs) == 1
    text = outputs.pop()
    lines = [json.loads(line) for line in text.splitlines()]
    assert sum(len(line.get("evictions") or []) for line in lines) >= preempts
    assert lines[-1]["reconciles"] > 0 and lines[-1]["type"] == "summary"
    deleted = re.findall(rb'"deletionTimestamp":"([^"]+)"', text)
    end = EPOCH + timedelta(seconds=lines[-1]["simulatedSeconds"])
    assert all(t.decode() <= end.strftime("%Y-%m-%dT%H:%M:%SZ") for t in deleted)
    if mix is serving_preempted:
        assert deleted  # the deleted replicas' Workloads are there to be written


def test_kueue_s_message_for_a_job_that_does_not_fit_is_the_same_on_every_run(
    tmp_path: Path,
) -> None:
    """Kueue's flavor assigner (v0.18) checks a flavor's resources in a map's order and stops at
    the first that cannot fit, so the QuotaReserved message of a workload that does not fit
    named the resources checked before that one: on a cluster, and in an engine that runs the
    code unchanged, "insufficient unused quota for cpu ..." on one run and not on the next,
    and the Workload written or not by a cycle (its resourceVersion and the engine's count of
    reconciles moved). The engine checks them in name order (overlay/rewrites.tsv). Here hold
    takes all 8 CPUs of a's quota and wide asks for 2 CPUs and 8 of a's 4 GPUs: the GPUs can
    never fit, the CPUs not now. Twelve runs, one output; the message names both, cpu first."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=8, memory="64Gi", gpu=4)
    stack = Stack().flavor(Flavor("gpu").capacity(cpu=8, memory="64Gi", gpu=4)).team(team)
    hold = job("hold", "a", 0, at=0).obj()
    hold["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "8"}}
    wide = job("wide", "a", 8, at=10).requests(cpu="2")
    version, document = engine_document(stack, [hold, wide], tmp_path)
    outputs = {json.dumps(engine_output(version, document), sort_keys=True) for _ in range(12)}
    assert len(outputs) == 1
    wl = json.loads(outputs.pop())[1]["workload"]
    reserved = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["status"] == "False"
    message = reserved["message"]
    assert "insufficient unused quota for cpu in flavor gpu" in message, message
    assert "nvidia.com/gpu in flavor gpu" in message, message


JOBSETS = {"integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]}}


def jobset(
    name: str, team: str, workers: tuple[int, int], *, leader: bool, at: int, runs: int,
    priority: str | None = None,
) -> JobSet:  # fmt: skip
    """A JobSet in its team's queue: a leader (one pod, 1 cpu, no GPU) if `leader`, and
    `workers` = (replicas, pods each) of one GPU per pod, submitted `at`, running `runs`."""
    built = JobSet(name, NS.format(team)).queue("gpu-queue").submit_at(at).duration(runs)
    if priority:
        built.priority_class(priority)
    if leader:
        built.replicated("leader", Job("leader", None).image("busybox").requests(cpu="1"))
    replicas, pods = workers
    one_gpu = Job("workers", None).image("busybox").requests(cpu="100m", gpu="1").limits(gpu="1")
    return built.replicated("workers", one_gpu.parallelism(pods).completions(pods), replicas)


def test_a_jobset_is_admitted_whole_and_the_next_waits_to_the_second_it_ends(
    tmp_path: Path,
) -> None:
    """Kueue's jobset integration on the engine, worked out by hand. One queue of 8 GPUs
    (BestEffortFIFO): JobSet first at 0 s, a leader (1 pod, no GPU) and workers (2 replicas x 2
    pods x 1 GPU = 4 GPUs), runs 600 s; Job beside (2 GPUs) at 0 s runs 1200 s; JobSet second at
    60 s (3 replicas x 2 pods = 6 GPUs), 2 GPUs free, waits until first ends at 600 s (540 s),
    then runs 600-900 s; beside goes on as if the JobSets were Jobs."""
    stack = one_queue("BestEffortFIFO").kueue(manager=JOBSETS)
    jobs: list[Job | Pod | JobSet] = [
        jobset("first", "a", (2, 2), leader=True, at=0, runs=600),
        job("beside", "a", 2, at=0, runs=1200),
        jobset("second", "a", (3, 2), leader=False, at=60, runs=300),
    ]
    run = by_name(replay(stack, jobs, tmp_path))
    assert {n: (w.kind, w.outcome, w.wait_seconds, w.gpus) for n, w in run.items()} == {
        "first": ("JobSet", "finished", 0, 4),
        "beside": ("Job", "finished", 0, 2),
        "second": ("JobSet", "finished", 540, 6),
    }
    assert [run[n].intervals for n in ("first", "beside", "second")] == [
        [(0, 600)],
        [(0, 1200)],
        [(600, 900)],
    ]


def test_an_evicted_jobset_stops_and_runs_again_as_a_job_of_its_pods_would(
    tmp_path: Path,
) -> None:
    """Kueue suspends a JobSet it preempts, and the engine removes its pods at once, as for a
    Job: one queue of 4 GPUs preempting lower priorities; low (4 workers of 1 GPU) runs from
    0 s, Job high (4 GPUs) at 60 s preempts it and runs 120 s; low is admitted again at 180 s
    and runs its 600 s from then (a readmitted job runs its whole duration again). The same
    mix with low as a Job of 4 pods has the same story."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .kueue(manager=JOBSETS)
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=4))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
    )
    high = job("high", "a", 4, at=60, runs=120, priority="high")
    as_jobset = by_name(replay(stack, [
        jobset("low", "a", (2, 2), leader=False, at=0, runs=600, priority="low"), high,
    ], tmp_path))  # fmt: skip
    as_job = by_name(replay(stack, [
        job("low", "a", 1, at=0, runs=600, priority="low", pods=4), high,
    ], tmp_path))  # fmt: skip
    assert as_jobset["low"].intervals == [(0, 60), (180, 780)]
    assert as_jobset["low"].preemptions == 1
    for name in ("low", "high"):
        assert as_jobset[name].intervals == as_job[name].intervals
        assert as_jobset[name].outcome == as_job[name].outcome


def test_the_docs_jobset_example_replays_on_staging_as_its_comment_says() -> None:
    """docs/examples/mixes/jobset.yaml on staging, alone: research's 4 H100 are free, so the
    JobSet is admitted the second it is submitted (1h) and its pods run its 3h (to 4h)."""
    from sandbox.shape import load_stack

    root = Path(__file__).resolve().parents[2]
    config = load_stack(root / "Pulumi.staging.yaml")
    example = root / "docs" / "examples" / "mixes" / "jobset.yaml"
    (w,) = fast.replay_mix(config, example, stack="staging", label="example").workloads
    assert (w.kind, w.outcome, w.flavor, w.wait_seconds, w.gpus) == (
        "JobSet",
        "finished",
        "h100",
        0,
        4,
    )
    assert w.intervals == [(3600, 14400)]


def test_a_head_left_with_flavors_to_try_is_tried_again_before_the_instant_ends(
    tmp_path: Path,
) -> None:
    """Cross-check seed 600 (sandbox/crosscheck/generate.py), where the sandbox's real Kueue is
    the judge: vision's JobSet j010 (a CPU leader and 2 workers of 8 GPUs) can never fit and
    heads its BestEffortFIFO queue. When j008 ends at 3h44m, Kueue tries j010 on one flavor
    after another (each failure puts it back into the heap with flavors left) before it goes
    among the inadmissible and j011 is admitted, the same second. Two of those attempts wrote
    the same message, so a cycle wrote nothing and left the queues as long as before: the
    engine took that for rest and admitted j011 a minute late (at j013's submission), j012 7
    minutes late, and never j019. The waits are the sandbox's."""
    run = by_name(replayed_seed(600, tmp_path))
    assert run["j010"].kind == "JobSet" and run["j010"].outcome == "pending"
    assert {n: run[n].wait_seconds for n in ("j011", "j012", "j019")} == {
        "j011": 2160, "j012": 7680, "j019": 5640
    }  # fmt: skip


def test_an_evicted_job_holds_its_quota_while_kueue_goes_on_scheduling(tmp_path: Path) -> None:
    """Cross-check seed 602, where the sandbox's real Kueue is the judge (fair sharing on). At
    4h22m nlp/j033 ends on a100, and vision/j046 (high, 8 GPUs) preempts vision/j048 (mid, 4)
    within vision's ClusterQueue. On the cluster j048's quota is not free at once: Kueue's stop
    is refused until the Job controller has reset the Job's startTime, and it retries with
    backoff (about a second on the sandbox), running cycle after cycle meanwhile, in which nlp's
    queue comes round to j040 (4 GPUs), admitted in the quota j033 freed. Then j046 no longer
    fits, and j048 is admitted again the same second. The engine stopped j048's pods at once and
    admitted j046 (wait 1h33m), j040 waiting an hour more on h100. The figures are the
    sandbox's."""
    run = by_name(replayed_seed(602, tmp_path))
    at = 15720.0  # 4h22m
    assert run["j040"].timeline[0] == (at, "admitted", "a100")
    assert (run["j040"].flavor, run["j040"].wait_seconds) == ("a100", 6120)
    assert [t for t in run["j048"].timeline if t[0] == at] == [
        (at, "evicted", "Preempted (InClusterQueue)"),
        (at, "admitted", "a100"),
        (at, "ran", "a100-2"),
    ]
    assert (run["j046"].timeline[0], run["j046"].wait_seconds) == (
        (20400.0, "admitted", "a100"),
        10260,
    )


def test_a_preempted_replica_s_new_pod_comes_after_the_preemptor(tmp_path: Path) -> None:
    """Cross-check seed 707, where the sandbox's real Kueue is the judge (fair sharing on). At
    4h34m nlp/j028 (4 GPUs) preempts a replica of vision/j009, a Deployment. Kueue deletes the
    replica's pod; the ReplicaSet makes another, but its Workload reaches Kueue's queue after
    Kueue's next cycles (76 ms on the sandbox, cycles every 10 ms): j028 is admitted at once,
    the new replica waits. The engine made the new pod before any cycle, the new replica
    (vision now the lower share) took the quota, j028 preempted it again, and so on: the
    replay ended the loop with a note, j028 a minute late and j027 admitted 51 minutes early.
    The figures are the sandbox's."""
    replayed = replayed_seed(707, tmp_path)
    assert replayed.meta.notes == []  # no preemption loop
    run = by_name(replayed)
    at = 16440.0  # 4h34m
    assert [t for t in run["j009"].timeline if t[0] == at] == [
        (at, "evicted", "Preempted (InCohortFairSharing)")
    ]
    assert run["j009"].preemptions == 1
    assert (run["j028"].timeline[0][:2], run["j028"].wait_seconds) == ((at, "admitted"), 0)
    assert (run["j029"].timeline[0][:2], run["j029"].wait_seconds) == ((16500.0, "admitted"), 0)
    assert (run["j027"].timeline[0][:2], run["j027"].wait_seconds) == ((19560.0, "admitted"), 3780)


def test_an_lws_group_s_pods_spread_as_its_service_and_statefulsets_select_them(
    tmp_path: Path,
) -> None:
    """Cross-check seed 716, the sandbox's kube-scheduler the judge. At 1h21m nlp/j021, an LWS of
    one group of 3 pods of 1 GPU (no leader template), is admitted on h100. kube-scheduler's
    default spreading scores pods that a Service or their controlling StatefulSet selects: LWS's
    headless Service selects them all, and the worker StatefulSet's selector (the group's index
    and hash) takes in the leader too, so the workers keep off the leader's node and each
    other's: h100-0, h100-2 and h100-3 on the sandbox. The engine spread only a JobSet's pods
    and put two of them on h100-2."""
    run = by_name(replayed_seed(716, tmp_path))
    assert run["j021"].kind == "LeaderWorkerSet"
    assert run["j021"].timeline[:2] == [
        (4860.0, "admitted", "h100"),
        (4860.0, "ran", "h100-0, h100-2, h100-3"),
    ]


def test_an_mpijob_s_pods_spread_as_its_service_selects_them_its_workers_placed_first(
    tmp_path: Path,
) -> None:
    """Cross-check seed 802, the sandbox's kube-scheduler and mpi-operator the judges. At 1h36m
    nlp/j006, an MPIJob of a launcher (no GPU) and 4 workers of 1 GPU, is admitted on l40s (3
    nodes). The mpi-operator's headless Service selects the launcher's and the workers' pods
    (its operator-name and job-name labels), so default spreading keeps them apart: l40s-0, two
    on l40s-1, two on l40s-2 on the sandbox, where the engine had put them 2+3. And its
    workers' pods reach the scheduler before the launcher's (the mpi-operator makes them
    itself, the launcher as a batch Job whose pod comes after): placing the launcher first
    instead leaves j006 on the sandbox's nodes but moves the next placements, speech/j014 at
    3h18m onto h100-1 where the sandbox's ran it on h100-3."""
    run = by_name(replayed_seed(802, tmp_path))
    assert run["j006"].kind == "MPIJob"
    assert run["j006"].timeline[:2] == [
        (5760.0, "admitted", "l40s"),
        (5760.0, "ran", "l40s-0, l40s-1, l40s-1, l40s-2, l40s-2"),
    ]
    assert run["j014"].timeline[:2] == [(11880.0, "admitted", "h100"), (11880.0, "ran", "h100-3")]


def test_the_docs_pytorchjob_example_replays_on_staging_as_its_comment_says() -> None:
    """docs/examples/mixes/pytorchjob.yaml on staging, alone: research's 4 H100 are free, so the
    PyTorchJob is admitted the second it is submitted (1h) and its pods run its 3h (to 4h)
    (staging waits for pods ready: the engine's Running condition is what Kueue reads)."""
    from sandbox.shape import load_stack

    root = Path(__file__).resolve().parents[2]
    config = load_stack(root / "Pulumi.staging.yaml")
    example = root / "docs" / "examples" / "mixes" / "pytorchjob.yaml"
    (w,) = fast.replay_mix(config, example, stack="staging", label="example").workloads
    assert (w.kind, w.outcome, w.flavor, w.wait_seconds, w.gpus) == (
        "PyTorchJob",
        "finished",
        "h100",
        0,
        4,
    )
    assert w.intervals == [(3600, 14400)]


RAYJOBS = {"integrations": {"frameworks": ["batch/job", "ray.io/rayjob"]}}


def rayjob(
    name: str, team: str, workers: int, *, at: int, runs: int, priority: str | None = None
) -> RayJob:
    """A RayJob in its team's queue (K8sJobMode): a head (1 cpu, no GPU), `workers` worker
    pods of one GPU, and the submitter pod, submitted `at`, running `runs`."""
    head = Job("head", None).image("busybox").requests(cpu="1")
    built = RayJob(name, NS.format(team), head).queue("gpu-queue").submit_at(at).duration(runs)
    if priority:
        built.priority_class(priority)
    one_gpu = Job("pod", None).image("busybox").requests(cpu="100m", gpu="1").limits(gpu="1")
    return built.workers("gpu", one_gpu, workers)


def test_a_rayjob_is_admitted_whole_and_the_next_waits_to_the_second_it_ends(
    tmp_path: Path,
) -> None:
    """Kueue's rayjob integration on the engine, worked out by hand. One queue of 8 GPUs
    (BestEffortFIFO): RayJob first at 0 s, a head, 4 workers of 1 GPU and the submitter (4
    GPUs), runs 600 s; Job beside (2 GPUs) at 0 s runs 1200 s; RayJob second at 60 s, 3 workers
    (3 GPUs), 2 GPUs free, waits until first ends at 600 s (540 s), then runs 600-900 s; beside
    goes on as if the RayJobs were Jobs."""
    stack = one_queue("BestEffortFIFO").kueue(manager=RAYJOBS)
    jobs: list[Job | Pod | RayJob] = [
        rayjob("first", "a", 4, at=0, runs=600),
        job("beside", "a", 2, at=0, runs=1200),
        rayjob("second", "a", 3, at=60, runs=300),
    ]
    run = by_name(replay(stack, jobs, tmp_path))
    assert {n: (w.kind, w.outcome, w.wait_seconds, w.gpus) for n, w in run.items()} == {
        "first": ("RayJob", "finished", 0, 4),
        "beside": ("Job", "finished", 0, 2),
        "second": ("RayJob", "finished", 540, 3),
    }
    assert [run[n].intervals for n in ("first", "beside", "second")] == [
        [(0, 600)],
        [(0, 1200)],
        [(600, 900)],
    ]


def test_an_evicted_rayjob_stops_and_runs_again_as_a_job_of_its_pods_would(
    tmp_path: Path,
) -> None:
    """Kueue suspends a RayJob it preempts, and the engine removes its pods at once, as for a
    Job: one queue of 4 GPUs preempting lower priorities; low (4 workers of 1 GPU, a head and a
    submitter) runs from 0 s, Job high (4 GPUs) at 60 s preempts it and runs 120 s; low is
    admitted again at 180 s and runs its 600 s from then. The same mix with low as a Job of 4
    pods has the same story."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .kueue(manager=RAYJOBS)
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=4))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
    )
    high = job("high", "a", 4, at=60, runs=120, priority="high")
    as_rayjob = by_name(replay(stack, [
        rayjob("low", "a", 4, at=0, runs=600, priority="low"), high,
    ], tmp_path))  # fmt: skip
    as_job = by_name(replay(stack, [
        job("low", "a", 1, at=0, runs=600, priority="low", pods=4), high,
    ], tmp_path))  # fmt: skip
    assert as_rayjob["low"].intervals == [(0, 60), (180, 780)]
    assert as_rayjob["low"].preemptions == 1
    for name in ("low", "high"):
        assert as_rayjob[name].intervals == as_job[name].intervals
        assert as_rayjob[name].outcome == as_job[name].outcome


def staging_example_with(kind: str, framework: str, gpus: int, tmp_path: Path) -> WorkloadResult:
    """The one row of docs/examples/mixes/<kind>.yaml replayed on staging with `framework`
    added to its integrations, as the example's comment says to; first, on staging as it
    stands, that the row is `kind`'s, unsupported, naming `framework`. Every such example is
    submitted at 1h for 3h, asking for no more than research's 4 free H100: its row is
    admitted the second it is submitted, holds its `gpus` and runs to 4h."""
    from sandbox.shape import load_stack

    root = Path(__file__).resolve().parents[2]
    example = root / "docs" / "examples" / "mixes" / f"{kind.lower()}.yaml"
    staging = (root / "Pulumi.staging.yaml").read_text()
    (w,) = fast.replay_mix(
        load_stack(root / "Pulumi.staging.yaml"), example, stack="staging", label="example"
    ).workloads
    assert (w.kind, w.outcome) == (kind, "unsupported")
    assert f"integration {framework} is not enabled" in (w.message or ""), w.message
    added = staging.replace("kubeflow.org/pytorchjob]", f"kubeflow.org/pytorchjob, {framework}]")
    assert added != staging
    (tmp_path / "Pulumi.staging.yaml").write_text(added)
    config = load_stack(tmp_path / "Pulumi.staging.yaml")
    (w,) = fast.replay_mix(config, example, stack="staging", label="example").workloads
    assert (w.kind, w.outcome, w.flavor, w.wait_seconds, w.gpus) == (
        kind,
        "finished",
        "h100",
        0,
        gpus,
    )
    assert w.intervals == [(3600, 14400)]
    return w


def test_the_docs_rayjob_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/rayjob.yaml on staging as it stands: unsupported, naming
    ray.io/rayjob; with it added, research's 4 H100 are free, so the RayJob is admitted the
    second it is submitted (1h) and its pods run its 3h (to 4h)."""
    staging_example_with("RayJob", "ray.io/rayjob", 4, tmp_path)


def test_the_docs_mpijob_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/mpijob.yaml on staging as it stands: unsupported, naming
    kubeflow.org/mpijob; with it added, research's 4 H100 are free, so the MPIJob is admitted
    the second it is submitted (1h) and its pods run its 3h (to 4h) (staging waits for pods
    ready: the engine's Running condition is what Kueue reads)."""
    staging_example_with("MPIJob", "kubeflow.org/mpijob", 4, tmp_path)


KUBEFLOW = {
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/pytorchjob",
            "kubeflow.org/mpijob",
            "kubeflow.org/tfjob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/paddlejob",
            "kubeflow.org/jaxjob",
        ]
    }
}
# Each kind with replica types (Kubeflow v1's and the MPIJob): the first one pod, the last the
# rest; Kueue makes a pod set of each, in this order.
KUBEFLOW_TYPES = {
    "PyTorchJob": ("Master", "Worker"),
    "MPIJob": ("Launcher", "Worker"),
    "TFJob": ("Chief", "Worker"),
    "XGBoostJob": ("Master", "Worker"),
    "PaddleJob": ("Master", "Worker"),
    "JAXJob": ("Worker",),
}


def kubeflowjob(
    kind: str, name: str, team: str, pods: int, *, at: int, runs: int, priority: str | None = None
) -> KubeflowJob | MPIJob:
    """A job of a kind with replica types in its team's queue of `pods` pods of one GPU each
    (one of its first replica type, the rest of its last; a JAXJob's all Workers), submitted
    `at`, running `runs`."""
    made = (
        MPIJob(name, NS.format(team))
        if kind == "MPIJob"
        else KubeflowJob(kind, name, NS.format(team))
    )
    built = made.queue("gpu-queue").submit_at(at)
    built.duration(runs)
    if priority:
        built.priority_class(priority)
    one_gpu = Job("pod", None).image("busybox").requests(cpu="100m", gpu="1").limits(gpu="1")
    *first, last = KUBEFLOW_TYPES[kind]
    for replica_type in first:
        built.replica(replica_type, one_gpu)
    return built.replica(last, one_gpu, pods - len(first))


@pytest.mark.parametrize("kind", list(KUBEFLOW_TYPES))
def test_a_kubeflow_job_is_admitted_whole_and_the_next_waits_to_the_second_it_ends(
    tmp_path: Path, kind: str
) -> None:
    """Kueue's integration of each kind with replica types on the engine (PyTorchJob, MPIJob,
    TFJob, XGBoostJob, PaddleJob, JAXJob), worked out by hand.
    One queue of 8 GPUs (BestEffortFIFO): first at 0 s, 4 pods of 1 GPU (4 GPUs), runs 600 s;
    Job beside (2 GPUs) at 0 s runs 1200 s; second at 60 s, 5 pods (5 GPUs), 2 GPUs free, waits
    until first ends at 600 s (540 s), then runs 600-900 s; beside goes on as if they were
    Jobs."""
    stack = one_queue("BestEffortFIFO").kueue(manager=KUBEFLOW)
    jobs: list[Job | KubeflowJob | MPIJob] = [
        kubeflowjob(kind, "first", "a", 4, at=0, runs=600),
        job("beside", "a", 2, at=0, runs=1200),
        kubeflowjob(kind, "second", "a", 5, at=60, runs=300),
    ]
    run = by_name(replay(stack, jobs, tmp_path))
    assert {n: (w.kind, w.outcome, w.wait_seconds, w.gpus) for n, w in run.items()} == {
        "first": (kind, "finished", 0, 4),
        "beside": ("Job", "finished", 0, 2),
        "second": (kind, "finished", 540, 5),
    }
    assert [run[n].intervals for n in ("first", "beside", "second")] == [
        [(0, 600)],
        [(0, 1200)],
        [(600, 900)],
    ]


@pytest.mark.parametrize("kind", list(KUBEFLOW_TYPES))
def test_an_evicted_kubeflow_job_stops_and_runs_again_as_a_job_of_its_pods_would(
    tmp_path: Path, kind: str
) -> None:
    """Kueue suspends a job with replica types it preempts (runPolicy.suspend), and the engine
    removes its pods at once, as for a Job: one queue of 4 GPUs preempting lower priorities; low
    (4 pods of 1 GPU) runs from 0 s, Job high (4 GPUs) at 60 s preempts it and runs 120 s; low is
    admitted again at 180 s and runs its 600 s from then. The same mix with low as a Job of 4
    pods has the same story."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .kueue(manager=KUBEFLOW)
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=4))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
    )
    high = job("high", "a", 4, at=60, runs=120, priority="high")
    as_kind = by_name(replay(stack, [
        kubeflowjob(kind, "low", "a", 4, at=0, runs=600, priority="low"), high,
    ], tmp_path))  # fmt: skip
    as_job = by_name(replay(stack, [
        job("low", "a", 1, at=0, runs=600, priority="low", pods=4), high,
    ], tmp_path))  # fmt: skip
    assert as_kind["low"].intervals == [(0, 60), (180, 780)]
    assert as_kind["low"].preemptions == 1
    for name in ("low", "high"):
        assert as_kind[name].intervals == as_job[name].intervals
        assert as_kind[name].outcome == as_job[name].outcome


def test_the_docs_tfjob_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/tfjob.yaml on staging as it stands: unsupported, naming
    kubeflow.org/tfjob; with it added, research's 4 H100 are free, so the TFJob (a PS and 4
    Workers of one H100) is admitted the second it is submitted (1h) and its pods run its 3h (to
    4h) (staging waits for pods ready: the engine's Running condition is what Kueue reads)."""
    staging_example_with("TFJob", "kubeflow.org/tfjob", 4, tmp_path)


RAYCLUSTERS = {"integrations": {"frameworks": ["batch/job", "ray.io/raycluster"]}}


def raycluster(
    name: str,
    team: str,
    workers: int,
    *,
    at: int,
    runs: int | None = None,
    priority: str | None = None,
) -> RayCluster:
    """A RayCluster in its team's queue: a head (1 cpu, no GPU) and `workers` worker pods of one
    GPU, submitted `at`, kept `runs` (none: until the end of the replay)."""
    head = Job("head", None).image("busybox").requests(cpu="1")
    built = RayCluster(name, NS.format(team), head).queue("gpu-queue").submit_at(at)
    if runs is not None:
        built.duration(runs)
    if priority:
        built.priority_class(priority)
    one_gpu = Job("pod", None).image("busybox").requests(cpu="100m", gpu="1").limits(gpu="1")
    return built.workers("gpu", one_gpu, workers)


def test_a_raycluster_runs_until_deleted_and_the_next_waits_to_the_second_it_is(
    tmp_path: Path,
) -> None:
    """Kueue's raycluster integration on the engine, worked out by hand. Kueue reads no end of a
    RayCluster: the replay deletes it when its duration is up, and Kueue finishes its Workload
    (its owner gone) and frees its quota. One queue of 8 GPUs (BestEffortFIFO): first at 0 s, a
    head and 4 workers of 1 GPU (4 GPUs), kept 600 s; Job beside (2 GPUs) at 0 s runs 1200 s;
    second at 60 s, 5 workers (5 GPUs), 2 GPUs free, waits until first is deleted at 600 s
    (540 s), then runs 600-900 s; beside goes on as if they were Jobs."""
    stack = one_queue("BestEffortFIFO").kueue(manager=RAYCLUSTERS)
    jobs: list[Job | RayCluster] = [
        raycluster("first", "a", 4, at=0, runs=600),
        job("beside", "a", 2, at=0, runs=1200),
        raycluster("second", "a", 5, at=60, runs=300),
    ]
    run = by_name(replay(stack, jobs, tmp_path))
    assert {n: (w.kind, w.outcome, w.wait_seconds, w.gpus) for n, w in run.items()} == {
        "first": ("RayCluster", "finished", 0, 4),
        "beside": ("Job", "finished", 0, 2),
        "second": ("RayCluster", "finished", 540, 5),
    }
    assert [run[n].intervals for n in ("first", "beside", "second")] == [
        [(0, 600)],
        [(0, 1200)],
        [(600, 900)],
    ]


def test_a_raycluster_without_a_duration_holds_its_quota_to_the_end_of_the_replay(
    tmp_path: Path,
) -> None:
    """One queue of 8 GPUs: a RayCluster of 6 GPUs at 0 s and no duration runs to the end of
    the replay (admitted, never deleted); a Job of 4 GPUs at 10 s never fits beside it (pending),
    while a Job of 2 GPUs at 20 s runs its 100 s at once."""
    stack = one_queue("BestEffortFIFO").kueue(manager=RAYCLUSTERS)
    jobs: list[Job | RayCluster] = [
        raycluster("kept", "a", 6, at=0),
        job("big", "a", 4, at=10, runs=100),
        job("small", "a", 2, at=20, runs=100),
    ]
    run = by_name(replay(stack, jobs, tmp_path))
    assert {n: (w.outcome, w.wait_seconds) for n, w in run.items()} == {
        "kept": ("admitted", 0),
        "big": ("pending", None),
        "small": ("finished", 0),
    }
    assert run["small"].intervals == [(20, 120)]


def test_an_evicted_raycluster_stops_and_runs_again_and_is_finished_when_deleted(
    tmp_path: Path,
) -> None:
    """Kueue suspends a RayCluster it preempts (spec.suspend), and the engine removes its pods
    at once, as for a Job: one queue of 4 GPUs preempting lower priorities; low (a head and 4
    workers of 1 GPU) runs from 0 s, Job high (4 GPUs) at 60 s preempts it and runs 120 s; low
    is admitted again at 180 s and is kept its 600 s from then, to 780 s, when the replay
    deletes it: finished (its owner gone for its time being up, not for the preemption). The
    same mix with low as a Job of 4 pods runs the same."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=4)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .kueue(manager=RAYCLUSTERS)
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=4))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
    )
    high = job("high", "a", 4, at=60, runs=120, priority="high")
    as_cluster = by_name(replay(stack, [
        raycluster("low", "a", 4, at=0, runs=600, priority="low"), high,
    ], tmp_path))  # fmt: skip
    as_job = by_name(replay(stack, [
        job("low", "a", 1, at=0, runs=600, priority="low", pods=4), high,
    ], tmp_path))  # fmt: skip
    assert as_cluster["low"].intervals == [(0, 60), (180, 780)]
    assert as_cluster["low"].preemptions == 1
    for name in ("low", "high"):
        assert as_cluster[name].intervals == as_job[name].intervals
        assert as_cluster[name].outcome == as_job[name].outcome == "finished"


def test_the_docs_raycluster_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/raycluster.yaml on staging as it stands: unsupported, naming
    ray.io/raycluster; with it added, research's 4 H100 are free, so the RayCluster is admitted
    the second it is submitted (1h), its pods run its 3h (to 4h) and then it is deleted."""
    staging_example_with("RayCluster", "ray.io/raycluster", 4, tmp_path)


def test_the_docs_statefulset_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/statefulset.yaml on staging as it stands: unsupported, naming
    statefulset; with it added, research's 4 H100 are free, so the StatefulSet (two replicas of
    one H100, one Workload) is admitted the second it is submitted (1h), serves its 3h (to 4h)
    and, deleted then by its user, is finished."""
    staging_example_with("StatefulSet", "statefulset", 2, tmp_path)


def test_the_docs_deployment_example_replays_on_staging_with_the_integration_as_its_comment_says(
    tmp_path: Path,
) -> None:
    """docs/examples/mixes/deployment.yaml on staging as it stands: unsupported, naming
    deployment; with it added, research's 4 H100 are free, so both pods of the Deployment (two
    replicas of one H100, a Workload each) are admitted the second it is submitted (1h); it
    serves its 3h (to 4h) and, deleted then by its user, is finished, its 2 GPUs' 6 GPU-hours
    its pods' (3h each)."""
    w = staging_example_with("Deployment", "deployment", 2, tmp_path)
    assert w.message is None
    assert w.gpu_seconds * w.gpus == 2 * 3 * 3600


def serving(name: str, replicas: int, gpus: int, *, at: int, runs: int | None) -> dict[str, Any]:
    """Team a's Deployment of `replicas` pods of `gpus` GPUs each, submitted `at`, serving
    `runs` seconds (to the end without)."""
    labels = {"app": name}
    notes = {"gpu-queues.dev/submit-at": f"{at}s"}
    if runs is not None:
        notes["gpu-queues.dev/duration"] = f"{runs}s"
    container = {
        "name": "serve",
        "image": "busybox",
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS.format("a"), "annotations": notes,
                         "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [container]}}}}  # fmt: skip


def test_a_deployment_is_one_row_pending_until_its_last_replica_is_admitted(
    tmp_path: Path,
) -> None:
    """8 GPUs. Job a (4) runs 0-600 s; Deployment web (3 pods of 2, at 60 s): two pods fit
    beside a at once, the third waits for a's end, at 600 s: its row's wait is 540 s, and it is
    deleted 300 s after all three ran (900 s), finished; its GPU-hours are its pods' runs (840
    + 840 + 300 s of 2 GPUs). Until --until 500 it is pending, 2 of its 3 pods admitted, with
    Kueue's message for the third."""
    stack = one_queue("BestEffortFIFO").kueue(
        manager={"integrations": {"frameworks": ["batch/job", "deployment"]}}
    )
    mix = [job("a", "a", 4, at=0, runs=600), serving("web", 3, 2, at=60, runs=300)]
    w = by_name(replay(stack, mix, tmp_path))["web"]
    assert (w.kind, w.outcome, w.wait_seconds, w.gpus, w.flavor) == (
        "Deployment", "finished", 540, 6, "gpu"
    )  # fmt: skip
    assert w.intervals == [(600, 900)]
    assert w.gpu_seconds * w.gpus == 2 * (840 + 840 + 300)
    early = by_name(replay(stack, mix, tmp_path, until=500))["web"]
    assert (early.outcome, early.wait_seconds) == ("pending", None)
    assert (early.message or "").startswith("2 of 3 pods admitted: couldn't assign flavors")
    assert "insufficient unused quota for nvidia.com/gpu" in (early.message or ""), early.message


def test_a_deployment_whose_replica_kueue_preempted_gets_it_back_and_counts_the_preemption(
    tmp_path: Path,
) -> None:
    """One queue of 8 GPUs that preempts lower priorities. Deployment web (low, two pods of 4)
    from 0 s; Job high (4) at 60 s preempts one of its pods and runs 120 s. Until 120 s the
    ReplicaSet's new pod waits: the row is preempted, 1 of its 2 pods admitted. Then it is
    admitted at 180 s, and web serves on (admitted, its wait 0, one preemption): its pods ran
    0-600 and 0-60 plus 180-600 s of 4 GPUs each."""
    team = Team("a").namespace(NS.format("a")).quota("gpu", cpu=64, memory="512Gi", gpu=8)
    team.set(preemption={"withinClusterQueue": "LowerPriority"})
    stack = (
        Stack()
        .flavor(Flavor("gpu").capacity(cpu=64, memory="512Gi", gpu=8))
        .set("priorityClasses", [{"name": "low", "value": 10}, {"name": "high", "value": 1000}])
        .team(team)
        .kueue(manager={"integrations": {"frameworks": ["batch/job", "deployment"]}})
    )
    web = serving("web", 2, 4, at=0, runs=None)
    web["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "low"
    mix = [web, job("high", "a", 4, at=60, runs=120, priority="high")]
    early = by_name(replay(stack, mix, tmp_path, until=120))["web"]
    assert (early.outcome, early.preemptions) == ("preempted", 1)
    assert (early.message or "").startswith("1 of 2 pods admitted; "), early.message
    w = by_name(replay(stack, mix, tmp_path, until=600))["web"]
    assert (w.outcome, w.wait_seconds, w.preemptions, w.flavor) == ("admitted", 0, 1, "gpu")
    assert "InClusterQueue" in (w.message or ""), w.message
    assert w.intervals == [(0, 60), (180, None)]
    assert w.gpu_seconds * w.gpus == 4 * (600 + 60 + 420)
