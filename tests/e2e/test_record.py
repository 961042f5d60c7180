"""`gpuq record`'s round trip on the sandbox: a mix run in wall time, recorded back from the live
cluster, and the recording replayed by the what-if beside the mix itself.

Why not record a what-if replay: the replay's clock is simulated (it jumps from event to
event once the cluster has settled), and the Workloads it creates carry wall-clock
creationTimestamps and conditions, a second or two apart whatever the simulated gap. A
recording of a replay is a recording of its settling, not of the mix. So the mix (record/mix.yaml,
in seconds) runs here as a real cluster runs it: each Job is created at its submit-at of the
wall clock, and kwok ends its pods its duration after they run (the sandbox's complete-after
stage). That cluster is recorded, through the stack's kubeconfig secret as `make record`
reads prod's; then the what-if replays the mix and the recording on the same sandbox.

What must agree: every workload's outcome and flavor, and its wait within HANDOFF seconds.
The recording holds what the cluster did, and a live cluster takes its time (kwok starts a
pod, the Job controller batches pod updates by a second, a preemption is a round trip), so a
recorded duration is the mix's plus that, to the second; the what-if replays both in simulated
time, where Kueue's reactions take no time at all.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.kueue.client import file_client
from gpu_queues.tools import record
from gpu_queues.tools.status import KUEUE
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.durations import parse_duration
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.mix import COMPLETE_AFTER, Catalog, check, load_mix, submission_order
from gpu_queues.whatif.podsets import pod_sets
from gpu_queues.whatif.report import Run
from gpu_queues.whatif.workloads import Rest, is_true
from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG
from sandbox.replay.engine import live_frameworks, replay_mix
from sandbox.replay.timeline import COLLECTIONS
from sandbox.replay.watch import created_at
from sandbox.shape import load_stack
from sandbox.walkthrough import KubeSession
from tests.e2e.deployments import Deployments
from tests.e2e.operated import Operated, wiped
from tests.e2e.test_mpijob import MPIJOBS, mpi_job
from tests.e2e.test_pytorchjob import PYTORCHJOBS, pytorch_job
from tests.e2e.test_ray import RAY_CLUSTERS, ray_cluster
from tests.e2e.test_trainjob import RECORDED, RUNTIME, train_job, wiped_trainjobs

pytestmark = pytest.mark.e2e

STACK = "local-record"
SOURCE = Path(__file__).parent / "stacks" / f"Pulumi.{STACK}.yaml"
MIX = Path(__file__).parent / "record" / "mix.yaml"
NAMESPACES = ("rec-alpha", "rec-beta")
JOBSET = ("jobset.x-k8s.io", "v1alpha2")
HANDOFF = 3  # seconds a live handoff (a job ends or is preempted, the next admitted) may take

# name: (outcome, flavor, wait in simulated seconds), worked out in record/mix.yaml
EXPECTED = {
    "r-train": ("finished", "rec-gpu", 0),
    "r-sweep": ("admitted", "rec-gpu", 0),
    "r-big": ("finished", "rec-gpu", 0),
    "r-small": ("finished", "rec-gpu", 7),
    "r-prep": ("finished", "rec-gpu", 0),
    "r-group": ("finished", "rec-gpu", 0),
}
GROUP = ("r-group-launcher", "r-group-w0", "r-group-w1")


def _wipe(k: KubeSession) -> None:
    for ns in NAMESPACES:
        for js in k.custom.list_namespaced_custom_object(*JOBSET, ns, "jobsets")["items"]:
            k.custom.delete_namespaced_custom_object(
                *JOBSET, ns, "jobsets", js["metadata"]["name"], propagation_policy="Background"
            )
        for j in k.batch.list_namespaced_job(ns).items:
            if not j.metadata.owner_references:  # a JobSet's go with it
                k.delete_job(j.metadata.name, ns)
        for pod in k.core.list_namespaced_pod(ns).items:
            if not pod.metadata.owner_references:  # a pod group's (a Job's go with it)
                k.core.delete_namespaced_pod(pod.metadata.name, ns)
        k.wait(f"no workloads in {ns}", lambda n=ns: not k.workloads(n), namespace=ns, timeout=90)


@dataclass(frozen=True)
class Created:
    """One object the wall-time run created: where it is, and the wall-clock window its create
    call took (the API server stamps its creationTimestamp within it, to the second)."""

    path: str
    sent: float
    returned: float


def run_in_wall_time(rest: Rest, mix: Path, catalog: Catalog) -> dict[str, Created]:
    """Create each Job of the mix (a pod group's Pods together) at its submit-at of the wall
    clock, its pods ending their
    duration after they run (kwok's complete-after stage); return when every job with a
    duration has finished and nothing has changed for a few seconds. Each object created, by
    name."""
    entries = submission_order(load_mix(mix, catalog))
    assert entries and all(e.status == "ok" for e in entries)
    start = int(time.time()) + 1.2  # a fifth into a second: creation seconds are exact
    created: dict[str, Created] = {}
    for e in entries:
        time.sleep(max(start + e.submit_at - time.time(), 0))
        for member in e.members or (e.manifest,):
            manifest = copy.deepcopy(member)
            if e.duration is not None:
                for pod_set in pod_sets(e.kind, manifest):  # each template has its metadata
                    meta = pod_set.meta.setdefault("annotations", {})
                    meta[COMPLETE_AFTER] = f"{e.duration:.0f}s"
            api, plural = COLLECTIONS[e.kind]
            collection = f"{api}/namespaces/{e.namespace}/{plural}"
            sent = time.time()
            rest.create(collection, manifest)
            name = manifest["metadata"]["name"]
            created[name] = Created(f"{collection}/{name}", sent, time.time())
    ends = [e.name for e in entries if e.duration is not None]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        finished = set()
        for ns in NAMESPACES:
            for wl in rest.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]:
                if is_true(wl, "Finished"):  # a pod group's Workload is named after it
                    finished.add(wl["metadata"]["ownerReferences"][0]["name"])
                    finished.add(wl["metadata"]["name"])
        if finished >= set(ends):
            time.sleep(3)  # what the last end lets in (the sweep comes back)
            return created
        time.sleep(0.5)
    raise AssertionError(f"the wall-time run did not end: finished {sorted(finished)}")


def outcomes(run: Run) -> dict[str, tuple[str, str | None, float | None]]:
    return {w.name: (w.outcome, w.flavor, w.wait_seconds) for w in run.workloads}


@pytest.fixture(scope="module")
def deployed_record_stack(cluster: KubeSession, stacks: Deployments) -> Iterator[None]:
    """The stack deployed (it stays, as every stack of the session does); no job of it left."""
    done = stacks.up(STACK, source=SOURCE)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield
    finally:
        _wipe(cluster)


def test_a_run_recorded_back_replays_as_the_mix_does(
    deployed_record_stack: None, cluster: KubeSession, tmp_path: Path
) -> None:
    started = time.monotonic()
    rest = Rest(file_client(KUBECONFIG))
    config = load_stack(SOURCE)
    frameworks = live_frameworks(rest)
    assert "pod" in frameworks, f"the sandbox's Kueue runs no pod integration: {frameworks}"
    catalog = Catalog.from_stack(config, frameworks)
    created = run_in_wall_time(rest, MIX, catalog)
    ran = time.monotonic() - started

    # Recorded as `make record STACK=... OUT=...` records: through the stack's kubeconfig
    # secret (in the sandbox's shadow project), read-only.
    out = tmp_path / "recorded"

    def record_cli() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gpu_queues.tools.record", "--stack", STACK,
             "--project", str(stack.SHADOW), "--since", "10m", "--out", str(out)],
            capture_output=True, text=True, check=False,
            env={**stack.environment(), "KUBECONFIG": ""},
        )  # fmt: skip

    done = record_cli()
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["rec-alpha.yaml", "rec-beta.yaml"], done.stderr
    first = {name: (out / name).read_bytes() for name in files}
    again = record_cli()  # the same cluster state: the same bytes
    assert again.returncode == 0, again.stderr
    assert {name: (out / name).read_bytes() for name in files} == first
    text = b"".join(first.values()).decode()
    for dropped in ("not-for-a-recording", "WANDB_API_KEY", "train.py", "registry.example",
                    COMPLETE_AFTER):  # fmt: skip
        assert dropped not in text, dropped
    assert "BEGIN" not in done.stdout + done.stderr  # no key material in what it prints
    docs = [d for name in files for d in yaml.safe_load_all((out / name).read_text()) if d]
    recorded = {d["metadata"]["name"]: d["metadata"]["annotations"] for d in docs}
    # Each submit-at is its owner's creationTimestamp as the cluster has it, offset from the
    # earliest (r-train's), exactly; a pod group's, its last Pod's (when Kueue could queue it).
    # The cluster stamps a creation within its create call, to the second (after the admission
    # webhooks, Kueue's and JobSet's: on a loaded machine CI once stamped the JobSet, sent 3 s
    # after r-train, 4 s after it), so the stamps are held to the calls, not to the mix.
    assert created.keys() == {"r-train", "r-sweep", "r-prep", "r-big", "r-small", *GROUP}
    stamps = {n: created_at(rest.get(c.path)) for n, c in created.items()}
    for name, c in created.items():
        assert math.floor(c.sent) <= stamps[name] <= c.returned, (name, stamps[name], c)
    stamps.update(dict.fromkeys(GROUP, max(stamps[n] for n in GROUP)))
    offsets = {n: parse_duration(a[record.ANNOTATION_SUBMIT_AT]) for n, a in recorded.items()}
    assert offsets == {n: stamps[n] - stamps["r-train"] for n in created}, (offsets, stamps)
    # The JobSet as a JobSet: its replicated jobs' shape from the JobSet as the API server
    # stores it (its defaults written: the leader's replicas 1), its pods' from
    # the Workload.
    prep = next(d for d in docs if d["metadata"]["name"] == "r-prep")
    assert prep["kind"] == "JobSet"
    assert [(rj["name"], rj.get("replicas"), rj["template"]["spec"].get("parallelism"))
            for rj in prep["spec"]["replicatedJobs"]] == [("leader", 1, None),
                                                          ("workers", 2, 2)]  # fmt: skip
    # The pod group as its Pods, each with its role's template (the launcher without a GPU)
    # and the group's label, total count and times.
    group = [d for d in docs if d["metadata"]["name"] in GROUP]
    assert [(d["kind"], d["metadata"]["labels"].get("kueue.x-k8s.io/pod-group-name"),
             d["metadata"]["annotations"].get("kueue.x-k8s.io/pod-group-total-count"),
             d["spec"]["containers"][0]["resources"].get("limits"))
            for d in group] == [
        ("Pod", "r-group", "3", None),
        ("Pod", "r-group", "3", {"nvidia.com/gpu": "1"}),
        ("Pod", "r-group", "3", {"nvidia.com/gpu": "1"}),
    ]  # fmt: skip
    assert len({recorded[n][record.ANNOTATION_DURATION] for n in GROUP}) == 1
    assert recorded["r-sweep"] == {  # running still: no duration (its offset checked above)
        "gpu-queues.dev/submit-at": recorded["r-sweep"][record.ANNOTATION_SUBMIT_AT],
        "gpu-queues.dev/running": "true",
    }
    recorded_at = time.monotonic()

    _wipe(cluster)
    original = replay_mix(config, MIX, stack=STACK, label="the mix")
    _wipe(cluster)
    replayed = replay_mix(config, out, stack=STACK, label="the recording")
    replays = time.monotonic() - recorded_at
    shown = render(replayed, original)
    assert outcomes(original) == EXPECTED, render(original, None)
    got, want = outcomes(replayed), outcomes(original)
    assert {n: v[:2] for n, v in got.items()} == {n: v[:2] for n, v in want.items()}, shown
    for name, (_, _, wait) in want.items():
        other = got[name][2]
        assert wait is not None and other is not None, shown
        assert abs(other - wait) <= HANDOFF, f"{name}: waited {other}s, the mix {wait}s\n{shown}"
    # the recorded durations: the mix's plus the live cluster's handoffs, to the second; a
    # HANDOFF per level of controllers between Kueue and the pods (a JobSet's two: the JobSet
    # controller, then the Job controller), since on a loaded machine each level is late on
    # its own (CI once recorded the JobSet's 8 s as 12 s, the Jobs' before it in bounds)
    for name, mix_duration, controllers in (("r-train", 20, 1), ("r-big", 10, 1),
                                            ("r-small", 6, 1), ("r-prep", 8, 2),
                                            ("r-group-w0", 5, 1)):  # fmt: skip
        seconds = parse_duration(recorded[name][record.ANNOTATION_DURATION])
        slack = HANDOFF * controllers
        assert mix_duration <= seconds <= mix_duration + slack, (name, recorded[name], slack)
    print(
        json.dumps(
            {
                "wall_run_seconds": round(ran, 1),
                "replays_seconds": round(replays, 1),
                "recorded": recorded,
                "mix": want,
                "recording": got,
            }
        ),
        file=sys.stderr,
    )


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"


def serving_template(app: str) -> dict[str, Any]:
    """A serving owner's pod template: 1 GPU, labelled `app` (its selector) and with a label
    the recording must drop."""
    container = {"name": "serve", "image": "registry.example/serve:1",
                 "command": ["sleep", "infinity"],
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                               "limits": {"nvidia.com/gpu": "1"}}}  # fmt: skip
    return {
        "metadata": {"labels": {"app": app, "team": "not-for-a-recording"}},
        "spec": {"containers": [container]},
    }


def recorded_back(rest: Rest, name: str) -> dict[str, Any]:
    """`gpuq record` of the last 10 minutes: default/`name`'s one document, recorded."""
    return recording(rest, name)[0]


def recording(rest: Rest, name: str) -> tuple[dict[str, Any], str]:
    """recorded_back's document, and the whole file it is in."""
    rec = record.record(rest, None, time.time(), 600.0, "the sandbox", "10m")
    (item,) = [i for i in rec.items if i.namespace == "default" and i.name == name]
    assert item.skipped is None, item.skipped
    text = rec.files(single=True)[""]
    (written,) = [
        d for d in yaml.safe_load_all(text) if d and d["metadata"]["name"] == name
    ]  # fmt: skip
    assert written["metadata"]["annotations"]["gpu-queues.dev/running"] == "true"
    for dropped in ("not-for-a-recording", "registry.example", "sleep"):
        assert dropped not in yaml.safe_dump(written), dropped
    return written, text


def local_catalog(framework: str) -> Catalog:
    """The local stack's queues, as the mix checks against them, with Kueue's `framework`."""
    return Catalog.from_stack(load_stack(stack.ROOT / "Pulumi.local.yaml"), [framework])


def read_back(written: dict[str, Any], framework: str) -> tuple[Any, ...]:
    """The mix's reading of a recorded document on the local stack with Kueue's `framework`:
    (status, problem, GPUs, pods)."""
    read = check(MixDocument("recorded", written), 0, local_catalog(framework))
    return read.status, read.problem, read.gpus, read.pods


def test_a_deployment_is_recorded_back_from_its_pods_workloads(cluster: KubeSession) -> None:
    """A Deployment of 2 pods of 1 GPU on the local stack's gpu-queue: the Deployment
    controller makes its ReplicaSet and pods, Kueue's pod integration a Workload of each pod
    (owned by the Pod) and admits both. `gpuq record` finds the Deployment through Pod and
    ReplicaSet (gpu_queues/tools/owner_sets.py) and writes it once: 2 replicas, its selector and
    the one label it reads, running, 2 GPUs when the mix reads it back."""
    rest = Rest(file_client(KUBECONFIG))
    rest.create(DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "rec-web", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rec-web"}},
                 "template": serving_template("rec-web")},
    })  # fmt: skip

    def mine() -> list[dict[str, Any]]:
        return [
            wl for wl in cluster.workloads("default")
            if any(o["kind"] == "Pod" and o["name"].startswith("rec-web-")
                   for o in wl["metadata"].get("ownerReferences", []))
        ]  # fmt: skip

    try:
        cluster.wait(
            "rec-web's two pods' Workloads admitted",
            lambda: len(w := mine()) == 2 and all(is_true(x, "Admitted") for x in w),
        )
        written = recorded_back(rest, "rec-web")
        assert (written["kind"], written["spec"]["replicas"]) == ("Deployment", 2)
        assert written["spec"]["selector"] == {"matchLabels": {"app": "rec-web"}}
        assert written["spec"]["template"]["metadata"] == {"labels": {"app": "rec-web"}}
        assert read_back(written, "deployment") == ("ok", None, 2, 2)
    finally:
        rest.request("DELETE", f"{DEPLOYMENTS}/rec-web", {"propagationPolicy": "Foreground"})
        cluster.wait("rec-web's Workloads gone", lambda: not mine(), timeout=90)


