"""`gpuq record` of owners of several Workloads (gpu_queues/tools/owner_sets.py), from hand-made
owner and Workload pairs as Kueue v0.18.3 makes them: a LeaderWorkerSet (a Workload per group,
owned by the LWS and the group's pods, each of a leader pod set of 1 pod and a worker pod set
of size - 1) and a Deployment (a Workload of one pod per pod, owned by the Pod, owned by a
ReplicaSet, owned by the Deployment). Each comes back as one manifest of its kind, its shape from
the owner and its templates from the Workloads, that the what-if reads back as Kueue counts it;
an owner that no longer matches its Workloads is one comment naming it and what differs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_queues.tools.owners import IMAGE_PLACEHOLDER
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.mix import Catalog, TeamQueue, check
from tests.builders import Workload
from tests.unit.tools.test_record import SECRET_BITS, FakeRest, cluster, docs, pod_spec, recorded

pytestmark = pytest.mark.unit

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_PATH = f"/apis/{LWS_API}/namespaces/alpha/leaderworkersets"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"


def leader_spec() -> dict[str, Any]:
    spec = pod_spec(gpus=0)
    spec["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return spec


def lws_day(replicas: int, size: int, groups: int, admitted: int) -> FakeRest:
    """alpha's LWS "serve": `replicas` groups of a leader (no GPU) and size - 1 workers of 2
    GPUs, and the Workloads of `groups` groups as Kueue made them for a size of 4 (leader 1,
    worker 3), the first `admitted` of them holding quota since 10:00:05."""
    made = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve", "namespace": "alpha", "uid": "l1",
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": {
            "replicas": replicas, "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {"type": "RollingUpdate"},
            "leaderWorkerTemplate": {
                "size": size, "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": {"team": "s3cr3t"}},
                                   "spec": leader_spec()},
                "workerTemplate": {"spec": pod_spec(gpus=2)},
            },
        },
    }  # fmt: skip
    workloads = []
    for i in range(groups):
        wl = (
            Workload(f"leaderworkerset-serve-{i}-abcde", "alpha").uid(f"wl-l{i}")
            .created("2026-12-01T10:00:01Z").owner("LeaderWorkerSet", "serve", "l1", LWS_API)
            .queue("jobs").pod_set(leader_spec(), count=1, name="leader")
            .pod_set(pod_spec(gpus=2), count=3, name="worker")
        )  # fmt: skip
        for p in range(4):  # the group's pods own it too (Kueue's pod group)
            wl.owner("Pod", f"serve-{i}-{p}", f"p{i}{p}", api_version="v1")
        if i < admitted:
            wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
            wl.admitted("2026-12-01T10:00:05Z")
        else:
            wl.pending("2026-12-01T10:00:01Z")
        workloads.append(wl.obj())
    rest = cluster(workloads, [])
    rest.objects[LWS_PATH] = {"items": [made]}
    return rest


def test_a_leaderworkerset_is_recorded_once_for_all_its_groups() -> None:
    rec = recorded(lws_day(replicas=2, size=4, groups=2, admitted=2))
    (item,) = rec.items
    assert (item.name, item.skipped) == ("serve", None)
    text = rec.files(single=False)["alpha.yaml"]
    (written,) = docs(text)
    assert (written["apiVersion"], written["kind"], written["metadata"]["name"]) == (
        LWS_API, "LeaderWorkerSet", "serve"
    )  # fmt: skip
    # every group holds quota: it serves on, to the end of the replay
    assert written["metadata"]["annotations"] == {
        "gpu-queues.dev/submit-at": "0s", "gpu-queues.dev/running": "true"
    }  # fmt: skip
    spec = written["spec"]
    assert spec["replicas"] == 2
    lwt = spec["leaderWorkerTemplate"]
    assert set(lwt) == {"size", "leaderTemplate", "workerTemplate"}
    assert lwt["size"] == 4
    assert lwt["leaderTemplate"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}
    }  # fmt: skip
    worker = lwt["workerTemplate"]["spec"]["containers"][0]
    assert (worker["image"], worker["resources"]["limits"]) == (
        IMAGE_PLACEHOLDER, {"nvidia.com/gpu": "2"}
    )  # fmt: skip
    for bit in (*SECRET_BITS, "RecreateGroupOnPodRestart", "LeaderCreated", "RollingUpdate"):
        assert bit not in text, bit
    catalog = Catalog(
        (TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
        frameworks=frozenset({"leaderworkerset.x-k8s.io/leaderworkerset"}),
    )
    read = check(MixDocument("alpha.yaml#0", written), 0, catalog)
    # 2 groups of a leader (no GPU) and 3 workers of 2 GPUs: 12 GPUs, 8 pods
    assert (read.status, read.problem, read.gpus, read.pods) == ("ok", None, 12, 8)


def test_a_leaderworkerset_with_a_group_waiting_is_recorded_waiting() -> None:
    (item,) = recorded(lws_day(replicas=2, size=4, groups=2, admitted=1)).items
    assert item.manifest is not None
    assert item.manifest["metadata"]["annotations"] == {"gpu-queues.dev/waiting": "true"}


def test_a_leaderworkerset_without_a_leader_template_is_its_main_pod_set() -> None:
    rest = lws_day(replicas=1, size=3, groups=1, admitted=1)
    del rest.objects[LWS_PATH]["items"][0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    wl = rest.objects[WORKLOADS]["items"][0]
    wl["spec"]["podSets"] = [{"name": "main", "count": 3, "template": {"spec": pod_spec(gpus=2)}}]
    (item,) = recorded(rest).items
    assert item.skipped is None and item.manifest is not None
    assert set(item.manifest["spec"]["leaderWorkerTemplate"]) == {"size", "workerTemplate"}


@pytest.mark.parametrize(
    ("replicas", "size", "groups", "why"),
    [
        # scaled up: Kueue has made one Workload of the two groups yet
        (2, 4, 1, "its LeaderWorkerSet no longer matches its Workloads: 2 groups (replicas) "
                  "against 1 Workload"),
        # resized: every group is now a leader and 4 workers
        (2, 5, 2, "its LeaderWorkerSet no longer matches its Workload: pod sets [('leader', 1), "
                  "('worker', 4)] against the Workload's [('leader', 1), ('worker', 3)]"),
    ],
)  # fmt: skip
def test_a_leaderworkerset_that_is_not_its_workloads_is_one_comment_naming_it(
    replicas: int, size: int, groups: int, why: str
) -> None:
    rec = recorded(lws_day(replicas, size, groups, admitted=groups))
    (item,) = rec.items
    assert (item.manifest, item.skipped) == (None, why)
    assert (
        f"# not recorded: LeaderWorkerSet alpha/serve: {why}"
        in rec.files(single=False)["alpha.yaml"]
    )


def test_groups_whose_templates_differ_are_a_comment() -> None:
    rest = lws_day(replicas=2, size=4, groups=2, admitted=2)
    second = rest.objects[WORKLOADS]["items"][1]
    second["spec"]["podSets"][1]["template"]["spec"] = pod_spec(gpus=4)
    (item,) = recorded(rest).items
    assert item.skipped == (
        "its LeaderWorkerSet's Workloads leaderworkerset-serve-0-abcde and "
        "leaderworkerset-serve-1-abcde differ in their pod templates, queue or priority (a "
        "rollout under way?)"
    )


def deployment_day(replicas: int, pods: int, rs_owner: bool = True) -> FakeRest:
    """alpha's Deployment "web" of `replicas` (pods labelled app and team, selected by app),
    its ReplicaSet web-7c9f and `pods` of its Pods, each with the Workload of one pod Kueue's
    pod integration made of it, admitted at 10:00:05 and finished at 10:30:05 but the last,
    which finished at 10:45:05."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "alpha", "uid": "d1",
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "strategy": {"type": "Recreate"},
                 "template": {"metadata": {"labels": {"app": "web", "team": "s3cr3t"}},
                              "spec": pod_spec(gpus=1)}},
    }  # fmt: skip
    by = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1",
          "controller": True}  # fmt: skip
    replica_set = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-7c9f", "namespace": "alpha", "uid": "rs1",
                     "ownerReferences": [by] if rs_owner else []},
        "spec": {"replicas": replicas},
    }  # fmt: skip
    rest = cluster([], [])
    for i in range(pods):
        name = f"web-7c9f-{i}"
        rest.objects[f"/api/v1/namespaces/alpha/pods/{name}"] = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "alpha", "uid": f"p{i}",
                         "creationTimestamp": "2026-12-01T10:00:01Z",
                         "labels": {"app": "web", "kueue.x-k8s.io/queue-name": "jobs"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "web-7c9f", "uid": "rs1",
                                              "controller": True}]},
            "spec": pod_spec(gpus=1),
        }  # fmt: skip
        end = "10:45:05" if i == pods - 1 else "10:30:05"
        wl = (
            Workload(f"pod-{name}-abcde", "alpha").uid(f"wl-p{i}").created("2026-12-01T10:00:01Z")
            .owner("Pod", name, f"p{i}", api_version="v1").queue("jobs")
            .pod_set(pod_spec(gpus=1), count=1)
            .reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
            .admitted("2026-12-01T10:00:05Z").finished(f"2026-12-01T{end}Z")
        )  # fmt: skip
        rest.objects[WORKLOADS]["items"].append(wl.obj())
    rest.objects["/apis/apps/v1/namespaces/alpha/replicasets"] = {"items": [replica_set]}
    rest.objects["/apis/apps/v1/namespaces/alpha/deployments"] = {"items": [deployment]}
    return rest


