"""LeaderWorkerSets in the what-if's mix: counted as Kueue's leaderworkerset integration counts
them (a Workload per group, each a leader pod set of 1 pod and a worker pod set of size - 1),
refused by field where LWS's webhook and CRD or Kueue's webhook would refuse them, and replayed
by the fast engine (it plays LWS's controller as far as Kueue reads it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.engine_input import not_fast
from gpu_queues.whatif.mix import COMPLETE_AFTER, QUEUE_LABEL, Catalog, Entry, TeamQueue, load_mix
from gpu_queues.whatif.outcome import outcome, replicas_row
from gpu_queues.whatif.podsets import pod_sets

pytestmark = pytest.mark.unit

FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
QUEUES = (TeamQueue("research", "team-research", "gpu-queue", "research-cq"),)
CATALOG = Catalog(QUEUES, frameworks=frozenset({"batch/job", "pod", FRAMEWORK}))


def template(gpus: int, cpu: str = "1") -> dict[str, Any]:
    limits = {"nvidia.com/gpu": gpus} if gpus else {}
    resources = {"requests": {"cpu": cpu}, "limits": limits}
    return {
        "metadata": {"annotations": {COMPLETE_AFTER: "5s"}},
        "spec": {"containers": [{"name": "serve", "image": "x", "resources": resources}]},
    }


def lws(replicas: int | None = 2, size: int | None = 4, leader: bool = True) -> dict[str, Any]:
    """`replicas` groups of a leader (no GPU) and size - 1 workers of 2 GPUs each."""
    lwt: dict[str, Any] = {"workerTemplate": template(2)}
    if size is not None:
        lwt["size"] = size
    if leader:
        lwt["leaderTemplate"] = template(0)
    spec: dict[str, Any] = {"leaderWorkerTemplate": lwt}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "serve",
            "namespace": "team-research",
            "labels": {QUEUE_LABEL: "gpu-queue"},
            "annotations": {"gpu-queues.dev/duration": "1h"},
        },
        "spec": spec,
    }


def load(tmp_path: Path, body: Any, catalog: Catalog = CATALOG) -> Entry:
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump(body))
    (entry,) = load_mix(tmp_path / "mix.yaml", catalog)
    return entry


def test_each_group_is_a_leader_pod_set_and_a_worker_pod_set_of_size_minus_one() -> None:
    sets = pod_sets("LeaderWorkerSet", lws(replicas=3, size=4))
    assert [(s.name, s.count, s.copies) for s in sets] == [("leader", 1, 3), ("worker", 3, 3)]


def test_without_a_leader_template_a_group_is_one_main_pod_set_of_size_pods() -> None:
    sets = pod_sets("LeaderWorkerSet", lws(replicas=2, size=4, leader=False))
    assert [(s.name, s.count, s.copies) for s in sets] == [("main", 4, 2)]


def test_replicas_and_size_default_to_one_group_of_one_pod_as_the_crd_has_them() -> None:
    sets = pod_sets("LeaderWorkerSet", lws(replicas=None, size=None, leader=False))
    assert [(s.name, s.count, s.copies) for s in sets] == [("main", 1, 1)]
    # With a leader and the default size 1, the workers' pod set has no pods (Kueue keeps it).
    sets = pod_sets("LeaderWorkerSet", lws(replicas=None, size=None))
    assert [(s.name, s.count, s.copies) for s in sets] == [("leader", 1, 1), ("worker", 0, 1)]


def test_an_lws_holds_the_gpus_and_pods_of_every_group(tmp_path: Path) -> None:
    entry = load(tmp_path, lws(replicas=2, size=4))
    assert entry.status == "ok", entry.problem
    # 2 groups x (a leader of no GPU + 3 workers x 2 GPUs) = 12 GPUs in 8 pods.
    assert (entry.kind, entry.gpus, entry.pods, entry.duration) == (
        "LeaderWorkerSet",
        12,
        8,
        3600.0,
    )
    lwt = entry.manifest["spec"]["leaderWorkerTemplate"]
    for t in ("leaderTemplate", "workerTemplate"):  # the replay's own lever is not submitted
        assert COMPLETE_AFTER not in lwt[t]["metadata"]["annotations"]


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (("replicas",), -1, "spec.replicas: -1 must be equal or greater than 0"),
        (("replicas",), 1_000_001, "spec.replicas: 1000001 must be at most 1,000,000"),
        (("replicas",), "2", "spec.replicas: must be an integer, not a string"),
        (("leaderWorkerTemplate", "size"), 0,
         "spec.leaderWorkerTemplate.size: 0 must be equal or greater than 1"),
        (("leaderWorkerTemplate", "size"), 2**30,
         "spec.replicas: 2 groups of 1073741824 pods exceed 2147483647 pods"),
        (("leaderWorkerTemplate", "size"), 2**31,
         "spec.leaderWorkerTemplate.size: 2147483648 is out of range"),
        (("leaderWorkerTemplate", "restartPolicy"), "Always",
         "spec.leaderWorkerTemplate.restartPolicy: 'Always' is not one of Default, "
         "RecreateGroupOnPodRestart, None"),
        (("startupPolicy",), "Eager",
         "spec.startupPolicy: 'Eager' is not one of LeaderCreated, LeaderReady"),
        (("leaderWorkerTemplate", "workerTemplate"), None,
         "spec.leaderWorkerTemplate.workerTemplate: is required"),
        (("leaderWorkerTemplate",), None, "spec.leaderWorkerTemplate: is required"),
        (("leaderWorkerTemplate", "leaderTemplate"), [],
         "spec.leaderWorkerTemplate.leaderTemplate: must be a mapping, not a list"),
        (("leaderWorkerTemplate", "workerTemplate", "spec", "containers"), [],
         "spec.leaderWorkerTemplate.workerTemplate.spec.containers: must not be empty"),
    ],
)  # fmt: skip
def test_a_malformed_lws_is_invalid_naming_the_field(
    tmp_path: Path, path: tuple[str, ...], value: Any, words: str
) -> None:
    body = lws()
    inner: Any = body["spec"]
    for key in path[:-1]:
        inner = inner[key]
    if value is None:
        del inner[path[-1]]
    else:
        inner[path[-1]] = value
    entry = load(tmp_path, body)
    assert entry.status == "invalid"
    assert words in (entry.problem or ""), entry.problem
    assert not entry.manifest


def test_an_lws_whose_name_is_no_dns_1035_label_is_invalid(tmp_path: Path) -> None:
    body = lws()
    body["metadata"]["name"] = "1st-serve"  # a Job's name may start with a digit; an LWS's not
    entry = load(tmp_path, body)
    assert (entry.status, entry.problem) == (
        "invalid",
        "metadata.name: '1st-serve' is not a DNS-1035 label (a letter first, at most 63 "
        "characters): LWS names its headless Service after it",
    )


def test_an_lws_on_a_stack_without_the_integration_names_it_to_enable(tmp_path: Path) -> None:
    jobs_only = Catalog(QUEUES, frameworks=frozenset({"batch/job"}))
    entry = load(tmp_path, lws(), jobs_only)
    assert entry.status == "unsupported"
    assert entry.problem == (
        f"Kueue does not manage LeaderWorkerSet on this stack: integration {FRAMEWORK} is not "
        "enabled; add it to kueue.manager.integrations.frameworks (now: batch/job)"
    )


def test_the_fast_engine_replays_an_lws_of_several_groups(tmp_path: Path) -> None:
    entry = load(tmp_path, lws(replicas=2))
    assert entry.status == "ok"
    assert not_fast(entry) is None


def group_workload(flavor: str | None) -> dict[str, Any]:
    """A group's Workload: admitted to flavor, or (None) pending with Kueue's message."""
    if flavor is None:
        pending = {"type": "QuotaReserved", "status": "False", "message": "6 more needed"}
        return {"status": {"conditions": [pending]}}
    assignments = [
        {"name": name, "flavors": {"nvidia.com/gpu": flavor}, "count": count}
        for name, count in (("leader", 1), ("worker", 3))
    ]
    admission = {"clusterQueue": "research-cq", "podSetAssignments": assignments}
    admitted = [{"type": t, "status": "True"} for t in ("QuotaReserved", "Admitted")]
    return {"status": {"admission": admission, "conditions": admitted}}


def test_an_lws_short_of_groups_is_pending_saying_how_many_and_why(tmp_path: Path) -> None:
    # The fast engine's row of an LWS of two groups, one admitted (its Workload the waiting
    # group's, as the engine gives it): pending, counting groups, not pods.
    e = load(tmp_path, lws(replicas=2))
    groups = [group_workload("a100"), group_workload(None)]
    base = outcome(e, groups[1], running=False, stuck=None, evictions=[], admitted_at=None,
                   gpu_seconds=0.0, problem=None)  # fmt: skip
    r = replicas_row(e, base, groups, None)
    assert (r.outcome, r.wait_seconds) == ("pending", None)
    assert r.message == "1 of 2 groups admitted: 6 more needed"
    both = replicas_row(e, outcome(e, groups[0], running=True, stuck=None, evictions=[],
                                   admitted_at=60.0, gpu_seconds=0.0, problem=None),
                        [groups[0]] * 2, 60.0)  # fmt: skip
    assert (both.outcome, both.flavor, both.message) == ("admitted", "a100", None)


def test_an_lws_of_one_group_is_the_row_of_its_one_workload(tmp_path: Path) -> None:
    # As the sandbox engine's row of it: Kueue's message alone, no count of groups.
    e = load(tmp_path, lws(replicas=1))
    waiting = group_workload(None)
    base = outcome(e, waiting, running=False, stuck=None, evictions=[], admitted_at=None,
                   gpu_seconds=0.0, problem=None)  # fmt: skip
    r = replicas_row(e, base, [waiting], None)
    assert (r.outcome, r.message) == ("pending", "6 more needed")