def test_a_statefulset_is_recorded_back_from_its_group_s_workload(cluster: KubeSession) -> None:
    """A StatefulSet of 2 pods of 1 GPU (podManagementPolicy Parallel) on the local stack's
    gpu-queue: the StatefulSet controller makes its pods, Kueue's statefulset integration makes
    them one pod group and one Workload of 2, and admits it. `gpuq record` finds the
    StatefulSet through the Workload's owners and writes it from its spec: 2 replicas, its
    selector and policy, the one label it reads, running; the what-if reads it back as one
    group of 2 pods, 2 GPUs, as Kueue counts it."""
    rest = Rest(file_client(KUBECONFIG))
    rest.create(STATEFULSETS, {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "rec-serve", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "gpu-queue"}},
        "spec": {"replicas": 2, "podManagementPolicy": "Parallel", "serviceName": "rec-serve",
                 "selector": {"matchLabels": {"app": "rec-serve"}},
                 "template": serving_template("rec-serve")},
    })  # fmt: skip

    def mine() -> list[dict[str, Any]]:
        return [
            wl for wl in cluster.workloads("default")
            if any(o["name"].startswith("rec-serve")
                   for o in wl["metadata"].get("ownerReferences", []))
        ]  # fmt: skip

    try:
        cluster.wait(
            "rec-serve's group Workload admitted",
            lambda: len(w := mine()) == 1 and is_true(w[0], "Admitted"),
        )
        written = recorded_back(rest, "rec-serve")
        assert (written["kind"], written["spec"]["replicas"]) == ("StatefulSet", 2)
        assert written["spec"]["selector"] == {"matchLabels": {"app": "rec-serve"}}
        assert written["spec"]["template"]["metadata"]["labels"]["app"] == "rec-serve"
        assert read_back(written, "statefulset") == ("ok", None, 2, 2)
    finally:
        rest.request("DELETE", f"{STATEFULSETS}/rec-serve", {"propagationPolicy": "Foreground"})
        cluster.wait("rec-serve's Workload gone", lambda: not mine(), timeout=90)


