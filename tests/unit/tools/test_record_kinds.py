"""`gpuq record` of the kinds beyond the PyTorchJob whose Workloads the fast engine replays (the
other Kubeflow v1 jobs, MPIJobs, RayJobs, RayClusters and StatefulSets) from hand-made owner and
Workload pairs: the sandbox runs no mpi-operator, and no round trip records a Kubeflow v1 job
from its training-operator or a Ray kind from its KubeRay yet, so none covers those
(tests/e2e/test_record.py covers Jobs, JobSets and pod groups, and records a live Deployment and
StatefulSet back). Each owner comes back as its kind with its replica types' (worker groups', a
StatefulSet's) replicas from the owner and each template from the Workload's pod set, and the
what-if reads it back as Kueue counts it; an owner that no longer matches its Workload, or a
replica type its operator does not know, is a comment naming why."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.tools.owners import IMAGE_PLACEHOLDER
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.mix import Catalog, TeamQueue, check
from tests.builders import Workload
from tests.unit.tools.test_record import SECRET_BITS, FakeRest, cluster, docs, pod_spec, recorded

pytestmark = pytest.mark.unit

# kind: (apiVersion, the API's plural, where its replica specs are, Kueue's framework, the
# container its operator runs the job in)
KINDS = {
    "TFJob": ("kubeflow.org/v1", "tfjobs", "tfReplicaSpecs", "kubeflow.org/tfjob", "tensorflow"),
    "XGBoostJob": ("kubeflow.org/v1", "xgboostjobs", "xgbReplicaSpecs", "kubeflow.org/xgboostjob",
                   "xgboost"),
    "PaddleJob": ("kubeflow.org/v1", "paddlejobs", "paddleReplicaSpecs", "kubeflow.org/paddlejob",
                  "paddle"),
    "JAXJob": ("kubeflow.org/v1", "jaxjobs", "jaxReplicaSpecs", "kubeflow.org/jaxjob", "jax"),
    "MPIJob": ("kubeflow.org/v2beta1", "mpijobs", "mpiReplicaSpecs", "kubeflow.org/mpijob",
               "launcher-or-worker"),
}  # fmt: skip


def kind_pod_spec(kind: str) -> dict[str, Any]:
    """pod_spec(gpus=1) with its main container named as the kind's operator wants it."""
    spec = pod_spec(gpus=1)
    spec["containers"][0]["name"] = KINDS[kind][4]
    return spec


def owner_day(kind: str, replicas: dict[str, int], pod_sets: list[tuple[str, int]]) -> FakeRest:
    """alpha's `kind` "big", its replica types' replicas as the API stores them (each template
    the user's, with what a recording must drop), and its Workload of `pod_sets` (name, count),
    each pod 1 GPU, finished after an hour."""
    api, plural, specs, _, _ = KINDS[kind]
    made = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "big", "namespace": "alpha", "uid": "o1",
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None"},
            specs: {t: {"replicas": n, "restartPolicy": "OnFailure",
                        "template": {"spec": kind_pod_spec(kind)}} for t, n in replicas.items()},
        },
    }  # fmt: skip
    wl = (
        Workload(f"{kind.lower()}-big-abcde", "alpha").uid("wl-o1").created("2026-12-01T10:00:00Z")
        .owner(kind, "big", "o1", api).queue("jobs")
    )  # fmt: skip
    for name, count in pod_sets:
        wl.pod_set(kind_pod_spec(kind), count=count, name=name)
    wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
    wl.admitted("2026-12-01T10:00:05Z").finished("2026-12-01T11:00:05Z")
    rest = cluster([wl.obj()], [])
    rest.objects[f"/apis/{api}/namespaces/alpha/{plural}"] = {"items": [made]}
    return rest


