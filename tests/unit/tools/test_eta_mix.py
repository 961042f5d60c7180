"""`gpuq status --eta`'s mix, made from a hand-written snapshot (Kueue v1beta2 Workloads and
their Jobs): the time left of what runs, the team median when a job has no duration, unknown
when there is neither, the order (admitted first by admission, pending in Kueue's order), and
the workloads that cannot be replayed. Every expected figure is worked out by hand in the test.
The replay of such a mix on the sandbox is tests/e2e/test_eta.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.tools.eta_mix import plan
from gpu_queues.tools.status import Snapshot
from gpu_queues.whatif.mix import Catalog
from tests.builders import Flavor, Job, Stack, Team, Workload

pytestmark = pytest.mark.unit

NOW = 1796126400.0  # 2026-12-01T12:00:00Z
DAY = 86400.0
TEAM_OF = {"vision-cq": "vision", "nlp-cq": "nlp"}
QUEUE_OF = {"vision": "vision-queue", "nlp": "nlp-queue"}


def iso(seconds_before_now: float) -> str:
    return datetime.fromtimestamp(NOW - seconds_before_now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


POD_SPEC = {
    "restartPolicy": "Never",
    "containers": [
        {
            "name": "main",
            "image": "x",
            "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
        }
    ],
}


def workload(
    name: str,
    ns: str,
    *,
    created: float,
    reserved: float | None = None,
    finished: float | None = None,
    pod_sets: int = 1,
    active: bool = True,
) -> dict[str, Any]:
    """A Job's Workload, times in seconds before NOW."""
    wl = (
        Workload(f"job-{name}-abcde", ns).created(iso(created)).owner("Job", name, f"uid-{name}")
        .queue(QUEUE_OF[ns]).active(active)
    )  # fmt: skip
    for _ in range(pod_sets):
        wl.pod_set(POD_SPEC)
    if reserved is not None:
        wl.reserve_quota(f"{ns}-cq", {"nvidia.com/gpu": "h100"}, iso(reserved))
    else:
        wl.pending(iso(created))
    if finished is not None:
        wl.finished(iso(finished))
    return wl.obj()


def job(name: str, ns: str, duration: str | None = None, started: float | None = None) -> Any:
    built = Job(name, ns).uid(f"uid-{name}")
    if duration:
        built.duration(duration)
    if started is not None:
        built.start_time(iso(started))
    return built.obj()


def config() -> StackConfig:
    h100 = Flavor("h100").labels({"gpu-queues.dev/pool": "h100"})
    teams = [
        Team(t).namespace(t).cluster_queue(f"{t}-cq").local_queue(f"{t}-queue")
        .quota("h100", cpu=32, memory="256Gi", gpu=4)
        for t in ("vision", "nlp")
    ]  # fmt: skip
    stack = Stack().flavor(h100.capacity(cpu=64, memory="512Gi", gpu=8)).team(*teams)
    return load_config(stack.raw())


def make_plan(
    workloads: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    positions: dict[str, tuple[int, int]] | None = None,
) -> Any:
    by_name = {(j["metadata"]["namespace"], j["metadata"]["name"]): j for j in jobs}
    snap = Snapshot(
        NOW,
        [("vision", "vision-cq"), ("nlp", "nlp-cq")],
        {},
        [(w, f"{w['metadata']['namespace']}-cq", w["metadata"]["namespace"]) for w in workloads],
        positions or {},
    )
    cfg = config()
    return plan(
        snap,
        lambda kind, ns, name: by_name.get((ns, name)),
        cfg,
        Catalog.from_stack(cfg, ["batch/job"]),
        history=7 * DAY,
    )


