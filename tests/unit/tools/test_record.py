"""`gpuq record` without a cluster: hand-written Workloads (Kueue's v1beta2 shape) and Jobs
behind a fake API, read into a mix. What is kept is what admission needs; what is dropped
(env, args, commands, secrets, volume sources, images) never reaches the file; bad objects
are comments with the reason; the output does not depend on the API's order. The round trip
on a live cluster is tests/e2e/test_record.py."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.tools import record
from gpu_queues.tools.owners import IMAGE_PLACEHOLDER
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.mix import Catalog, TeamQueue, check
from gpu_queues.whatif.workloads import KubeError
from tests.builders import Job, Pod, Workload

pytestmark = pytest.mark.unit

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
NOW = "2026-12-01T12:00:00Z"
NOW_S = 1796126400.0  # NOW as a timestamp
assert record._stamp(NOW, "now") == NOW_S
DAY = 86400.0
SECRET_BITS = ("s3cr3t", "hunter2", "python train.py", "--lr", "regcred", "my-claim", "nfs.example")


class FakeRest:
    """GET only: a dict of path -> body; anything else is the API's 404. Records every
    request, so the test can tell the tool only reads."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects
        self.requests: list[tuple[str, str]] = []

    def get(self, path: str) -> Any:
        self.requests.append(("GET", path))
        if path not in self.objects:
            raise KubeError(404, f"{path} not found")
        return copy.deepcopy(self.objects[path])


