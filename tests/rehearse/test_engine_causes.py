"""Each cause found of the what-if's two engines parting (docs/what-if.md, Where the engines
parted), reproduced on a small stack and mix worked out by hand (tests/rehearse/causes/<case>/),
replayed on both engines: the fast one, and a fresh sandbox with the real Kueue and
kube-scheduler. Each must tell the hand-worked story, step by step (admitted with its flavor,
ran with its pods' nodes, evicted with the reason, stopped), and the two stories must be the
same (gpu_queues.whatif.agreement). About a minute each on the sandbox.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.pins import kueue_version
from gpu_queues.whatif import agreement, fast
from gpu_queues.whatif.changes import changed_over
from gpu_queues.whatif.report import Run
from sandbox.crosscheck.run import placement_order

pytestmark = pytest.mark.rehearse

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


def test_an_ended_job_frees_its_quota_before_the_next_submission(tmp_path: Path):
    """The sandbox engine went on to the next event once the cluster was quiet for half a
    second, before the Job controller and Kueue had finished the ended job's Workload: a job
    submitted a minute after another ended found its quota still held and took the next
    flavor. One team, flavors first and second of 4 GPUs each:
    - 0s: a (4 GPUs, 10m) on first, runs to 10m.
    - 11m: b (4 GPUs) finds first free again: first, wait 0."""
    same_story("ended", tmp_path, {
        "a": [(0, "admitted", "first"), (0, "ran", "first-0"), (600, "stopped", "")],
        "b": [(660, "admitted", "first"), (660, "ran", "first-0"), (1260, "stopped", "")],
    })  # fmt: skip


def test_an_admission_kueue_undoes_within_the_instant_still_counts(tmp_path: Path):
    """The sandbox engine read admissions off the settled cluster, so one Kueue undid before
    the instant settled was never seen, and the workload's wait ran to its next admission. x
    (nominal 6 of 8 GPUs, reclaims what it lends) and y (nominal 2) share one node:
    - 0s: x0 (4), x1 (2, to 30m) and y0 (2, to 1h) fill the node.
    - 1m: xa (8) waits: x would need to borrow 8. 2m: xb (2) waits. 3m: y1 (2) waits.
    - 30m: x1 ends, 2 GPUs free. One scheduling cycle tries x's head, xa (no fit), then y1,
      which borrows the 2 and is admitted; the next tries x's next head, xb, within x's
      nominal quota: it reclaims them, y1 is preempted (InCohortReclamation) in the same
      instant, xb runs. y1 waited 27m (to its first admission), not 57m.
    - 1h: y0 ends; y1 runs in y's own quota to 1h30m, when xb ends too.
    - 2h: x0 ends; xa borrows y's idle 2 and runs to 2h10m."""
    same_story("transient", tmp_path, {
        "x0": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (7200, "stopped", "")],
        "x1": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (1800, "stopped", "")],
        "y0": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (3600, "stopped", "")],
        "xa": [(7200, "admitted", "pool"), (7200, "ran", "pool-0"), (7800, "stopped", "")],
        "xb": [(1800, "admitted", "pool"), (1800, "ran", "pool-0"), (5400, "stopped", "")],
        "y1": [(1800, "admitted", "pool"), (1800, "evicted", "Preempted (InCohortReclamation)"),
               (3600, "admitted", "pool"), (3600, "ran", "pool-0"), (5400, "stopped", "")],
    })  # fmt: skip


def test_equal_nodes_go_by_name_on_both_engines(tmp_path: Path):
    """Upstream kube-scheduler takes whichever of equally scored nodes its parallel filter
    listed first, not the same from run to run; the sandbox's breaks the tie by name, as the
    fast engine does. Two nodes of 8 GPUs (smaller than the system node, which Kueue's
    controller then takes):
    - 0s: j1 (4) on twin-0, the first of two equal nodes. 1m: j2 (4) on twin-1, the emptier.
    - 2m: j3 (8) is admitted (quota 16) but fits no node until j1 ends at 10m: twin-0."""
    same_story("ties", tmp_path, {
        "j1": [(0, "admitted", "twin"), (0, "ran", "twin-0"), (600, "stopped", "")],
        "j2": [(60, "admitted", "twin"), (60, "ran", "twin-1"), (1260, "stopped", "")],
        "j3": [(120, "admitted", "twin"), (600, "ran", "twin-0"), (1200, "stopped", "")],
    })  # fmt: skip


def test_kueue_s_own_pod_takes_room_on_a_gpu_node(tmp_path: Path):
    """Kueue's controller pod goes where the scheduler scores best, here the first of two GPU
    nodes larger than the system node; it takes a little of big-0, so the job's pod scores
    higher on big-1. (The fast engine left the controller out and chose big-0.)"""
    same_story("controller", tmp_path, {
        "j1": [(0, "admitted", "big"), (0, "ran", "big-1"), (600, "stopped", "")],
    })  # fmt: skip


