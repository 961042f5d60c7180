"""A LeaderWorkerSet on the sandbox: the real LWS controller (sandbox/lws.py) makes its leader
StatefulSet, each leader pod's worker StatefulSet and their pods, the Kueue the local stack
installs admits its group through its leaderworkerset integration (on in the release's default
Configuration: one Workload per group, a leader pod set and a worker pod set of size - 1
pods), holds the next LWS with its quota message (its pods made, but gated) and admits it once
the first is gone; kwok plays the pods. Then the what-if's sandbox engine replays a mix of
LWSs and a Job worked out by hand (whatif/lws-mix/mix.yaml says the story), and the fast
engine tells the same story of it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.kueue.client import file_client
from gpu_queues.tools import record
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.fast import replay_mix as fast_replay
from gpu_queues.whatif.mix import Catalog, check
from gpu_queues.whatif.workloads import Rest
from sandbox.paths import KUBECONFIG
from sandbox.replay.engine import replay_mix
from sandbox.shape import load_stack
from sandbox.walkthrough import QUEUE_LABEL, KubeSession, condition, is_true
from tests.conftest import ROOT
from tests.e2e.operated import NS, Kind, Operated, wiped

pytestmark = pytest.mark.e2e

NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWSS = Kind("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", NAME_LABEL)
FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
# Kueue's gate on a pod of a group it has not admitted (podconstants.SchedulingGateName).
ADMISSION_GATE = "kueue.x-k8s.io/admission"
MIX = Path(__file__).parent / "whatif" / "lws-mix"
# leader 1 pod x 1 GPU + workers 2 pods x 2 GPUs = 5 of the flavor's 8: a second needs 2 more.
HELD_MESSAGE = (
    "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu "
    "in flavor gpu-flavor, 2 more needed"
)


def template(name: str, gpus: int) -> dict[str, Any]:
    container = {
        "name": name,
        "image": "vllm/vllm-openai:v0.6.0",
        "command": ["sleep", "infinity"],
        "resources": {
            "requests": {"cpu": "1", "memory": "4Gi"},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    return {"spec": {"containers": [container]}}


def leader_worker_set(name: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "gpu-queue"}},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": 3,
                "leaderTemplate": template("leader", 1),
                "workerTemplate": template("worker", 2),
            },
        },
    }


@pytest.fixture
def sets(cluster: KubeSession) -> Iterator[Operated]:
    yield from wiped(cluster, LWSS)


def test_kueue_admits_an_lws_group_and_holds_the_next_with_its_quota_message(
    sets: Operated,
) -> None:
    lws, k = sets, sets.k
    lws.create(leader_worker_set("serve-a"))
    wl_a = k.wait(
        "serve-a admitted", lambda: (w := lws.workload("serve-a")) and is_true(w, "Admitted") and w
    )
    assert len(lws.workloads("serve-a")) == 1  # one group (replicas 1), one Workload
    assert [ps["name"] for ps in wl_a["spec"]["podSets"]] == ["leader", "worker"]
    assert [ps["count"] for ps in wl_a["spec"]["podSets"]] == [1, 2]
    flavors = [a["flavors"] for a in wl_a["status"]["admission"]["podSetAssignments"]]
    on_the_flavor = {"cpu": "gpu-flavor", "memory": "gpu-flavor", "nvidia.com/gpu": "gpu-flavor"}
    assert flavors == [on_the_flavor] * 2
    # The LWS controller made the leader's and the workers' StatefulSets, the StatefulSet
    # controller their pods, Kueue ungated them; kwok runs them on the GPU node.
    running = k.wait(
        "serve-a's three pods Running", lambda: (r := lws.running("serve-a")) and len(r) == 3 and r
    )
    roles = sorted(p.metadata.labels["leaderworkerset.sigs.k8s.io/worker-index"] for p in running)
    assert roles == ["0", "1", "2"]  # the leader is worker 0

    lws.create(leader_worker_set("serve-b"))
    held = k.wait("serve-b evaluated", lambda: condition(lws.workload("serve-b"), "QuotaReserved"))
    assert (held["status"], held["reason"]) == ("False", "Pending")
    assert held["message"] == HELD_MESSAGE
    waiting = k.wait("serve-b's leader pod made", lambda: lws.pods("serve-b"))
    assert not [p for p in waiting if p.status.phase == "Running"]
    assert all(ADMISSION_GATE in [g.name for g in p.spec.scheduling_gates or []] for p in waiting)

    lws.delete("serve-a")
    k.wait("serve-b admitted", lambda: is_true(lws.workload("serve-b"), "Admitted"), timeout=90)
    k.wait("serve-b's three pods Running", lambda: len(lws.running("serve-b")) == 3, timeout=90)


def test_the_sandbox_engine_replays_lwss_deleting_each_when_its_time_is_up(
    sets: Operated,
) -> None:
    k = sets.k
    config = load_stack(ROOT / "Pulumi.local.yaml")
    try:
        run = replay_mix(config, MIX, stack="local", label="local")
    finally:
        if any(j.metadata.name == "batch-a" for j in k.batch.list_namespaced_job(NS).items):
            k.delete_job("batch-a", NS)
    got = {r.name: (r.outcome, r.flavor, r.wait_seconds) for r in run.workloads}
    assert got == {
        "serve-a": ("finished", "gpu-flavor", 0),
        "batch-a": ("finished", "gpu-flavor", 1740),  # admitted at 30m, submitted at 1m
        "serve-b": ("pending", None, None),  # 4 GPUs free from 40m, 5 needed
        "serve-wide": ("admitted", "gpu-flavor", 1620),  # its group 1 admitted at 30m
        "serve-bad": ("invalid", None, None),
    }, run.workloads
    by_name = {r.name: r for r in run.workloads}
    assert by_name["serve-a"].intervals == [(0, 1800)]  # deleted at its 30m: GPU time ends
    assert by_name["batch-a"].intervals == [(1800, 2400)]
    assert by_name["serve-wide"].intervals == [(1800, None)]  # both groups running
    assert by_name["serve-a"].gpus == by_name["serve-b"].gpus == 5
    assert by_name["serve-wide"].gpus == 4
    assert (by_name["serve-bad"].message or "").startswith("spec.leaderWorkerTemplate.size: 0")
    assert not sets.workloads("serve-a")  # gone with its LWS
    # The fast engine tells the same story of the mix (serve-wide's groups admitted one by
    # one there too: tests/toolchain/test_whatif_lws.py).
    fast = fast_replay(config, MIX, stack="local", label="local").workloads

    def story(rows: list[Any]) -> dict[str, Any]:
        return {
            r.name: (r.outcome, r.flavor, r.wait_seconds, r.intervals, r.gpus, r.message)
            for r in rows
        }

    assert story(fast) == story(run.workloads)


def test_record_reads_an_lws_of_two_groups_back_as_one_leaderworkerset(
    sets: Operated,
) -> None:
    """`gpuq record` (gpu_queues/tools/owner_sets.py) of a live LWS of 2 groups of 5 GPUs on the
    flavor's 8: Kueue makes a Workload per group and admits one, the other waits. Recorded as
    one LeaderWorkerSet of 2 groups of size 3 with its leader and worker templates from the
    Workloads, waiting (not every group holds quota), which the mix reads back as 2 x 5 GPUs."""
    lws, k = sets, sets.k
    lws.create(leader_worker_set("serve-rec", replicas=2))
    k.wait("serve-rec's first group admitted and its second evaluated", lambda: (
        len(w := lws.workloads("serve-rec")) == 2
        and sorted(is_true(x, "Admitted") for x in w) == [False, True]
        and all(condition(x, "QuotaReserved") for x in w)
    ))  # fmt: skip
    rest = Rest(file_client(KUBECONFIG))
    rec = record.record(rest, None, time.time(), 600.0, "the sandbox", "10m")
    (item,) = [i for i in rec.items if i.namespace == NS and i.name == "serve-rec"]
    assert item.skipped is None and item.manifest is not None
    (written,) = [
        d for d in yaml.safe_load_all(rec.files(single=True)[""])
        if d and d["metadata"]["name"] == "serve-rec"
    ]  # fmt: skip
    assert (written["kind"], written["spec"]["replicas"]) == ("LeaderWorkerSet", 2)
    lwt = written["spec"]["leaderWorkerTemplate"]
    assert (lwt["size"], sorted(lwt)) == (3, ["leaderTemplate", "size", "workerTemplate"])
    assert written["metadata"]["annotations"]["gpu-queues.dev/waiting"] == "true"
    text = yaml.safe_dump(written)
    for dropped in ("vllm", "sleep"):
        assert dropped not in text, dropped
    catalog = Catalog.from_stack(load_stack(ROOT / "Pulumi.local.yaml"), [FRAMEWORK])
    read = check(MixDocument("recorded", written), 0, catalog)
    assert (read.status, read.problem, read.gpus, read.pods) == ("ok", None, 10, 6)