def shape(doc: dict[str, Any]) -> list[tuple[str, int]]:
    """An operated kind's roles and their pods, as the mix reads its manifest (its pod sets:
    a Kubeflow job's or MPIJob's replica types, a RayCluster's head and worker groups)."""
    return [(p.name, p.count) for p in pod_sets(doc["kind"], doc)]


def admitted_and_running(cluster: KubeSession, objects: Operated, name: str, pods: int) -> None:
    """Wait until `name`'s Workload is admitted and its `pods` pods run."""
    cluster.wait(
        f"{name} admitted and its {pods} pods running",
        lambda: (
            (w := objects.workload(name)) is not None
            and is_true(w, "Admitted")
            and len(objects.running(name)) == pods
        ),
    )


# kind: (its Kind, a manifest of it named, Kueue's framework, GPUs, pods); each manifest is the
# one its own e2e test admits on the local stack's gpu-queue (6 of the flavor's 8 GPUs)
OPERATED = {
    "PyTorchJob": (PYTORCHJOBS, pytorch_job, "kubeflow.org/pytorchjob", 6, 3),
    "MPIJob": (MPIJOBS, mpi_job, "kubeflow.org/mpijob", 6, 3),
    "RayCluster": (RAY_CLUSTERS, ray_cluster, "ray.io/raycluster", 6, 3),
}