def test_a_reclaim_takes_the_most_recently_admitted_of_equals(tmp_path: Path):
    """Jobs submitted at one instant reach Kueue one after another (kubectl applies them so,
    and the sandbox a second apart); Kueue preempts the most recently admitted of equal
    priority first. The fast engine gave them all one second, and Kueue's last tie-break,
    the UID, took the first submitted. x (nominal 4) borrows y's idle 4 at 0s with x1..x4
    (2 GPUs each); at 1m y1 (2) reclaims 2: x4, the last admitted, is preempted, and runs
    again when y1 ends at 31m."""
    same_story("reclaim", tmp_path, {
        **{f"x{i}": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (3600, "stopped", "")]
           for i in (1, 2, 3)},
        "x4": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (60, "evicted",
               "Preempted (InCohortReclamation)"), (60, "stopped", ""), (1860, "admitted", "pool"),
               (1860, "ran", "pool-0"), (5460, "stopped", "")],
        "y1": [(60, "admitted", "pool"), (60, "ran", "pool-0"), (1860, "stopped", "")],
    })  # fmt: skip


def test_a_strict_fifo_head_that_never_fits_lets_the_cluster_settle(tmp_path: Path):
    """Kueue v0.18 tries a StrictFIFO head that never fits at every scheduling cycle and
    rewrites its message each time (naming the resource a map gave first), so the sandbox
    never saw the quiet that ends an instant and waited out its 90 s cap at every event. The
    rewrites no longer count as changes: every instant settles in seconds. fifo's big (6 GPUs,
    quota 4) waits for ever, and behind holds `behind`; other's jobs run."""
    real = same_story("strict", tmp_path, {
        "big": [], "behind": [],
        "o1": [(120, "admitted", "pool"), (120, "ran", "pool-0"), (720, "stopped", "")],
        "o2": [(1800, "admitted", "pool"), (1800, "ran", "pool-0"), (2400, "stopped", "")],
    })  # fmt: skip
    assert not [n for n in real.meta.notes if "had not settled" in n]
    assert real.meta.settle_max_seconds < 30


def test_a_waiting_pod_takes_the_first_node_a_job_s_end_frees(tmp_path: Path):
    """A job's pods end one at a time, and kube-scheduler tries the pods that wait for a node
    on each one's end: the waiting pod takes the first node freed, not the one it would score
    best with the whole job gone (seed 35 of the cross-check parted so). Which pod ends first
    was a race on the sandbox; both engines now end them in their nodes' name order. Three
    nodes of 8 GPUs and 8 CPUs:
    - 0s: c (1 CPU) on pool-0, the first of equals. 30s: s (7 CPUs) on pool-1, the emptier.
    - 1m: m (2 pods of 8 GPUs) on pool-2 (empty) and pool-0.
    - 2m: big (8 GPUs) is admitted (quota 24) but fits no node: pool-1 has 1 CPU left.
    - 11m: m ends, pool-0's pod first: big takes pool-0 (it would score pool-2 best, empty,
      had both ended at once), and runs to 21m."""
    same_story("ends", tmp_path, {
        "c": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (1800, "stopped", "")],
        "s": [(30, "admitted", "pool"), (30, "ran", "pool-1"), (1830, "stopped", "")],
        "m": [(60, "admitted", "pool"), (60, "ran", "pool-0, pool-2"), (660, "stopped", "")],
        "big": [(120, "admitted", "pool"), (660, "ran", "pool-0"), (1260, "stopped", "")],
    })  # fmt: skip


def test_a_cohort_tree_with_a_division_s_own_quota_on_both_engines(tmp_path: Path):
    """Issue 39 on the real Kueue: a root cohort, two divisions (research with 8 GPUs of its own
    that it lends to no one outside, lendingLimit 0; product with none), a team in each with 8
    GPUs that may borrow 8, ads with a second namespace and LocalQueue, and a team held by
    stopPolicy: Hold. Four nodes of 8 GPUs:
    - 0s: a1 (llm) on pool-0, b1 (ads) on pool-1, on their own quota; c1 (frozen) never.
    - 1m: b2 (ads, through ct-ads-eval's queue) may borrow nothing: it waits for b1's end.
    - 2m: a2 (llm) borrows its division's 8, on pool-2. 3m: a3 is past llm's borrowing limit.
    - 10m: b1 ends, b2 takes its node. 22m: a2 ends, a3 runs, on pool-1 (b2 ended at 20m)."""
    real = same_story("tree", tmp_path, {
        "a1": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (1800, "stopped", "")],
        "b1": [(0, "admitted", "pool"), (0, "ran", "pool-1"), (600, "stopped", "")],
        "b2": [(600, "admitted", "pool"), (600, "ran", "pool-1"), (1200, "stopped", "")],
        "a2": [(120, "admitted", "pool"), (120, "ran", "pool-2"), (1320, "stopped", "")],
        "a3": [(1320, "admitted", "pool"), (1320, "ran", "pool-1"), (2520, "stopped", "")],
        "c1": [],
    })  # fmt: skip
    held = next(w for w in real.workloads if w.name == "c1")
    assert held.outcome == "pending" and "inactive" in (held.message or "")


