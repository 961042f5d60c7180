"""`gpuq status --eta --submit job.yaml` (gpu_queues/tools/eta.py, issue 40 item 6): for a
manifest not yet submitted, whether it can ever start on the stack (Kueue's own answer, from a
replay of it alone on the cluster's nodes) and, if so, when and on which flavor it would start
if submitted now (the live snapshot replayed with it added last). On the prod stack, whose
research team may hold at most 24 H100s (16 nominal, 8 borrowed) and 8 A100s (4 + 4) and whose
nodes have 8 GPUs each:

- 32 GPUs in one pod are over every flavor's maximum: never, in Kueue's words;
- 16 GPUs in one pod fit the quota (Kueue admits it) but no node: never, said so;
- 16 GPUs as a JobSet of 2 pods of 8 fit both;
- 2 GPUs with nothing pending start at once.

The estimates of the live workloads are the same with or without a submission. A TrainJob is
answered on the runtime it names, the cluster's or the --submit file's. The engine must be built
(`make toolchain`)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import ROOT
from gpu_queues.tools import eta
from gpu_queues.tools.eta_mix import EtaError
from gpu_queues.tools.status import Snapshot
from gpu_queues.whatif.documents import MixDocument
from gpu_queues.whatif.nodes import nodes
from sandbox.bench.eta import owner_of, synthetic
from sandbox.shape import load_stack
from tests.builders import Job, JobSet
from tests.toolchain.test_whatif_trainjob import RUNTIME, trainjob, trainjob_queue

pytestmark = pytest.mark.toolchain

NOW = 1_800_000_000.0
NS = "team-research"


def job(name: str, gpus: int, pods: int = 1, queue: str = "gpu-queue") -> dict[str, Any]:
    return (
        Job(name, NS).queue(queue).parallelism(pods).completions(pods)
        .requests(cpu=4, memory="32Gi").limit("nvidia.com/gpu", gpus).duration("1h").obj()
    )  # fmt: skip


def estimate(pending: int, *manifests: dict[str, Any]) -> eta.Estimate:
    config = load_stack(ROOT / "Pulumi.prod.yaml")
    snapshot, jobs = synthetic(config, pending, 3, NOW)
    docs = [MixDocument(f"job.yaml#{i + 1}", m) for i, m in enumerate(manifests)]
    return eta.predict(config, snapshot, owner_of(jobs), nodes(config), source="test", submit=docs)


def test_over_every_flavors_maximum_can_never_start_in_kueues_words() -> None:
    (answer,) = estimate(0, job("huge", 32)).submitted
    assert answer.prediction is None
    assert answer.never is not None
    assert answer.never.startswith("Kueue does not admit it even alone on the empty cluster: ")
    # Kueue's flavor assigner names the resource and each flavor it tried.
    for word in ("nvidia.com/gpu", "h100", "a100", "maximum capacity"):
        assert word in answer.never, answer.never


def test_within_the_quota_but_over_every_node_can_never_start_and_says_so() -> None:
    (answer,) = estimate(0, job("wide", 16)).submitted
    assert answer.prediction is None
    assert answer.never is not None
    assert answer.never.startswith("Kueue admits it, but its pods fit no node of the cluster: "), (
        answer.never
    )


def test_the_same_gpus_spread_over_pods_that_fit_start_with_a_flavor() -> None:
    spread = JobSet("spread", NS).queue("gpu-queue").duration("1h").replicated(
        "workers", Job("w", NS).parallelism(2).completions(2).limit("nvidia.com/gpu", 8)
    )  # fmt: skip
    small = job("small", 2)
    answers = estimate(0, spread.obj(), small).submitted
    assert [a.never for a in answers] == [None, None]
    for a in answers:
        assert a.prediction is not None and a.prediction.at is not None
        assert a.prediction.at >= NOW
        assert a.prediction.flavor in ("h100", "a100")
    # Nothing pending: the research team has room for 2 GPUs now.
    small_answer = answers[1].prediction
    assert small_answer is not None and small_answer.at == NOW
    text = eta.render(estimate(0, small))
    assert "If submitted now (--submit):" in text
    assert "team-research/small (Job, 2 GPUs, ClusterQueue research-cq): would be admitted" in text


def test_the_live_estimates_do_not_change_with_a_submission() -> None:
    without = estimate(30)
    with_one = estimate(30, job("extra", 2))
    assert [(p.item.name, p.at, p.flavor) for p in with_one.predictions] == [
        (p.item.name, p.at, p.flavor) for p in without.predictions
    ]
    (answer,) = with_one.submitted
    assert answer.never is None and answer.prediction is not None
    # Added last: it starts no sooner than the live workloads of its ClusterQueue before it
    # whose estimate is within the replay (all submitted earlier, at its priority).
    mine = [
        p.at for p in without.predictions
        if p.item.cluster_queue == "research-cq" and p.at is not None
    ]  # fmt: skip
    assert mine and answer.prediction.at is not None
    assert answer.prediction.at >= min(mine)


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        (job("lost", 2, queue="nope"), "invalid: "),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "unsupported: "),
    ],
)
def test_a_manifest_the_stack_refuses_is_an_error_naming_why(
    manifest: dict[str, Any], says: str
) -> None:
    with pytest.raises(EtaError) as raised:
        estimate(0, manifest)
    assert str(raised.value).startswith(f"--submit job.yaml#1: {says}"), str(raised.value)


def test_a_manifest_already_in_the_cluster_is_refused() -> None:
    config = load_stack(ROOT / "Pulumi.prod.yaml")
    snapshot, _ = synthetic(config, 3, 3, NOW)
    live = next(
        wl["metadata"]["ownerReferences"][0]["name"]
        for wl, cq, _ in snapshot.workloads
        if cq == "research-cq" and "-wait-" in wl["metadata"]["name"]
    )
    with pytest.raises(EtaError, match="is already in the cluster"):
        estimate(3, job(live, 2))


# A TrainJob not yet submitted, on team a's 8 GPUs (tests/toolchain/test_whatif_trainjob.py's
# stack): its runtime is the cluster's, or the --submit file's beside it (eta_mix.py
# submitted_runtimes), and the engine counts its pods from it as Kueue does.
def trainjob_estimate(*manifests: dict[str, Any], on_cluster: bool) -> eta.Estimate:
    config = load_config(trainjob_queue().raw())
    snapshot = Snapshot(NOW, [("a", "a-cq")], {}, [], {})
    cluster = {("ClusterTrainingRuntime", "", "torch-distributed"): RUNTIME} if on_cluster else {}
    docs = [MixDocument(f"job.yaml#{i + 1}", m) for i, m in enumerate(manifests)]
    return eta.predict(
        config, snapshot, lambda kind, ns, name: cluster.get((kind, ns, name)), nodes(config),
        source="test", submit=docs,
    )  # fmt: skip


@pytest.mark.parametrize("on_cluster", [True, False])
def test_a_trainjob_that_fits_starts_now_on_its_runtime_from_the_cluster_or_the_file(
    on_cluster: bool,
) -> None:
    # 2 nodes x 3 GPUs = 6 of 8, nothing else: admitted in the first cycle.
    given = () if on_cluster else (RUNTIME,)
    estimate = trainjob_estimate(*given, trainjob("tune", 2, 3, 0, 600), on_cluster=on_cluster)
    (answer,) = estimate.submitted
    assert answer.never is None
    assert answer.prediction is not None
    assert (answer.prediction.at, answer.prediction.flavor) == (NOW, "gpu")
    assert (answer.entry.gpus, answer.entry.pods) == (6, 2)


def test_a_trainjob_over_the_quota_can_never_start_in_kueues_words() -> None:
    # 2 nodes x 5 GPUs = 10 > the flavor's 8: Kueue names the runtime's trainer step (pod set
    # node), the resource, the flavor and the count it made of the runtime.
    (answer,) = trainjob_estimate(trainjob("huge", 2, 5, 0, 600), on_cluster=True).submitted
    assert answer.prediction is None
    assert answer.never == (
        "Kueue does not admit it even alone on the empty cluster: couldn't assign flavors to pod "
        "set node: insufficient quota for nvidia.com/gpu in flavor gpu, previously considered "
        "podsets requests (0) + current podset request (10) > maximum capacity (8)"
    )