def pod_spec(gpus: int = 2) -> dict[str, Any]:
    """A pod spec as a user writes one, with everything a recording must drop."""
    return {
        "restartPolicy": "Never",
        "serviceAccountName": "trainer",
        "imagePullSecrets": [{"name": "regcred"}],
        "nodeSelector": {"gpu-queues.dev/pool": "h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
        },
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "my-claim"}},
            {"name": "creds", "secret": {"secretName": "s3cr3t"}},
            {"name": "nfs", "nfs": {"server": "nfs.example", "path": "/x"}},
        ],
        "initContainers": [
            {
                "name": "fetch",
                "image": "registry.example/fetch:1",
                "command": ["sh", "-c", "python train.py"],
                "resources": {"requests": {"cpu": "500m"}},
            },
            {
                "name": "proxy",
                "image": "registry.example/proxy:1",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            },
        ],
        "containers": [
            {
                "name": "main",
                "image": "registry.example/train:7",
                "command": ["python", "train.py"],
                "args": ["--lr", "0.1"],
                "env": [
                    {"name": "TOKEN", "value": "hunter2"},
                    {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s3cr3t", "key": "k"}}},
                ],
                "envFrom": [{"secretRef": {"name": "s3cr3t"}}],
                "volumeMounts": [{"name": "creds", "mountPath": "/creds"}],
                "ports": [{"containerPort": 8080}],
                "securityContext": {"runAsUser": 0},
                "resources": {
                    "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ],
    }


def job(name: str, namespace: str, created: str, uid: str) -> dict[str, Any]:
    # Kueue injected the flavor's node selector when it admitted the Job: the recording takes
    # the Workload's pod set, the template as submitted, instead.
    injected = {**pod_spec(), "nodeSelector": {"injected": "by-kueue"}}
    return (
        Job(name, namespace).uid(uid).created(created).queue("jobs")
        .annotation("team.example/owner", "s3cr3t").parallelism(2).completions(4)
        .template(injected).obj()
    )  # fmt: skip


def workload(
    job_name: str,
    namespace: str,
    created: str,
    uid: str,
    *,
    admitted: str | None = None,
    finished: str | None = None,
    priority: str | None = None,
    count: int = 2,
) -> dict[str, Any]:
    """A Workload as Kueue v1beta2 writes one for a Job."""
    wl = (
        Workload(f"job-{job_name}-abcde", namespace).uid(f"wl-{uid}").created(created)
        .owner("Job", job_name, uid).queue("jobs").pod_set(pod_spec(), count=count)
    )  # fmt: skip
    if priority:
        wl.priority(priority, 100)
    if admitted:
        wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, admitted).admitted(admitted)
    else:
        wl.pending(created)
    if finished:
        wl.finished(finished)
    return wl.obj()


def cluster(workloads: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> FakeRest:
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        by_ns.setdefault(j["metadata"]["namespace"], []).append(j)
    objects: dict[str, Any] = {
        f"{KUEUE}/clusterqueues": {
            "items": [
                {"metadata": {"name": "alpha-cq", "labels": {"gpu-queues.dev/team": "alpha"}}},
                {"metadata": {"name": "beta-cq", "labels": {"gpu-queues.dev/team": "beta"}}},
            ]
        },
        f"{KUEUE}/localqueues": {
            "items": [
                {"metadata": {"namespace": n, "name": "jobs"}, "spec": {"clusterQueue": f"{n}-cq"}}
                for n in ("alpha", "beta")
            ]
        },
        f"{KUEUE}/workloads": {"items": workloads},
    }
    for ns in ("alpha", "beta"):
        objects[f"/apis/batch/v1/namespaces/{ns}/jobs"] = {"items": by_ns.get(ns, [])}
    return FakeRest(objects)


def a_day() -> FakeRest:
    """alpha: a job finished after 1h1m1s, a 'high' one still running, one waiting; beta: one
    created 2 days ago (outside the window) and one whose Job is gone."""
    return cluster(
        [
            workload(
                "train",
                "alpha",
                "2026-12-01T08:00:00Z",
                "u1",
                admitted="2026-12-01T08:00:10Z",
                finished="2026-12-01T09:01:11Z",
            ),
            workload(
                "urgent",
                "alpha",
                "2026-12-01T08:30:00Z",
                "u2",
                admitted="2026-12-01T08:30:01Z",
                priority="high",
            ),
            workload("sweep", "alpha", "2026-12-01T08:30:00Z", "u3", count=1),
            workload(
                "old",
                "beta",
                "2026-11-29T08:00:00Z",
                "u4",
                admitted="2026-11-29T08:00:00Z",
                finished="2026-11-29T10:00:00Z",
            ),
            workload("gone", "beta", "2026-12-01T09:00:00Z", "u5"),
        ],
        [
            job("train", "alpha", "2026-12-01T08:00:00Z", "u1"),
            job("urgent", "alpha", "2026-12-01T08:30:00Z", "u2"),
            job("sweep", "alpha", "2026-12-01T08:30:00Z", "u3"),
            job("old", "beta", "2026-11-29T08:00:00Z", "u4"),
        ],
    )


def recorded(rest: FakeRest, teams: list[tuple[str, str]] | None = None) -> record.Recording:
    return record.record(rest, teams, NOW_S, DAY, "a test cluster", "24h")


def docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_a_day_becomes_a_mix_with_times_queues_priorities_and_requests() -> None:
    files = recorded(a_day()).files(single=False)
    assert sorted(files) == ["alpha.yaml", "beta.yaml"]
    alpha = docs(files["alpha.yaml"])
    # creation order, then name: sweep and urgent were made in the same second
    assert [d["metadata"]["name"] for d in alpha] == ["train", "sweep", "urgent"]
    train, sweep, urgent = alpha
    assert train["metadata"] == {
        "name": "train",
        "namespace": "alpha",
        "labels": {"kueue.x-k8s.io/queue-name": "jobs"},
        "annotations": {"gpu-queues.dev/submit-at": "0s", "gpu-queues.dev/duration": "1h1m1s"},
    }
    # the pod set's pods as one wave (the duration is the whole run's)
    assert (train["spec"]["parallelism"], train["spec"]["completions"]) == (2, 2)
    assert urgent["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
    assert urgent["metadata"]["annotations"] == {
        "gpu-queues.dev/submit-at": "30m",
        "gpu-queues.dev/running": "true",
    }
    assert sweep["metadata"]["annotations"] == {
        "gpu-queues.dev/submit-at": "30m",
        "gpu-queues.dev/waiting": "true",
    }
    assert sweep["spec"]["parallelism"] == 1
    spec = train["spec"]["template"]
    assert spec == {
        "spec": {
            "restartPolicy": "Never",
            # the Workload's pod set (as submitted), not the Job as Kueue changed it
            "nodeSelector": {"gpu-queues.dev/pool": "h100"},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "affinity": {"nodeAffinity": pod_spec()["affinity"]["nodeAffinity"]},
            "initContainers": [
                {
                    "name": "fetch",
                    "image": IMAGE_PLACEHOLDER,
                    "resources": {"requests": {"cpu": "500m"}},
                },
                {
                    "name": "proxy",
                    "image": IMAGE_PLACEHOLDER,
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                },
            ],
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE_PLACEHOLDER,
                    "resources": {
                        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"},
                        "limits": {"nvidia.com/gpu": "2"},
                    },
                }
            ],
        }
    }
    # beta: the old one is outside the window; the Job that is gone is a comment
    assert docs(files["beta.yaml"]) == []
    assert (
        "# not recorded: Workload beta/job-gone-abcde: its Job beta/gone is no longer in the API"
        in files["beta.yaml"]
    )


def test_nothing_a_pod_must_not_carry_survives() -> None:
    files = recorded(a_day()).files(single=False)
    text = "\n".join(files.values())
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    for bit in (*SECRET_BITS, "registry.example", "team.example", "injected"):
        assert bit not in text, bit
    for key in ("env", "envFrom", "args", "command", "volumes", "volumeMounts", "secret",
                "imagePullSecrets", "serviceAccountName", "ports", "securityContext",
                "podAffinity", "persistentVolumeClaim", "nfs", "valueFrom"):  # fmt: skip
        assert f"{key}:" not in body, key
    # and each file says so at its top
    for name, content in files.items():
        assert content.startswith(record.HEADER), name
        head = content.split("\n---\n")[0]
        assert "Dropped: env values, args, commands, volumes (their sources)" in head
        assert "secrets,\n# image pull secrets" in head
        assert IMAGE_PLACEHOLDER in head


def test_the_recording_is_a_mix_the_what_if_reads_back() -> None:
    files = recorded(a_day()).files(single=False)
    catalog = Catalog(
        (TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
        priority_classes=frozenset({"high"}),
    )
    entries = [
        check(MixDocument(f"alpha.yaml#{i}", d), i, catalog)
        for i, d in enumerate(docs(files["alpha.yaml"]))
    ]
    assert [(e.name, e.status, e.submit_at, e.duration, e.gpus, e.pods) for e in entries] == [
        ("train", "ok", 0.0, 3661.0, 4, 2),
        ("sweep", "ok", 1800.0, None, 2, 1),
        ("urgent", "ok", 1800.0, None, 4, 2),
    ]


def test_the_output_is_the_same_whatever_order_the_api_lists_in() -> None:
    base = a_day()
    first = recorded(base).files(single=False)
    single = recorded(base).files(single=True)
    for seed in range(5):
        shuffled = copy.deepcopy(base.objects)
        random.Random(seed).shuffle(shuffled[f"{KUEUE}/workloads"]["items"])
        for path in ("alpha", "beta"):
            random.Random(seed).shuffle(shuffled[f"/apis/batch/v1/namespaces/{path}/jobs"]["items"])
        assert recorded(FakeRest(shuffled)).files(single=False) == first
        assert recorded(FakeRest(shuffled)).files(single=True) == single
    # one file: the same documents, in creation order across namespaces
    assert [d["metadata"]["name"] for d in docs(single[""])] == ["train", "sweep", "urgent"]


def test_it_only_reads() -> None:
    rest = a_day()
    recorded(rest)
    assert {method for method, _ in rest.requests} == {"GET"}


def test_a_stack_records_its_own_teams_only() -> None:
    rest = a_day()
    rec = recorded(rest, teams=[("beta", "beta-cq")])
    assert [i.name for i in rec.items] == ["job-gone-abcde"]  # skipped: the Workload's name
    assert rec.older == 1


def test_bad_input_is_a_comment_with_the_reason_never_a_traceback() -> None:
    good = workload("ok", "alpha", "2026-12-01T10:00:00Z", "g1",
                    admitted="2026-12-01T10:00:00Z", finished="2026-12-01T10:00:00Z")  # fmt: skip
    no_owner = workload("orphan", "alpha", "2026-12-01T10:00:00Z", "o1")
    no_owner["metadata"]["ownerReferences"] = []
    jobset = workload("js", "alpha", "2026-12-01T10:00:00Z", "j1")
    jobset["metadata"]["ownerReferences"][0]["kind"] = "JobSet"  # and no JobSet js in the API
    rayjob = workload("rj", "alpha", "2026-12-01T10:00:00Z", "r1")
    rayjob["metadata"]["ownerReferences"][0].update(apiVersion="ray.io/v1", kind="RayService")
    remade = workload("remade", "alpha", "2026-12-01T10:00:00Z", "old-uid")
    null_spec = workload("nullspec", "alpha", "2026-12-01T10:00:00Z", "n1")
    null_spec["spec"] = None
    list_template = workload("listtpl", "alpha", "2026-12-01T10:00:00Z", "l1")
    list_template["spec"]["podSets"][0]["template"] = ["not", "a", "template"]
    bad_time = workload("badtime", "alpha", "2026-12-01T10:00:00Z", "t1",
                        admitted="yesterday", finished="2026-12-01T10:00:00Z")  # fmt: skip
    number_name = workload("numname", "alpha", "2026-12-01T10:00:00Z", "x1")
    number_name["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["name"] = 7
    bad_quantity = workload("badq", "alpha", "2026-12-01T10:00:00Z", "q1")
    containers = bad_quantity["spec"]["podSets"][0]["template"]["spec"]["containers"]
    containers[0]["resources"]["requests"]["cpu"] = {"much": True}
    never = workload("never", "alpha", "2026-12-01T10:00:00Z", "v1",
                     finished="2026-12-01T10:05:00Z")  # fmt: skip
    nameless = {"metadata": {"namespace": "alpha"}, "spec": "nonsense"}
    not_a_mapping = "a string where a Workload belongs"
    jobs = [
        job(n, "alpha", "2026-12-01T10:00:00Z", u)
        for n, u in (("ok", "g1"), ("remade", "new-uid"), ("nullspec", "n1"),
                     ("listtpl", "l1"), ("badtime", "t1"), ("numname", "x1"), ("badq", "q1"),
                     ("never", "v1"))
    ]  # fmt: skip
    old_orphan = workload("old-orphan", "alpha", "2026-11-20T10:00:00Z", "o2")
    old_orphan["metadata"]["ownerReferences"] = []
    rest = cluster(
        [good, no_owner, jobset, rayjob, remade, null_spec, list_template, bad_time,
         number_name, bad_quantity, never, nameless, not_a_mapping, old_orphan],
        jobs,
    )  # fmt: skip
    rec = recorded(rest)
    reasons = {i.name: i.skipped for i in rec.items}
    assert [i.name for i in rec.items if i.manifest is not None] == ["ok"]
    assert reasons == {
        "ok": None,
        "job-orphan-abcde": "it has no owner (made directly, not by a Job): nothing to submit",
        "job-js-abcde": "its JobSet alpha/js is no longer in the API (deleted)",
        "job-rj-abcde": (
            "its owner is a RayService; the mix records Jobs, Pods, JobSets, StatefulSets, "
            "Deployments, LeaderWorkerSets, TrainJobs, MPIJobs, RayJobs, RayClusters and the "
            "Kubeflow v1 jobs (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob)"
        ),
        "job-remade-abcde": "its Job alpha/remade was deleted and made again (new uid)",
        "job-nullspec-abcde": "malformed: no spec.queueName",
        "job-listtpl-abcde": "malformed: its pod set's template has no containers",
        "job-badtime-abcde": (
            "malformed: the QuotaReserved condition's lastTransitionTime 'yesterday' is not a time"
        ),
        "job-numname-abcde": "malformed: a container without a name",
        "job-badq-abcde": "malformed: container main's resource quantity {'much': True}",
        "job-never-abcde": "it finished without being admitted: it never held quota",
        "?": "malformed: no name or namespace",
    }
    assert rec.older == 1  # the orphan of last week is no comment
    # finished within the second it was admitted: at least 1s (a mix refuses 0s)
    ok = next(i for i in rec.items if i.name == "ok")
    assert ok.manifest is not None
    assert ok.manifest["metadata"]["annotations"]["gpu-queues.dev/duration"] == "1s"
    text = rec.files(single=False)["alpha.yaml"]
    assert "# not recorded: Workload alpha/job-orphan-abcde: it has no owner" in text


def multi_pod_set_day(
    kind: str, owner_spec: dict[str, Any], pod_sets: list[tuple[str, int]]
) -> FakeRest:
    """One finished workload of `kind` in alpha: its owner with `owner_spec` (the API's object,
    a Job builder's pod template everywhere: it must not reach the recording) and its Workload
    with `pod_sets` (name, count), each of pod_spec(gpus=1)."""
    api = {"JobSet": "jobset.x-k8s.io/v1alpha2", "PyTorchJob": "kubeflow.org/v1"}[kind]
    made = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": "pretrain", "namespace": "alpha", "uid": "m1",
                     "creationTimestamp": "2026-12-01T10:00:00Z",
                     "labels": {"kueue.x-k8s.io/queue-name": "jobs"}},
        "spec": owner_spec,
    }  # fmt: skip
    wl = (
        Workload(f"{kind.lower()}-pretrain-abcde", "alpha").uid("wl-m1")
        .created("2026-12-01T10:00:00Z").owner(kind, "pretrain", "m1", api).queue("jobs")
    )  # fmt: skip
    for name, count in pod_sets:
        wl.pod_set(pod_spec(gpus=1), count=count, name=name)
    wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
    wl.admitted("2026-12-01T10:00:05Z").finished("2026-12-01T11:00:05Z")
    rest = cluster([wl.obj()], [])
    plural = {"JobSet": "jobsets", "PyTorchJob": "pytorchjobs"}[kind]
    rest.objects[f"/apis/{api}/namespaces/alpha/{plural}"] = {"items": [made]}
    return rest


def replicated_job(name: str, replicas: int | None, parallelism: int | None) -> dict[str, Any]:
    job_spec: dict[str, Any] = {"template": {"spec": pod_spec(gpus=1)}, "backoffLimit": 3}
    if parallelism is not None:
        job_spec.update(parallelism=parallelism, completions=parallelism)
    out: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def test_a_jobset_is_recorded_as_its_replicated_jobs_with_the_workloads_templates() -> None:
    # leader: 1 replica (the API's default) of 1 pod; workers: 2 replicas of a 2-pod Job, the
    # Workload's 4 pods. 1 GPU a pod: 5 GPUs, 5 pods.
    rest = multi_pod_set_day(
        "JobSet",
        {"replicatedJobs": [replicated_job("leader", None, None), replicated_job("workers", 2, 2)],
         "network": {"enableDNSHostnames": True}},
        [("leader", 1), ("workers", 4)],
    )  # fmt: skip
    rec = recorded(rest)
    (item,) = rec.items
    assert item.skipped is None and item.manifest is not None
    manifest = item.manifest
    assert (manifest["apiVersion"], manifest["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert manifest["metadata"]["annotations"] == {"gpu-queues.dev/duration": "1h"}
    leader, workers = manifest["spec"]["replicatedJobs"]
    assert leader["name"] == "leader" and "replicas" not in leader
    assert "parallelism" not in leader["template"]["spec"]
    assert (workers["replicas"], workers["template"]["spec"]["parallelism"]) == (2, 2)
    assert workers["template"]["spec"]["completions"] == 2
    assert set(manifest["spec"]) == {"replicatedJobs"}  # network, backoffLimit: not admission's
    assert set(workers["template"]["spec"]) == {"parallelism", "completions", "template"}
    pod = workers["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == IMAGE_PLACEHOLDER
    text = "\n".join(rec.files(single=False).values())
    for bit in SECRET_BITS:
        assert bit not in text, bit
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({"batch/job", "jobset.x-k8s.io/jobset"}))  # fmt: skip
    (read,) = [check(MixDocument("alpha.yaml#0", d), 0, catalog)
               for d in docs(rec.files(single=False)["alpha.yaml"])]  # fmt: skip
    assert (read.kind, read.status, read.gpus, read.pods, read.duration) == (
        "JobSet", "ok", 5, 5, 3600.0
    )  # fmt: skip


def test_a_pytorchjob_is_recorded_as_its_replica_types() -> None:
    def replica(replicas: int | None) -> dict[str, Any]:
        spec = pod_spec(gpus=1)
        spec["containers"][0]["name"] = "pytorch"
        out: dict[str, Any] = {"restartPolicy": "OnFailure", "template": {"spec": spec}}
        if replicas is not None:
            out["replicas"] = replicas
        return out

    rest = multi_pod_set_day(
        "PyTorchJob",
        {"pytorchReplicaSpecs": {"Master": replica(None), "Worker": replica(3)}},
        [("master", 1), ("worker", 3)],
    )
    for p in rest.objects[f"{KUEUE}/workloads"]["items"][0]["spec"]["podSets"]:
        p["template"]["spec"]["containers"][0]["name"] = "pytorch"
    (item,) = recorded(rest).items
    assert item.skipped is None and item.manifest is not None
    specs = item.manifest["spec"]["pytorchReplicaSpecs"]
    assert list(specs) == ["Master", "Worker"]
    assert "replicas" not in specs["Master"] and specs["Worker"]["replicas"] == 3
    assert specs["Worker"]["template"]["spec"]["containers"][0]["name"] == "pytorch"
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({"kubeflow.org/pytorchjob"}))  # fmt: skip
    read = check(MixDocument("alpha.yaml#0", item.manifest), 0, catalog)
    assert (read.status, read.gpus, read.pods) == ("ok", 4, 4)


def test_an_owner_changed_since_its_workload_was_made_is_a_comment() -> None:
    # The JobSet now says 3 replicas of its workers (6 pods); the Workload Kueue admitted, 4.
    rest = multi_pod_set_day(
        "JobSet",
        {"replicatedJobs": [replicated_job("leader", 1, 1), replicated_job("workers", 3, 2)]},
        [("leader", 1), ("workers", 4)],
    )
    (item,) = recorded(rest).items
    assert item.manifest is None
    assert item.skipped == (
        "its JobSet no longer matches its Workload: pod sets [('leader', 1), ('workers', 6)] "
        "against the Workload's [('leader', 1), ('workers', 4)]"
    )
    # A replicated job's replicas that is not a number is named, never a traceback.
    rest.objects["/apis/jobset.x-k8s.io/v1alpha2/namespaces/alpha/jobsets"]["items"][0]["spec"][
        "replicatedJobs"][1]["replicas"] = "two"  # fmt: skip
    (item,) = recorded(rest).items
    assert item.skipped == "malformed: replicated job workers's replicas 'two'"


def test_a_plain_pod_is_recorded_and_pods_sharing_a_workload_without_a_group_are_not() -> None:
    # (A labelled pod group is recorded: test_record_podgroups.py.)
    wl = workload("nb", "alpha", "2026-12-01T10:00:00Z", "p1", admitted="2026-12-01T10:00:00Z",
                  count=1)  # fmt: skip
    wl["metadata"]["ownerReferences"][0].update(apiVersion="v1", kind="Pod")
    group = workload("g-0", "alpha", "2026-12-01T10:00:00Z", "p2", count=2)
    group["metadata"]["ownerReferences"][0].update(apiVersion="v1", kind="Pod")
    group["metadata"]["ownerReferences"].append({**group["metadata"]["ownerReferences"][0],
                                                 "name": "g-1", "uid": "p3"})  # fmt: skip
    rest = cluster([wl, group], [])
    for name, uid in (("nb", "p1"), ("g-0", "p2")):
        made = Pod(name, "alpha").uid(uid).created("2026-12-01T10:00:00Z").pod_spec(**pod_spec())
        rest.objects[f"/api/v1/namespaces/alpha/pods/{name}"] = made.obj()
    rec = recorded(rest)
    pod = next(i for i in rec.items if i.name == "nb")
    assert pod.manifest is not None
    assert (pod.manifest["apiVersion"], pod.manifest["kind"]) == ("v1", "Pod")
    assert pod.manifest["spec"]["containers"][0]["image"] == IMAGE_PLACEHOLDER
    assert "g-0" not in {i.name for i in rec.items if i.manifest is not None}
    assert any("a group of pods" in (i.skipped or "") for i in rec.items)


def test_durations_are_written_exactly() -> None:
    assert [record.exact_duration(s) for s in (0, 1, 59, 61, 3600, 3661, 90061)] == [
        "0s", "1s", "59s", "1m1s", "1h", "1h1m1s", "1d1h1m1s",
    ]  # fmt: skip


def test_writing_a_folder_replaces_its_own_files_and_refuses_others(tmp_path: Path) -> None:
    out = tmp_path / "mix"
    rec = recorded(a_day())
    written = record.write(rec, out)
    assert [p.name for p in written] == ["alpha.yaml", "beta.yaml"]
    first = {p.name: p.read_bytes() for p in written}
    # a later recording without beta removes the old beta.yaml, written by a recording
    only_alpha = recorded(a_day(), teams=[("alpha", "alpha-cq")])
    record.write(only_alpha, out)
    assert sorted(p.name for p in out.iterdir()) == ["alpha.yaml"]
    assert (out / "alpha.yaml").read_bytes() == first["alpha.yaml"]
    (out / "mine.yaml").write_text("apiVersion: batch/v1\nkind: Job\n")
    with pytest.raises(record.RecordError, match=r"mine\.yaml is a manifest this tool did not"):
        record.write(rec, out)
    # nothing in the window: a folder gets no file (and loses the old ones), a file the header
    empty = record.Recording("a test cluster", "1h")
    (out / "mine.yaml").unlink()
    assert record.write(empty, out) == []
    assert list(out.iterdir()) == []
    assert record.write(empty, tmp_path / "none.yaml")[0].read_text().startswith(record.HEADER)
    one = record.write(rec, tmp_path / "day.yaml")
    assert one == [tmp_path / "day.yaml"]
    assert len(docs(one[0].read_text())) == 3


def test_the_cli_reports_bad_arguments_and_connections_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert record.main(["--since", "soon", "--out", str(tmp_path / "m")]) == 2
    assert "record: --since: 'soon' is not a duration" in capsys.readouterr().err
    missing = tmp_path / "nope.kubeconfig"
    assert record.main(["--kubeconfig", str(missing), "--out", str(tmp_path / "m")]) == 2
    assert f"record: kubeconfig {missing}: cannot be read" in capsys.readouterr().err
    # a server nobody listens on
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    assert record.main(["--kubeconfig", str(path), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("record: the cluster did not answer:"), err
    assert not (tmp_path / "m").exists()
