"""Each cause found of the what-if's two engines parting on Kueue's integrations (docs/what-if.md,
Where the engines parted; issue 40): JobSet, LWS, pod groups, KubeRay, the Kubeflow jobs (v1,
MPIJob, TrainJob) and serving workloads, each run by its own controller on the sandbox
(sandbox/README.md) and by Kueue's reconciler on the fast engine; reproduced on a small stack
and mix worked out by hand (tests/rehearse/causes/<case>/), replayed on both engines
(tests/rehearse/stories.py). Each must tell the hand-worked story, step by step, and the two
stories must be the same. One to four minutes each on the sandbox; Kueue's scheduling causes are
test_engine_causes.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.whatif import agreement
from tests.rehearse.stories import Story, same_story, stories, told

pytestmark = pytest.mark.rehearse


def preempted_then_readmitted(job: str, pods: int, later_pods: int) -> Story:
    """The story the operators' preemption causes share, on one 8-GPU node of quota 8 (their
    mixes alike but for the kind): `job` (low, `pods` pods) runs from 0s; at 5m urgent (high, 4
    GPUs, 10m) preempts it (InClusterQueue); at 15m urgent ends and `job` is admitted again, its
    pods made again, and runs its 30m anew, to 45m; later (low, `later_pods` pods), submitted at
    20m, waits for quota until `job` ends at 45m and runs its 10m, to 55m."""
    nodes, later = ", ".join(["pool-0"] * pods), ", ".join(["pool-0"] * later_pods)
    return {
        job: [(0, "admitted", "pool"), (0, "ran", nodes),
              (300, "evicted", "Preempted (InClusterQueue)"), (300, "stopped", ""),
              (900, "admitted", "pool"), (900, "ran", nodes), (2700, "stopped", "")],
        "urgent": [(300, "admitted", "pool"), (300, "ran", "pool-0"), (900, "stopped", "")],
        "later": [(2700, "admitted", "pool"), (2700, "ran", later), (3300, "stopped", "")],
    }  # fmt: skip


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
    same_story("raycluster", tmp_path, preempted_then_readmitted("notebook", 3, 2))


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
    same_story("pytorchjob", tmp_path, preempted_then_readmitted("train", 3, 2))


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
    same_story("mpijob", tmp_path, preempted_then_readmitted("allreduce", 3, 2))


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
    same_story("trainjob", tmp_path, preempted_then_readmitted("tune", 2, 1))


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