def test_a_deployment_is_recorded_once_from_its_pods_workloads() -> None:
    rec = recorded(deployment_day(replicas=3, pods=3))
    (item,) = rec.items
    assert (item.name, item.skipped) == ("web", None)
    text = rec.files(single=False)["alpha.yaml"]
    (written,) = docs(text)
    assert (written["apiVersion"], written["kind"], written["metadata"]["name"]) == (
        "apps/v1", "Deployment", "web"
    )  # fmt: skip
    # from the first admission (10:00:05) to the last Finished (10:45:05)
    assert written["metadata"]["annotations"] == {
        "gpu-queues.dev/submit-at": "0s", "gpu-queues.dev/duration": "45m"
    }  # fmt: skip
    spec = written["spec"]
    assert (spec["replicas"], spec["selector"]) == (3, {"matchLabels": {"app": "web"}})
    assert spec["template"]["metadata"] == {"labels": {"app": "web"}}
    assert spec["template"]["spec"]["containers"][0]["image"] == IMAGE_PLACEHOLDER
    for bit in (*SECRET_BITS, "Recreate"):
        assert bit not in text, bit
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({"deployment"}))  # fmt: skip
    read = check(MixDocument("alpha.yaml#0", written), 0, catalog)
    assert (read.status, read.problem, read.gpus, read.pods, read.duration) == (
        "ok", None, 3, 3, 2700.0
    )  # fmt: skip