def test_fair_sharing_weights_on_both_engines(tmp_path: Path):
    """Issue 39 on the real Kueue: fair sharing's weights (the weights case; the fast engine's
    story is worked out by hand in tests/toolchain/test_whatif_engine.py,
    test_fair_sharing_weights_give_the_heavier_team_twice_the_borrowed_gpus). light fills the
    cohort's 12 GPUs; heavy, of weight 2, preempts until it holds 8 and light 4: both engines
    tell the same story, step by step."""
    real, quick = stories("weights", tmp_path)
    assert agreement.explain(real, quick, ("sandbox", "fast")) == ""
    at_one_minute = {w.name: [(e, d) for t, e, d in w.timeline if t == 60] for w in real.workloads}
    assert sum(("admitted", "pool") in s for s in at_one_minute.values()) == 8
    assert (
        sum(("evicted", "Preempted (InCohortFairSharing)") in s for s in at_one_minute.values())
        == 8
    )


def drained(case: str) -> list[tuple[float, str]]:
    """Team a held at 30m, drained at 1h, started again at 1h30m: the stack file's text with
    its stopPolicy: None changed (the drain case's stack sets it for this)."""
    text = stack_text(case)
    assert text.count("stopPolicy: None") == 1
    return [
        (at, text.replace("stopPolicy: None", f"stopPolicy: {policy}"))
        for at, policy in ((1800, "Hold"), (3600, "HoldAndDrain"), (5400, "None"))
    ]


def test_a_team_held_drained_and_started_again_mid_replay(tmp_path: Path):
    """Issue 39, a stopPolicy change at an instant of the replay (`--change`), on the real
    Kueue and the fast engine alike. Teams a and b hold 4 GPUs each of one node of 8:
    - 0s: a1 (4 GPUs, 3h) and b1 (4, 3h) run.
    - 30m: a is held (Hold): a1 keeps running. 40m: a3 (2, 20m) waits, a admits nothing.
    - 1h: a is drained (HoldAndDrain): a1 is evicted (ClusterQueueStopped).
    - 1h30m: a starts again (None). a3, waiting in the queue, is admitted at once; a1 comes
      back only once Kueue's workload controller has marked it requeued (the queue manager
      hears of the start in memory and wakes the scheduler first, seen on the sandbox every
      run), and waits for a3's 2 GPUs: 1h50m, for its whole 3h again. b1 never notices."""
    same_story("drain", tmp_path, {
        "a1": [(0, "admitted", "pool"), (0, "ran", "pool-0"),
               (3600, "evicted", "ClusterQueueStopped"), (3600, "stopped", ""),
               (6600, "admitted", "pool"), (6600, "ran", "pool-0"), (17400, "stopped", "")],
        "b1": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (10800, "stopped", "")],
        "a3": [(5400, "admitted", "pool"), (5400, "ran", "pool-0"), (6600, "stopped", "")],
    }, drained("drain"))  # fmt: skip


def test_a_jobset_jobs_and_a_pod_on_both_engines(tmp_path: Path):
    """Issue 40: a mix of every kind the sandbox replays. A JobSet goes through JobSet's own
    controller on the sandbox (sandbox/jobset.py) and Kueue's jobset reconciler on the fast
    engine, beside Jobs and a plain Pod. Kueue gives each pod set (a replicated job) a flavor of
    its own. Flavors first and second, one 8-GPU node each, quota 8 GPUs on each; a JobSet here
    is a leader (1 pod, 2 GPUs) and workers (2 pods, 3 GPUs each), 8 GPUs:
    - 0s: js1 on first, its three pods on first-0, to 10m.
    - 1m: j (4) finds first full: second. 2m: k (6) fits neither: waits. 3m: js2 waits.
    - 4m: p (1 GPU) fits second's 4 free: admitted past the two waiting (BestEffortFIFO), to 9m.
    - 10m: js1 ends; k, the head, takes first (6 of 8). js2's leader would fit first's 2 GPUs
      but its workers (6) not second's 4 free: it waits, admitted whole or not at all.
    - 11m: j ends; js2's leader goes to first (2 free), its workers to second, and runs to 21m.
    - 16m: k ends."""
    same_story("jobset", tmp_path, {
        "js1": [(0, "admitted", "first"), (0, "ran", "first-0, first-0, first-0"),
                (600, "stopped", "")],
        "j": [(60, "admitted", "second"), (60, "ran", "second-0"), (660, "stopped", "")],
        "k": [(600, "admitted", "first"), (600, "ran", "first-0"), (960, "stopped", "")],
        "js2": [(660, "admitted", "first, second"), (660, "ran", "first-0, second-0, second-0"),
                (1260, "stopped", "")],
        "p": [(240, "admitted", "second"), (240, "ran", "second-0"), (540, "stopped", "")],
    })  # fmt: skip