@pytest.mark.parametrize(
    ("kind", "replicas", "pod_sets", "types"),
    [
        ("TFJob", {"Chief": 1, "PS": 2, "Worker": 4}, [("chief", 1), ("ps", 2), ("worker", 4)],
         ["Chief", "PS", "Worker"]),
        # the training operator camel-cases a type Kueue reads lower-cased; the record, as Kueue
        ("XGBoostJob", {"master": 1, "Worker": 3}, [("master", 1), ("worker", 3)],
         ["Master", "Worker"]),
        ("PaddleJob", {"Master": 1, "Worker": 2}, [("master", 1), ("worker", 2)],
         ["Master", "Worker"]),
        ("JAXJob", {"Worker": 4}, [("worker", 4)], ["Worker"]),
        ("MPIJob", {"Launcher": 1, "Worker": 3}, [("launcher", 1), ("worker", 3)],
         ["Launcher", "Worker"]),
    ],
)  # fmt: skip
def test_a_kind_of_replica_specs_is_recorded_as_its_kind_and_read_back_as_kueue_counts_it(
    kind: str, replicas: dict[str, int], pod_sets: list[tuple[str, int]], types: list[str]
) -> None:
    api, _, specs, framework, _ = KINDS[kind]
    rec = recorded(owner_day(kind, replicas, pod_sets))
    (item,) = rec.items
    assert item.skipped is None and item.manifest is not None
    (written,) = docs(rec.files(single=False)["alpha.yaml"])
    assert (written["apiVersion"], written["kind"], written["metadata"]["name"]) == (
        api, kind, "big"
    )  # fmt: skip
    got = written["spec"][specs]
    assert list(got) == types
    assert [got[t]["replicas"] for t in types] == [n for _, n in pod_sets]
    for t in types:  # only the replicas and the Workload's template: no restartPolicy of its own
        assert set(got[t]) == {"replicas", "template"}
        assert got[t]["template"]["spec"]["containers"][0]["image"] == IMAGE_PLACEHOLDER
    text = rec.files(single=False)["alpha.yaml"]
    for bit in (*SECRET_BITS, "cleanPodPolicy", "OnFailure"):
        assert bit not in text, bit
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({framework}))  # fmt: skip
    read = check(MixDocument("alpha.yaml#0", written), 0, catalog)
    pods = sum(n for _, n in pod_sets)
    assert (read.status, read.problem, read.gpus, read.pods, read.duration) == (
        "ok", None, pods, pods, 3600.0
    )  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "replicas", "pod_sets", "why"),
    [
        # scaled since Kueue made its Workload
        ("TFJob", {"Chief": 1, "Worker": 6}, [("chief", 1), ("worker", 4)],
         "its TFJob no longer matches its Workload: pod sets [('chief', 1), ('worker', 6)] "
         "against the Workload's [('chief', 1), ('worker', 4)]"),
        # the mpi-operator changes no case: a lower-case key is no replica type to it or Kueue
        ("MPIJob", {"launcher": 1, "Worker": 2}, [("worker", 2)],
         "malformed: replica type 'launcher' is not one of Launcher, Worker"),
        ("JAXJob", {"Worker": -1}, [("worker", 1)], "malformed: replica type Worker's replicas -1"),
        ("PaddleJob", {"Chief": 1}, [("chief", 1)],
         "malformed: replica type 'Chief' is not one of Master, Worker"),
    ],
)  # fmt: skip
def test_an_owner_that_is_not_its_workload_is_a_comment(
    kind: str, replicas: dict[str, int], pod_sets: list[tuple[str, int]], why: str
) -> None:
    rec = recorded(owner_day(kind, replicas, pod_sets))
    (item,) = rec.items
    assert (item.manifest, item.skipped) == (None, why)
    assert (
        f"# not recorded: Workload alpha/{kind.lower()}-big-abcde: {why}"
        in rec.files(single=False)["alpha.yaml"]
    )


def test_a_replica_kind_whose_crd_is_not_installed_is_a_comment_saying_its_owner_is_gone() -> None:
    rest = owner_day("MPIJob", {"Launcher": 1, "Worker": 1}, [("launcher", 1), ("worker", 1)])
    del rest.objects["/apis/kubeflow.org/v2beta1/namespaces/alpha/mpijobs"]  # the API's 404
    (item,) = recorded(rest).items
    assert item.skipped == "its MPIJob alpha/big is no longer in the API (deleted)"


def test_the_kinds_recorded_are_named_where_another_owner_is_refused() -> None:
    rest = owner_day("JAXJob", {"Worker": 1}, [("worker", 1)])
    wl: dict[str, Any] = rest.objects["/apis/kueue.x-k8s.io/v1beta2/workloads"]["items"][0]
    wl["metadata"]["ownerReferences"][0].update(kind="RayService", apiVersion="ray.io/v1")
    (item,) = recorded(rest).items
    assert item.skipped == (
        "its owner is a RayService; the mix records Jobs, Pods, JobSets, StatefulSets, "
        "Deployments, LeaderWorkerSets, TrainJobs, MPIJobs, RayJobs, RayClusters and the "
        "Kubeflow v1 jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob)"
    )