def test_what_runs_is_replayed_for_what_is_left_of_its_duration() -> None:
    # 30s annotated, resumed 10s ago (admitted 12s ago): 20s left. 30s annotated, admitted
    # 25s ago, its startTime older than the admission (an earlier run): from the admission,
    # 5s left. 20s annotated, 50s run: overdue, 0s left.
    mix = make_plan(
        [
            workload("a", "vision", created=40, reserved=12),
            workload("b", "nlp", created=40, reserved=25),
            workload("c", "nlp", created=60, reserved=50),
        ],
        [
            job("a", "vision", "30s", started=10),
            job("b", "nlp", "30s", started=100),
            job("c", "nlp", "20s", started=50),
        ],
    )
    got = {i.name: (i.state, i.ran, i.left, i.run_time.basis) for i in mix.items}
    assert got == {
        "a": ("admitted", 10.0, 20.0, "annotation"),
        "b": ("admitted", 25.0, 5.0, "annotation"),
        "c": ("admitted", 50.0, 0.0, "annotation"),
    }
    assert [e.duration for e in mix.entries()] == [0.0, 5.0, 20.0]  # by admission: c, b, a
    assert all(e.submit_at == 0.0 for e in mix.entries())


def test_without_a_duration_the_team_median_of_its_recent_runs_else_unknown() -> None:
    # vision's finished runs within 7 days: 10s, 40s, 20s; one of 8 days ago (1000s) does not
    # count. Median 20s. nlp has no history: its job's run time is unknown.
    history = [
        workload("h1", "vision", created=500, reserved=400, finished=390),  # 10s
        workload("h2", "vision", created=500, reserved=300, finished=260),  # 40s
        workload("h3", "vision", created=500, reserved=200, finished=180),  # 20s
        workload("old", "vision", created=9 * DAY, reserved=8 * DAY, finished=8 * DAY - 1000),
    ]
    mix = make_plan(
        [
            *history,
            workload("run", "vision", created=30, reserved=15),
            workload("p", "vision", created=5),
            workload("q", "nlp", created=4),
        ],
        [job("run", "vision", started=15), job("p", "vision"), job("q", "nlp")],
    )
    assert mix.history == {"vision": [10.0, 40.0, 20.0]}
    items = {i.name: i for i in mix.items}
    assert set(items) == {"run", "p", "q"}  # finished workloads are history, not the mix
    assert (items["run"].run_time.seconds, items["run"].left) == (20.0, 5.0)
    assert (items["p"].run_time.basis, items["p"].left) == ("median", 20.0)
    assert "median of 3 finished vision workloads of the last 7d" in items["p"].run_time.note
    assert (items["q"].run_time.basis, items["q"].left) == ("unknown", None)
    assert items["q"].entry is not None and items["q"].entry.duration is None  # to the end


def test_an_even_history_takes_the_mean_of_the_middle_two() -> None:
    mix = make_plan(
        [
            workload("h1", "nlp", created=500, reserved=400, finished=390),  # 10s
            workload("h2", "nlp", created=500, reserved=300, finished=280),  # 20s
            workload("p", "nlp", created=5),
        ],
        [job("p", "nlp")],
    )
    assert [i.left for i in mix.items] == [15.0]


ORDERED = [("x", "vision"), ("y", "nlp"), ("p1", "vision"), ("q1", "nlp"), ("p2", "vision")]


def test_the_order_is_admitted_by_admission_then_kueues_pending_order() -> None:
    # Admitted: x (admitted 50s ago) and y (80s ago, created later): y first, by admission.
    # Pending, by creation: p1 (vision, position 1), q1 (nlp, 0), p2 (vision, position 0, a
    # higher priority put it first). vision's slots (1st and 3rd) take p2 then p1; nlp's q1.
    mix = make_plan(
        [
            workload("x", "vision", created=100, reserved=50),
            workload("y", "nlp", created=90, reserved=80),
            workload("p1", "vision", created=30),
            workload("q1", "nlp", created=20),
            workload("p2", "vision", created=10),
        ],
        [job(n, ns, "1m") for n, ns in ORDERED],
        positions={
            "vision/job-p1-abcde": (1, 1),
            "vision/job-p2-abcde": (0, 0),
            "nlp/job-q1-abcde": (0, 0),
        },
    )
    assert [i.name for i in mix.items] == ["y", "x", "p2", "q1", "p1"]
    assert [e.name for e in mix.entries()] == ["y", "x", "p2", "q1", "p1"]
    assert [e.index for e in mix.entries()] == [0, 1, 2, 3, 4]
    assert [i.position for i in mix.items] == [None, None, (0, 0), (0, 0), (1, 1)]