def test_a_jobsets_pods_spread_a_jobs_do_not_on_both_engines(tmp_path: Path):
    """Cross-check seed 601: JobSet's controller makes a headless Service selecting a JobSet's
    pods (network.enableDNSHostnames, true unless said false), and kube-scheduler's
    PodTopologySpread then scores them with its system default constraints (hostname maxSkew 3,
    zone maxSkew 5; weight 2): it spreads them where the resource scores alone would stack
    them. Two nodes of 8 CPUs, 32Gi and 8 GPUs; pods of 1 CPU, 4Gi and a GPU:
    - 0s: load (2 CPUs, 8Gi) on twin-0 (a tie, by name), to 2h.
    - 1m: js's first pod on twin-1 (LeastAllocated 87 against 62, BalancedAllocation 75 on
      both, spread alike); its second: resources twin-1 75+75 = 150, twin-0 62+75 = 137, but
      the spread's raw scores are twin-0 0*ln(4)+2 = 2, twin-1 round(1*ln(4)+2) = 3,
      normalised 100 and 66, weighted 2: twin-0 337 against 282. To 11m.
    - 20m: pair, a Job of two such pods: no Service selects them, both on twin-1 (162, then
      150 against 137). To 30m.
    - 40m: nodns, js again with enableDNSHostnames false: no Service, both on twin-1."""
    same_story("spread", tmp_path, {
        "load": [(0, "admitted", "twin"), (0, "ran", "twin-0"), (7200, "stopped", "")],
        "js": [(60, "admitted", "twin"), (60, "ran", "twin-0, twin-1"), (660, "stopped", "")],
        "pair": [(1200, "admitted", "twin"), (1200, "ran", "twin-1, twin-1"),
                 (1800, "stopped", "")],
        "nodns": [(2400, "admitted", "twin"), (2400, "ran", "twin-1, twin-1"),
                  (3000, "stopped", "")],
    })  # fmt: skip