def test_a_deployment_scaled_since_its_pods_workloads_were_made_is_a_comment() -> None:
    rec = recorded(deployment_day(replicas=4, pods=3))
    (item,) = rec.items
    why = (
        "its Deployment no longer matches its Workloads: 4 replicas against 3 Workloads of its pods"
    )
    assert (item.manifest, item.skipped) == (None, why)
    assert f"# not recorded: Deployment alpha/web: {why}" in rec.files(single=False)["alpha.yaml"]


def test_pods_of_a_replicaset_of_no_deployment_are_plain_pods() -> None:
    rec = recorded(deployment_day(replicas=2, pods=2, rs_owner=False))
    assert [(i.name, i.skipped) for i in rec.items] == [("web-7c9f-0", None), ("web-7c9f-1", None)]
    assert [d["kind"] for d in docs(rec.files(single=False)["alpha.yaml"])] == ["Pod", "Pod"]


def test_a_deployment_whose_replicaset_is_gone_is_a_comment_per_workload() -> None:
    rest = deployment_day(replicas=1, pods=1)
    rest.objects["/apis/apps/v1/namespaces/alpha/replicasets"] = {"items": []}
    (item,) = recorded(rest).items
    assert item.skipped == "its ReplicaSet alpha/web-7c9f is no longer in the API (deleted)"


def test_the_record_is_the_same_whatever_order_the_api_lists_the_workloads_in() -> None:
    rest = lws_day(replicas=2, size=4, groups=2, admitted=1)
    forward = recorded(rest).files(single=False)
    backward = copy.deepcopy(rest)
    backward.objects[WORKLOADS]["items"].reverse()
    assert recorded(backward).files(single=False) == forward