def test_an_admitted_workload_keeps_its_flavor() -> None:
    mix = make_plan([workload("x", "vision", created=10, reserved=5)], [job("x", "vision", "1m")])
    (entry,) = mix.entries()
    spec = entry.manifest["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"gpu-queues.dev/pool": "h100"}  # h100's nodeLabels
    assert mix.items[0].flavor == "h100"


def test_what_cannot_be_replayed_says_why_and_is_not_fed_to_the_engine() -> None:
    mix = make_plan(
        [
            workload("none", "vision", created=10, pod_sets=0),
            workload("gone", "vision", created=9),
            workload("off", "nlp", created=8, active=False),
            workload("ok", "nlp", created=7),
        ],
        [job("none", "vision", "1m"), job("ok", "nlp", "1m")],
    )
    problems = {i.name: i.problem for i in mix.items}
    assert problems == {
        "none": "malformed: a Job's Workload has 0 pod sets, not one",
        "gone": "its Job vision/gone is gone",
        "ok": None,
    }
    assert [e.name for e in mix.entries()] == ["ok"]
    assert mix.left_out == ["nlp/job-off-abcde: deactivated, Kueue does not admit it"]


def test_an_admitted_jobset_keeps_each_pod_sets_flavor() -> None:
    # Its leader (CPU) got the cpu flavor, its workers h100: each pod set's pods are pinned to
    # the node labels of its own flavors, so the replay puts them where the cluster did.
    cpu = Flavor("cpu").labels({"gpu-queues.dev/pool": "cpu"}).capacity(cpu=64, memory="256Gi")
    h100 = Flavor("h100").labels({"gpu-queues.dev/pool": "h100"})
    team = (
        Team("vision").namespace("vision").cluster_queue("vision-cq").local_queue("vision-queue")
        .quota("cpu", cpu=32, memory="128Gi", gpu=0).quota("h100", cpu=32, memory="256Gi", gpu=8)
    )  # fmt: skip
    cfg = load_config(
        Stack().flavor(cpu).flavor(h100.capacity(cpu=64, memory="512Gi", gpu=8)).team(team).raw()
    )
    leader = {"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    leader_spec = {**POD_SPEC, "containers": [leader]}
    wl = (
        Workload("jobset-js-abcde", "vision").created(iso(20))
        .owner("JobSet", "js", "uid-js", "jobset.x-k8s.io/v1alpha2").queue("vision-queue")
        .pod_set(leader_spec, name="leader").pod_set(POD_SPEC, count=2, name="workers")
        .admission("vision-cq", {"name": "leader", "flavors": {"cpu": "cpu"}},
                   {"name": "workers", "flavors": {"cpu": "h100", "nvidia.com/gpu": "h100"}})
        .condition("QuotaReserved", "True", iso(10), "QuotaReserved", "")
    ).obj()  # fmt: skip
    js = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "vision", "uid": "uid-js",
                     "annotations": {"gpu-queues.dev/duration": "1m"}},
        "spec": {"replicatedJobs": [
            {"name": "leader", "template": {"spec": {"template": {"spec": leader_spec}}}},
            {"name": "workers", "replicas": 2,
             "template": {"spec": {"template": {"spec": POD_SPEC}}}},
        ]},
    }  # fmt: skip
    snap = Snapshot(NOW, [("vision", "vision-cq")], {}, [(wl, "vision-cq", "vision")], {})
    mix = plan(
        snap,
        lambda kind, ns, name: js if (kind, ns, name) == ("JobSet", "vision", "js") else None,
        cfg,
        Catalog.from_stack(cfg, ["batch/job", "jobset.x-k8s.io/jobset"]),
        history=7 * DAY,
    )
    (item,) = mix.items
    assert item.problem is None, item.problem
    (entry,) = mix.entries()
    selector = [
        rj["template"]["spec"]["template"]["spec"]["nodeSelector"]
        for rj in entry.manifest["spec"]["replicatedJobs"]
    ]
    assert selector == [{"gpu-queues.dev/pool": "cpu"}, {"gpu-queues.dev/pool": "h100"}]
    assert (entry.kind, entry.gpus, entry.pods) == ("JobSet", 4, 3)