def test_a_preempted_jobset_stops_and_runs_again_whole_on_both_engines(tmp_path: Path):
    """A JobSet's eviction: Kueue suspends it; on the sandbox JobSet's controller then suspends
    its Jobs and their pods go, on the fast engine its pods stop at once. One 8-GPU node, quota
    8; train (low priority) is a leader (2 GPUs) and workers (2 pods x 3 GPUs):
    - 0s: train runs, 30m of work. 5m: urgent (high, 4 GPUs, 10m) preempts it (InClusterQueue).
    - 15m: urgent ends; train is admitted again and runs its whole 30m again, to 45m."""
    same_story("jobset-preempted", tmp_path, {
        "train": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0, pool-0"),
                  (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
                  (900, "admitted", "pool"), (900, "ran", "pool-0, pool-0, pool-0"),
                  (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
    })  # fmt: skip


def test_topology_aware_jobs_wait_for_their_domain_on_both_engines(tmp_path: Path):
    """Topology-aware scheduling (docs/topology.md), which the fast engine plays with Kueue's
    own TAS cache and the ungater's nodeSelector per domain: a pod set that requires a domain
    waits for a whole one, with GPUs and quota to spare elsewhere; one that prefers it does
    not. 2 blocks of 2 racks of 2 nodes of 8 GPUs (tas-0..7, a rack 2 nodes in name order),
    quota 64 GPUs; fill-N (1 GPU, held to tas-N) leaves that node short of a whole-node pod:
    - 0s: fill-0, fill-2 (to 2h), fill-4, fill-5 (to 1h30m), fill-6 (to 30m): no rack whole.
    - 1m: rack (2 pods of 8, requires a rack) waits with 59 GPUs free.
    - 2m: near (the same, prefers a rack) is admitted at once on block-0's whole nodes, tas-1
      and tas-3 (block-1 has one, tas-7), to 1h02m.
    - 3m: block (a JobSet of 2 x 2 workers of 8, requires a block) waits.
    - 30m: fill-6 ends, rack-3 is whole: rack on tas-6, tas-7, to 50m.
    - 1h30m: fill-4 and fill-5 end, block-1 is whole: block on tas-4..7, to 1h40m."""
    same_story("topology", tmp_path, {
        **{f"fill-{n}": [(0, "admitted", "tas"), (0, "ran", f"tas-{n}"), (end, "stopped", "")]
           for n, end in ((0, 7200), (2, 7200), (4, 5400), (5, 5400), (6, 1800))},
        "rack": [(1800, "admitted", "tas"), (1800, "ran", "tas-6, tas-7"), (3000, "stopped", "")],
        "near": [(120, "admitted", "tas"), (120, "ran", "tas-1, tas-3"), (3720, "stopped", "")],
        "block": [(5400, "admitted", "tas"), (5400, "ran", "tas-4, tas-5, tas-6, tas-7"),
                  (6000, "stopped", "")],
    })  # fmt: skip


def test_pod_groups_on_both_engines(tmp_path: Path):
    """Issue 40: a pod group (plain Pods of one kueue.x-k8s.io/pod-group-name) is one
    workload: Kueue makes one Workload once all its pods exist, admits it whole and ungates
    its pods together. One 8-GPU node, quota 8:
    - 0s: a (a Job, 6 GPUs) runs to 10m.
    - 1m: g (two pods of 2 GPUs): one pod would fit beside a (6+2), the group does not
      (6+4): it waits, is admitted when a ends at 10m, both pods on pool-0, and runs to 15m.
    - 2m: h names 3 pods and the mix has 2: Kueue makes no Workload for it; it waits and
      holds nothing (pending on both engines, with the reason)."""
    real = same_story("podgroup", tmp_path, {
        "a": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (600, "stopped", "")],
        "g": [(600, "admitted", "pool"), (600, "ran", "pool-0, pool-0"), (900, "stopped", "")],
        "h": [],
    })  # fmt: skip
    assert [(w.name, w.outcome) for w in real.workloads] == [
        ("a", "finished"),
        ("g", "finished"),
        ("h", "pending"),
    ]


def test_a_preempted_lws_group_is_made_again_and_readmitted_on_both_engines(tmp_path: Path):
    """A LeaderWorkerSet's group is a Workload of Kueue's leaderworkerset integration; Kueue
    preempts it by deleting its pods, and LWS's StatefulSets (the sandbox's real ones, the
    fast engine's part of them) make them again, gated, until it is admitted again. One 8-GPU
    node, quota 8; serve (low) is one group: a leader (2 GPUs) and 2 workers (3 GPUs each):
    - 0s: serve runs, kept 30m. 5m: urgent (high, 4 GPUs, 10m) preempts it (InClusterQueue).
    - 15m: urgent ends; serve's group is admitted again, its pods run again, and its user
      deletes it 30m after, at 45m (its run begun again).
    - 20m: later (low, one group of 2 pods of 2 GPUs, no leader template) waits for quota;
      serve's deletion frees it at 45m, and later serves its 10m, to 55m."""
    same_story("lws", tmp_path, {
        "serve": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0, pool-0"),
                  (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
                  (900, "admitted", "pool"), (900, "ran", "pool-0, pool-0, pool-0"),
                  (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
        "later": [(2700, "admitted", "pool"), (2700, "ran", "pool-0, pool-0"),
                  (3300, "stopped", "")],
    })  # fmt: skip


def test_an_lws_s_groups_are_admitted_each_on_its_own_on_both_engines(tmp_path: Path):
    """Kueue admits each group of a LeaderWorkerSet as a Workload of its own (named after the
    group); the LWS's row is its groups' (admitted when its last group first was, its runs
    when they all ran together). One 8-GPU node, quota 8:
    - 0s: a (a Job, 4 GPUs) runs to 10m.
    - 1m: serve (2 groups, each a leader and a worker of 2 GPUs): group 0 is admitted beside a
      (4+4), group 1 waits; a ends at 10m and group 1 is admitted: serve's wait is 9m (its
      last group's), and it serves its 20m from then, deleted at 30m.
    - 11m: b (4 GPUs) waits for serve's deletion, then runs 30m-35m."""
    real = same_story("lws-groups", tmp_path, {
        "a": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (600, "stopped", "")],
        "serve": [(60, "admitted", "pool"), (60, "ran", "pool-0, pool-0"),
                  (600, "admitted", "pool"), (600, "ran", "pool-0, pool-0"),
                  (1800, "stopped", "")],
        "b": [(1800, "admitted", "pool"), (1800, "ran", "pool-0"), (2100, "stopped", "")],
    })  # fmt: skip
    serve = next(w for w in real.workloads if w.name == "serve")
    assert (serve.outcome, serve.wait_seconds, serve.flavor) == ("finished", 540, "pool")
    assert serve.gpu_seconds * serve.gpus == 4 * (1740 + 1200)  # its groups' runs, 4 GPUs each


def test_a_preempted_raycluster_is_suspended_and_readmitted_on_both_engines(tmp_path: Path):
    """A RayCluster is a Workload of Kueue's raycluster integration (a `head` pod set and one
    per worker group); Kueue preempts it by suspending it, and KubeRay (the sandbox's real
    operator, the fast engine's part of it) deletes its pods, then makes them again once it is
    admitted again. One 8-GPU node, quota 8; notebook (low) is a head (no GPU) and a worker
    group of 2 pods of 3 GPUs:
    - 0s: notebook runs, kept 30m. 5m: urgent (high, 4 GPUs, 10m) preempts it (InClusterQueue).
    - 15m: urgent ends; notebook is admitted again, its pods run again, and its user deletes it
      30m after, at 45m (its run begun again).
    - 20m: later (low, a head and one worker of 4 GPUs) waits for quota; notebook's deletion
      frees it at 45m, and later runs its 10m, to 55m."""
    same_story("raycluster", tmp_path, {
        "notebook": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0, pool-0"),
                     (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
                     (900, "admitted", "pool"), (900, "ran", "pool-0, pool-0, pool-0"),
                     (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
        "later": [(2700, "admitted", "pool"), (2700, "ran", "pool-0, pool-0"),
                  (3300, "stopped", "")],
    })  # fmt: skip


def test_a_preempted_pytorchjob_is_suspended_and_readmitted_on_both_engines(tmp_path: Path):
    """A PyTorchJob is a Workload of Kueue's pytorchjob integration (a `master` and a `worker`
    pod set); Kueue preempts it by suspending it (runPolicy.suspend), and the training-operator
    (the sandbox's real one, the fast engine's part of it) deletes its pods, then makes them
    again once it is admitted again. Its time up, its pods end and the operator marks it
    Succeeded, which Kueue reads as finished. One 8-GPU node, quota 8; train (low) is a Master
    and 2 Workers of 2 GPUs each:
    - 0s: train runs, 30m. 5m: urgent (high, 4 GPUs, 10m) preempts it (InClusterQueue).
    - 15m: urgent ends; train is admitted again, its pods run again, and it ends 30m after, at
      45m (its run begun again).
    - 20m: later (low, a Master and a Worker of 2 GPUs) waits for quota; train's end frees it
      at 45m, and later runs its 10m, to 55m."""
    same_story("pytorchjob", tmp_path, {
        "train": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0, pool-0"),
                  (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
                  (900, "admitted", "pool"), (900, "ran", "pool-0, pool-0, pool-0"),
                  (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
        "later": [(2700, "admitted", "pool"), (2700, "ran", "pool-0, pool-0"),
                  (3300, "stopped", "")],
    })  # fmt: skip


def test_a_preempted_mpijob_is_suspended_readmitted_and_ends_with_its_launcher_on_both_engines(
    tmp_path: Path,
):
    """An MPIJob is a Workload of Kueue's mpijob integration (a `launcher` and a `worker` pod
    set); Kueue preempts it by suspending it, and the mpi-operator (the sandbox's real one, the
    fast engine's part of it) deletes its workers and suspends its launcher Job, then runs them
    again once it is admitted again. It ends by itself: its launcher's end is its end, when the
    replay completes its pods at its duration (the fast engine marks it Succeeded then). One
    8-GPU node, quota 8; allreduce (low) is a launcher (no GPU) and 2 workers of 3 GPUs:
    - 0s: allreduce runs, for 30m. 5m: urgent (high, 4 GPUs, 10m) preempts it (InClusterQueue).
    - 15m: urgent ends; allreduce is admitted again, its pods run again, and it runs its 30m
      anew, to 45m.
    - 20m: later (low, a launcher and one worker of 4 GPUs) waits for quota; allreduce's end
      frees it at 45m, and later runs its 10m, to 55m."""
    same_story("mpijob", tmp_path, {
        "allreduce": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0, pool-0"),
                      (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
                      (900, "admitted", "pool"), (900, "ran", "pool-0, pool-0, pool-0"),
                      (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
        "later": [(2700, "admitted", "pool"), (2700, "ran", "pool-0, pool-0"),
                  (3300, "stopped", "")],
    })  # fmt: skip


def test_the_other_kubeflow_v1_jobs_run_and_wait_for_quota_on_both_engines(tmp_path: Path):
    """A TFJob, an XGBoostJob, a PaddleJob and a JAXJob, each through its own Kueue integration
    and the training-operator's scheme for it (the sandbox's real one), each ended at its
    duration by its pods' end, which the operator reads as its success. One 8-GPU node, quota
    8; each takes 4 GPUs, 10m:
    - 0s: tf (a PS of no GPU, 2 Workers of 2) runs to 10m. 1m: xgb (a Master and a Worker of 2)
      fills the node, to 11m.
    - 2m: paddle (a Master and a Worker of 2) waits for tf's end: 10m-20m.
    - 3m: jax (2 Workers of 2) waits for xgb's: 11m-21m."""
    same_story("kubeflow-v1", tmp_path, {
        "tf": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0, pool-0"), (600, "stopped", "")],
        "xgb": [(60, "admitted", "pool"), (60, "ran", "pool-0, pool-0"), (660, "stopped", "")],
        "paddle": [(600, "admitted", "pool"), (600, "ran", "pool-0, pool-0"),
                   (1200, "stopped", "")],
        "jax": [(660, "admitted", "pool"), (660, "ran", "pool-0, pool-0"), (1260, "stopped", "")],
    })  # fmt: skip


def test_a_preempted_trainjob_is_suspended_and_readmitted_on_both_engines(tmp_path: Path):
    """A TrainJob is a Workload of Kueue's trainjob integration, a pod set per replicated job of
    its runtime (the mix's ClusterTrainingRuntime: one, `node`, of numNodes pods); Kueue preempts
    it by suspending it, the Trainer suspends its JobSet and JobSet's controller its Jobs, whose
    pods go (the sandbox's real controllers; the fast engine's Kueue reconciler with the part of
    the Trainer it reads), and they are made again once it is admitted again. One 8-GPU node,
    quota 8; tune (low) is 2 nodes of 3 GPUs:
    - 0s: tune runs, 30m. 5m: urgent (high, 4 GPUs, 10m) preempts it (InClusterQueue).
    - 15m: urgent ends; tune is admitted again, its pods run again, and it runs its whole 30m
      again, to 45m.
    - 20m: later (low, 1 node of 4 GPUs) waits for quota; tune's end frees it at 45m, and later
      runs its 10m, to 55m."""
    same_story("trainjob", tmp_path, {
        "tune": [(0, "admitted", "pool"), (0, "ran", "pool-0, pool-0"),
                 (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
                 (900, "admitted", "pool"), (900, "ran", "pool-0, pool-0"),
                 (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
        "later": [(2700, "admitted", "pool"), (2700, "ran", "pool-0"), (3300, "stopped", "")],
    })  # fmt: skip


def test_a_deployment_and_a_statefulset_serving_on_both_engines(tmp_path: Path):
    """Serving workloads: a Deployment's pods are each a Workload of Kueue's pod integration,
    admitted one by one (kube-controller-manager's ReplicaSet makes them on the sandbox); a
    StatefulSet's are one group Workload. Neither ends by itself: its user deletes it when its
    duration is up, counted from when all its replicas ran. One 8-GPU node, quota 8:
    - 0s: a (a Job, 6 GPUs) runs to 10m.
    - 1m: web (a Deployment, 2 replicas of 2 GPUs): one pod is admitted beside a (6+2), the
      other waits; a ends at 10m and it is admitted: web's wait is 9m (its last replica's),
      and it serves its 20m from then, deleted at 30m.
    - 11m: db (a StatefulSet, 2 pods of 2 GPUs) takes the 4 GPUs left, to 21m, when its user
      deletes it.
    - 12m: b (4 GPUs) waits for db's deletion, then runs 21m-26m."""
    real = same_story("serving", tmp_path, {
        "a": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (600, "stopped", "")],
        "web": [(60, "admitted", "pool"), (60, "ran", "pool-0"), (600, "admitted", "pool"),
                (600, "ran", "pool-0"), (1800, "stopped", "")],
        "db": [(660, "admitted", "pool"), (660, "ran", "pool-0, pool-0"), (1260, "stopped", "")],
        "b": [(1260, "admitted", "pool"), (1260, "ran", "pool-0"), (1560, "stopped", "")],
    })  # fmt: skip
    web = next(w for w in real.workloads if w.name == "web")
    assert (web.outcome, web.wait_seconds, web.flavor) == ("finished", 540, "pool")
    assert web.gpu_seconds * web.gpus == 2 * (1740 + 1200)  # its pods' runs, 2 GPUs each
    assert [(w.name, w.outcome) for w in real.workloads] == [
        ("a", "finished"), ("web", "finished"), ("db", "finished"), ("b", "finished"),
    ]  # fmt: skip


def test_a_deployment_s_preempted_replica_is_made_again_serving_on_both_engines(tmp_path: Path):
    """Kueue preempts a Deployment's replica by deleting its pod; the ReplicaSet makes another
    in its place, a new Workload that queues on its own. One 8-GPU node, quota 8, priorities
    low and high:
    - 0s: web (low, 2 replicas of 4 GPUs) is admitted and runs whole; it serves 1h from then.
    - 1m: high (4 GPUs, 2m) preempts one of web's pods (InClusterQueue): web runs short a
      replica from then; the new pod waits.
    - 3m: high ends; the new pod is admitted and runs; web runs whole again to 1h, when its
      user deletes it. Its GPU time is its pods' runs (1h, 1m and 57m of 4 GPUs).
    The sandbox's replay once missed the replica's eviction step (CI's run of 6 December): a
    preempted replica's Workload (its pod deleted, never admitted again) can reach the watch
    already finished or only as deleted; its Evicted and Preempted conditions say it was
    evicted all the same (sandbox/replay/holds.py)."""
    real, quick = stories("serving-preempted", tmp_path)
    want: Story = {
        "web": [(0, "admitted", "pool"), (0, "ran", "pool-0"), (0, "admitted", "pool"),
                (0, "ran", "pool-0"), (60, "evicted", "Preempted (InClusterQueue)"),
                (60, "stopped", ""), (180, "admitted", "pool"),
                (180, "ran", "pool-0"), (3600, "stopped", "")],
        "high": [(60, "admitted", "pool"), (60, "ran", "pool-0"), (180, "stopped", "")],
    }  # fmt: skip
    assert told(quick) == want, "the fast engine tells another story than the hand-worked one"
    assert agreement.differences(real, quick) == []  # outcome, flavor and wait of each
    assert told(real) == want
    web = next(w for w in quick.workloads if w.name == "web")
    assert (web.outcome, web.wait_seconds, web.preemptions) == ("finished", 0, 1)
    for w in (web, next(w for w in real.workloads if w.name == "web")):
        assert w.gpu_seconds * w.gpus == 4 * (3600 + 60 + 3420)


def test_a_strict_fifo_head_whose_attempts_alternate_comes_to_rest(tmp_path: Path):
    """A StrictFIFO head that fits nowhere and whose attempts alternate: speech's JobSet j004 (a
    CPU leader of 24 cpu, 2 workers of 4 GPUs) is tried with its leader on one flavor, then on
    the other, each attempt writing the other message, and each write of a pending Workload
    puts it back into its heap (Kueue's workload controller), so Kueue's scheduler goes round
    and round until something else happens. The fast engine never came to rest at 3720 s (it
    took each rewording for a change); it now takes a cycle that leaves what an earlier cycle of
    the instant left for rest. The story:
    - 300s: rl's j000 on h100; 1020s: nlp's j001 on a100, to 8220s. 1320s: rl's j002 waits.
    - 3720s: j004 waits, going round, until j001 ends at 8220s: its workers on a100, its
      leader on the flavor the round was at, and it runs 3h, to 19020s.
    - j002 then, to 26220s; j003 (2880s) after it, to 27420s.
    Which flavor the leader is at when j001 ends is the wall clock's on a cluster (the round
    takes milliseconds): the fast engine stops the round at its first repeat, the leader on
    h100; the sandbox's was on a100 when it ran. Every other step is the same."""
    real, quick = stories("alternating", tmp_path)
    want: Story = {
        "j000": [(300, "admitted", "h100"), (300, "ran", "h100-0"), (7500, "stopped", "")],
        "j001": [(1020, "admitted", "a100"), (1020, "ran", "a100-0"), (8220, "stopped", "")],
        "j002": [(19020, "admitted", "a100"), (19020, "ran", "a100-0"), (26220, "stopped", "")],
        "j003": [(26220, "admitted", "a100"), (26220, "ran", "a100-0, a100-1"),
                 (27420, "stopped", "")],
        "j004": [(8220, "admitted", "a100"), (8220, "ran", "a100-0, a100-1, h100-1"),
                 (19020, "stopped", "")],
    }  # fmt: skip
    assert told(quick) == want, "the fast engine tells another story than the hand-worked one"
    assert agreement.differences(real, quick) == []  # outcome, flavor and wait of each
    on_sandbox = told(real)
    leader = on_sandbox["j004"][1]
    assert leader[:2] == (8220, "ran") and leader[2] in ("a100-0, a100-1, h100-1",
                                                         "a100-0, a100-1, a100-2")  # fmt: skip
    on_sandbox["j004"][1] = want["j004"][1]
    assert on_sandbox == want