@pytest.mark.parametrize("kind", sorted(OPERATED))
def test_an_operated_kind_is_recorded_back_as_its_roles(cluster: KubeSession, kind: str) -> None:
    """A PyTorchJob, an MPIJob and a RayCluster, each run by its own operator on the sandbox
    (the training-operator, the mpi-operator, KubeRay) and admitted by Kueue, recorded back by
    `gpuq record` as the kind it is: its roles and their replicas as the manifest had them,
    their image and command dropped, running; the mix reads it back with the GPUs and pods
    Kueue counted for its Workload."""
    operated_kind, manifest_of, framework, gpus, pods = OPERATED[kind]
    name = f"rec-{kind.lower()}"
    manifest = manifest_of(name)
    images = {c["image"] for p in pod_sets(kind, manifest) for c in p.spec["containers"]}
    wipe = wiped(cluster, operated_kind)
    objects = next(wipe)
    try:
        objects.create(manifest)
        admitted_and_running(cluster, objects, name, pods)
        written = recorded_back(Rest(file_client(KUBECONFIG)), name)
        assert (written["apiVersion"], written["kind"]) == (manifest["apiVersion"], kind)
        assert shape(written) == shape(manifest), written
        text = yaml.safe_dump(written)
        assert images and not any(i in text for i in images), images
        assert read_back(written, framework) == ("ok", None, gpus, pods)
    finally:
        next(wipe, None)  # its objects, Workloads and pods gone