def test_an_lws_group_is_an_lws_of_that_group_and_a_deployments_pod_is_a_pod() -> None:
    # Two LWS group Workloads (owned by the LWS and their pods), one holding quota, one
    # pending: each replays as an LWS of that one group, named after its Workload (the LWS has
    # two), so each has its row. A Deployment's pod's Workload (owned by the Pod): Kueue queues
    # each pod alone, and so does the replay, as a plain Pod.
    lws_api = "leaderworkerset.x-k8s.io/v1"

    def group(index: int) -> Workload:
        return (
            Workload(f"leaderworkerset-serve-{index}-abcde", "vision").created(iso(20))
            .owner("LeaderWorkerSet", "serve", "uid-serve", lws_api)
            .owner("Pod", f"serve-{index}", f"p{index}", "v1").queue("vision-queue")
            .pod_set(POD_SPEC, name="leader").pod_set(POD_SPEC, name="worker")
        )  # fmt: skip

    admitted = group(0).reserve_quota("vision-cq", {"nvidia.com/gpu": "h100"}, iso(10)).obj()
    waiting = group(1).pending(iso(20)).obj()
    pod_wl = (
        Workload("pod-web-1-abcde", "nlp").created(iso(5)).owner("Pod", "web-1", "p1", "v1")
        .queue("nlp-queue").pod_set(POD_SPEC).pending(iso(5))
    ).obj()  # fmt: skip
    lws = {
        "apiVersion": lws_api, "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve", "namespace": "vision", "uid": "uid-serve"},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {
            "size": 2, "leaderTemplate": {"spec": POD_SPEC}, "workerTemplate": {"spec": POD_SPEC}}},
    }  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "nlp", "uid": "p1"},
        "spec": POD_SPEC,
    }
    found = {("LeaderWorkerSet", "vision", "serve"): lws, ("Pod", "nlp", "web-1"): pod}
    snap = Snapshot(NOW, [("vision", "vision-cq"), ("nlp", "nlp-cq")], {},
                    [(admitted, "vision-cq", "vision"), (waiting, "vision-cq", "vision"),
                     (pod_wl, "nlp-cq", "nlp")], {})  # fmt: skip
    cfg = config()
    frameworks = ["batch/job", "pod", "leaderworkerset.x-k8s.io/leaderworkerset"]
    mix = plan(snap, lambda kind, ns, name: found.get((kind, ns, name)), cfg,
               Catalog.from_stack(cfg, frameworks), history=7 * DAY)  # fmt: skip
    assert [(i.name, i.state, i.problem) for i in mix.items] == [
        ("leaderworkerset-serve-0-abcde", "admitted", None),
        ("leaderworkerset-serve-1-abcde", "pending", None),  # created first (across queues)
        ("web-1", "pending", None),
    ]
    entries = {e.name: e for e in mix.entries()}
    assert {n: (e.kind, e.gpus, e.pods) for n, e in entries.items()} == {
        "leaderworkerset-serve-0-abcde": ("LeaderWorkerSet", 4, 2),
        "leaderworkerset-serve-1-abcde": ("LeaderWorkerSet", 4, 2),
        "web-1": ("Pod", 2, 1),
    }
    assert entries["leaderworkerset-serve-1-abcde"].manifest["spec"]["replicas"] == 1