def ray_day(kind: str, workers: int, pod_sets: list[tuple[str, int]]) -> FakeRest:
    """alpha's `kind` "ray" (KubeRay's API as it stores it: a head, a worker group "gpu" of
    `workers` replicas of 2 hosts; a RayJob's entrypoint and no submitter template, so Kueue
    gave the submitter its default pod) and its Workload of `pod_sets` (name, count), each pod
    1 GPU but the submitter's."""
    ray = {
        "rayVersion": "2.9.0",
        "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"},
                          "template": {"spec": pod_spec(gpus=1)}},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "minReplicas": 0,
                              "maxReplicas": 8, "numOfHosts": 2, "rayStartParams": {},
                              "template": {"spec": pod_spec(gpus=1)}}],
    }  # fmt: skip
    spec: dict[str, Any] = ray
    if kind == "RayJob":
        spec = {"entrypoint": "python train.py --lr 0.1", "shutdownAfterJobFinishes": True,
                "rayClusterSpec": ray}  # fmt: skip
    made = {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "metadata": {"name": "ray", "namespace": "alpha", "uid": "r1",
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": spec,
    }  # fmt: skip
    wl = (
        Workload(f"{kind.lower()}-ray-abcde", "alpha").uid("wl-r1").created("2026-12-01T10:00:00Z")
        .owner(kind, "ray", "r1", "ray.io/v1").queue("jobs")
    )  # fmt: skip
    submitter = {"restartPolicy": "Never", "containers": [
        {"name": "ray-job-submitter", "image": "rayproject/ray:2.9.0",
         "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}}}]}  # fmt: skip
    for name, count in pod_sets:
        wl.pod_set(submitter if name == "submitter" else pod_spec(gpus=1), count=count, name=name)
    wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
    wl.admitted("2026-12-01T10:00:05Z").finished("2026-12-01T11:00:05Z")
    rest = cluster([wl.obj()], [])
    rest.objects[f"/apis/ray.io/v1/namespaces/alpha/{kind.lower()}s"] = {"items": [made]}
    return rest


@pytest.mark.parametrize(
    ("kind", "pod_sets", "gpus", "pods"),
    [
        ("RayJob", [("head", 1), ("gpu", 6), ("submitter", 1)], 7, 8),
        ("RayCluster", [("head", 1), ("gpu", 6)], 7, 7),
    ],
)
def test_a_ray_kind_is_recorded_as_its_groups_and_read_back_as_kueue_counts_it(
    kind: str, pod_sets: list[tuple[str, int]], gpus: int, pods: int
) -> None:
    rec = recorded(ray_day(kind, 3, pod_sets))
    (item,) = rec.items
    assert item.skipped is None
    (written,) = docs(rec.files(single=False)["alpha.yaml"])
    assert (written["apiVersion"], written["kind"]) == ("ray.io/v1", kind)
    spec = written["spec"]
    cluster = spec["rayClusterSpec"] if kind == "RayJob" else spec
    (group,) = cluster["workerGroupSpecs"]
    assert {k: v for k, v in group.items() if k != "template"} == {
        "groupName": "gpu", "replicas": 3, "numOfHosts": 2
    }  # fmt: skip
    assert set(cluster) == {"headGroupSpec", "workerGroupSpecs"}
    if kind == "RayJob":
        # what Kueue's webhook wants of a managed RayJob, and the submitter Kueue counted
        assert spec["shutdownAfterJobFinishes"] is True
        submitter = spec["submitterPodTemplate"]["spec"]["containers"][0]
        assert submitter["resources"] == {"requests": {"cpu": "500m", "memory": "200Mi"}}
        assert submitter["image"] == IMAGE_PLACEHOLDER
    text = rec.files(single=False)["alpha.yaml"]
    for bit in (*SECRET_BITS, "entrypoint", "rayStartParams", "maxReplicas", "rayproject"):
        assert bit not in text, bit
    framework = {"RayJob": "ray.io/rayjob", "RayCluster": "ray.io/raycluster"}[kind]
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({framework}))  # fmt: skip
    read = check(MixDocument("alpha.yaml#0", written), 0, catalog)
    assert (read.status, read.problem, read.gpus, read.pods) == ("ok", None, gpus, pods)


def test_a_ray_kind_that_is_not_its_workload_is_a_comment() -> None:
    # scaled from 3 workers (6 pods) to 4 since Kueue made its Workload
    rec = recorded(ray_day("RayCluster", 4, [("head", 1), ("gpu", 6)]))
    (item,) = rec.items
    assert item.skipped == (
        "its RayCluster no longer matches its Workload: pod sets [('head', 1), ('gpu', 8)] "
        "against the Workload's [('head', 1), ('gpu', 6)]"
    )
    rest = ray_day("RayJob", 3, [("head", 1), ("gpu", 6), ("submitter", 1)])
    owner = rest.objects["/apis/ray.io/v1/namespaces/alpha/rayjobs"]["items"][0]
    owner["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["numOfHosts"] = "two"
    (item,) = recorded(rest).items
    assert item.skipped == "malformed: worker group gpu's numOfHosts 'two'"
    owner["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] = "GPU group"
    (item,) = recorded(rest).items
    assert item.skipped == (  # Kueue names a pod set after it
        "malformed: a worker group's name 'GPU group' is not a name usable as a label value (a "
        "DNS-1123 subdomain of at most 63 characters)"
    )


def statefulset_day(replicas: int, count: int) -> FakeRest:
    """alpha's StatefulSet "serve" of `replicas` (its pods labelled app and team, selected by
    app) and the Workload Kueue made of its pods, a group of `count`: owned by the StatefulSet
    and by each pod, its one pod set named by their role hash; admitted, still serving."""
    made = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "serve", "namespace": "alpha", "uid": "s1",
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": {"replicas": replicas, "serviceName": "serve",
                 "selector": {"matchLabels": {"app": "serve"}},
                 "template": {"metadata": {"labels": {"app": "serve", "team": "s3cr3t"}},
                              "spec": pod_spec(gpus=2)}},
    }  # fmt: skip
    wl = (
        Workload("statefulset-serve-abcde", "alpha").uid("wl-s1")
        .created("2026-12-01T10:00:00Z").owner("StatefulSet", "serve", "s1", "apps/v1")
        .queue("jobs").pod_set(pod_spec(gpus=2), count=count, name="5e6f7a8b")
    )  # fmt: skip
    for i in range(count):
        wl.owner("Pod", f"serve-{i}", f"p{i}", api_version="v1")
    wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
    wl.admitted("2026-12-01T10:00:05Z")
    rest = cluster([wl.obj()], [])
    rest.objects["/apis/apps/v1/namespaces/alpha/statefulsets"] = {"items": [made]}
    return rest


def test_a_statefulset_is_recorded_as_itself_not_as_a_group_of_its_pods() -> None:
    rec = recorded(statefulset_day(3, 3))
    (item,) = rec.items
    assert item.skipped is None and item.members == ()
    (written,) = docs(rec.files(single=False)["alpha.yaml"])
    assert (written["kind"], written["metadata"]["name"]) == ("StatefulSet", "serve")
    assert written["metadata"]["annotations"] == {
        "gpu-queues.dev/submit-at": "0s", "gpu-queues.dev/running": "true"
    }  # fmt: skip
    spec = written["spec"]
    assert (spec["replicas"], spec["selector"]) == (3, {"matchLabels": {"app": "serve"}})
    # of the pods' labels, the one the selector reads; the template the Workload's
    assert spec["template"]["metadata"] == {"labels": {"app": "serve"}}
    assert spec["template"]["spec"]["containers"][0]["image"] == IMAGE_PLACEHOLDER
    assert "serviceName" not in spec
    for bit in SECRET_BITS:
        assert bit not in rec.files(single=False)["alpha.yaml"], bit
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({"statefulset"}))  # fmt: skip
    read = check(MixDocument("alpha.yaml#0", written), 0, catalog)
    assert (read.status, read.problem, read.gpus, read.pods, read.duration) == (
        "ok", None, 6, 3, None
    )  # fmt: skip


def test_a_statefulset_scaled_since_its_workload_was_made_is_a_comment() -> None:
    (item,) = recorded(statefulset_day(5, 3)).items
    assert item.skipped == (
        "its StatefulSet no longer matches its Workload: 5 replicas against the Workload's 3 pods"
    )