def test_a_trainjob_is_recorded_back_with_the_runtime_it_names(
    cluster: KubeSession, tmp_path: Path
) -> None:
    """A TrainJob of 2 nodes of 3 GPUs on a TrainingRuntime shaped as the Trainer's
    torch-distributed (tests/e2e/test_trainjob.py), made into a JobSet by the Trainer on the
    sandbox and admitted by Kueue, recorded back by `gpuq record`: the TrainJob as it was
    written, with the runtime it names once in the same file before it, no image in either,
    running; the mix reads the file back as that one TrainJob, 6 GPUs and 2 pods, as Kueue
    counted them for its Workload (the runtime is no row)."""
    name = RECORDED
    manifest = train_job(name)
    wipe = wiped_trainjobs(cluster)
    jobs = next(wipe)
    try:
        jobs.create(manifest)
        admitted_and_running(cluster, jobs, name, 2)
        written, text = recording(Rest(file_client(KUBECONFIG)), name)
        assert (written["apiVersion"], written["kind"]) == (manifest["apiVersion"], "TrainJob")
        # as the API has it: the Trainer's webhook defaults the runtime's apiGroup
        ref = manifest["spec"]["runtimeRef"]
        assert written["spec"]["runtimeRef"] == {**ref, "apiGroup": "trainer.kubeflow.org"}
        assert written["spec"]["trainer"]["numNodes"] == 2
        docs = [d for d in yaml.safe_load_all(text) if d]
        runtimes = [i for i, d in enumerate(docs) if d["kind"] == "TrainingRuntime"]
        assert [docs[i]["metadata"]["name"] for i in runtimes] == [RUNTIME], text
        assert runtimes[0] < docs.index(written)
        assert "registry.example" not in text
        file = tmp_path / "recorded.yaml"
        file.write_text(text)
        catalog = local_catalog("trainer.kubeflow.org/trainjob")
        read = [e for e in load_mix(file, catalog) if e.name == name]
        assert [(e.kind, e.status, e.problem, e.gpus, e.pods) for e in read] == [
            ("TrainJob", "ok", None, 6, 2)
        ], read
    finally:
        next(wipe, None)  # its objects, runtime, Workloads and pods gone
