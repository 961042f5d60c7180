"""`gpuq record` of pod groups without a cluster: a group's one Workload (owned by each of its
Pods, a pod set per role named by the role hash Kueue's webhook writes on each pod) becomes the
group's Pod documents, which the what-if reads back as one workload; a group that no longer
matches its Workload, or whose pods are gone, is a comment naming why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_queues.tools.owners import IMAGE_PLACEHOLDER, ROLE_HASH
from gpu_queues.whatif.mix import Catalog, TeamQueue, load_mix
from gpu_queues.whatif.podgroups import GROUP_LABEL, TOTAL_COUNT
from tests.builders import Pod, Workload
from tests.unit.tools.test_record import SECRET_BITS, FakeRest, cluster, docs, pod_spec, recorded

pytestmark = pytest.mark.unit

# Two roles, as Kueue names their pod sets (sorted): a launcher of 1 GPU, two workers of 4.
LAUNCHER, WORKER = "1a2b3c4d", "9f8e7d6c"
PODS = (("g-launch", LAUNCHER, "10:00:00"), ("g-w0", WORKER, "10:00:01"),
        ("g-w1", WORKER, "10:00:03"))  # fmt: skip


def group_day(
    pods: tuple[tuple[str, str, str], ...] = PODS,
    roles: dict[str, tuple[int, int]] | None = None,
    total: str = "3",
) -> FakeRest:
    """alpha's group g: its Workload (pod sets by role: GPUs per pod, count), admitted at
    10:00:05 and finished at 10:20:05, and its Pods as the API has them."""
    roles = roles or {LAUNCHER: (1, 1), WORKER: (4, 2)}
    wl = Workload("g", "alpha").uid("wl-g").created("2026-12-01T10:00:03Z").queue("jobs")
    for role, (gpus, count) in sorted(roles.items()):
        wl.pod_set(pod_spec(gpus), count=count, name=role)
    for name, _, _ in pods:
        wl.owner("Pod", name, f"uid-{name}", api_version="v1")
    wl.reserve_quota("alpha-cq", {"nvidia.com/gpu": "h100"}, "2026-12-01T10:00:05Z")
    wl.admitted("2026-12-01T10:00:05Z").finished("2026-12-01T10:20:05Z")
    rest = cluster([wl.obj()], [])
    for name, role, at in pods:
        gpus = roles[role][0] if role in roles else 1
        made = (
            Pod(name, "alpha").uid(f"uid-{name}").created(f"2026-12-01T{at}Z").queue("jobs")
            .label(GROUP_LABEL, "g").annotation(TOTAL_COUNT, total).annotation(ROLE_HASH, role)
            .pod_spec(**pod_spec(gpus))
        )  # fmt: skip
        rest.objects[f"/api/v1/namespaces/alpha/pods/{name}"] = made.obj()
    return rest


def test_a_pod_group_is_recorded_as_its_pods_with_one_time_and_each_role_s_template() -> None:
    rec = recorded(group_day())
    (item,) = rec.items
    assert (item.name, item.workload, item.skipped) == ("g", "g", None)
    written = docs(rec.files(single=False)["alpha.yaml"])
    assert [d["metadata"]["name"] for d in written] == ["g-launch", "g-w0", "g-w1"]
    for d in written:
        assert (d["apiVersion"], d["kind"]) == ("v1", "Pod")
        # The group as its user wrote it, queued at its last pod's creation (submit-at 0s:
        # the only one recorded) and run 20 minutes, the same on every pod.
        assert d["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "jobs", GROUP_LABEL: "g"}
        assert d["metadata"]["annotations"] == {
            "gpu-queues.dev/submit-at": "0s",
            TOTAL_COUNT: "3",
            "gpu-queues.dev/duration": "20m",
        }
    # each pod's template from its role's pod set (the launcher 1 GPU, the workers 4)
    gpus = [d["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] for d in written]
    assert gpus == ["1", "4", "4"]
    assert written[0]["spec"]["containers"][0]["image"] == IMAGE_PLACEHOLDER
    text = rec.files(single=False)["alpha.yaml"]
    for bit in (*SECRET_BITS, ROLE_HASH):
        assert bit not in text, bit


def test_a_recorded_pod_group_is_one_workload_of_the_mix(tmp_path: Path) -> None:
    out = tmp_path / "day.yaml"
    out.write_text(recorded(group_day()).files(single=True)[""])
    catalog = Catalog((TeamQueue("alpha", "alpha", "jobs", "alpha-cq"),),
                      frameworks=frozenset({"pod"}))  # fmt: skip
    (entry,) = load_mix(out, catalog)
    assert (entry.name, entry.status, entry.pods, entry.gpus, entry.duration) == (
        "g", "ok", 3, 9, 1200.0
    )  # fmt: skip


def test_a_group_of_one_pod_set_needs_no_role_hash() -> None:
    rest = group_day(roles={WORKER: (4, 3)}, pods=tuple((n, WORKER, t) for n, _, t in PODS))
    for name, _, _ in PODS:
        del rest.objects[f"/api/v1/namespaces/alpha/pods/{name}"]["metadata"]["annotations"][
            ROLE_HASH]  # fmt: skip
    (item,) = recorded(rest).items
    assert item.skipped is None
    assert [d["metadata"]["name"] for d in item.documents()] == ["g-launch", "g-w0", "g-w1"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("gone", "its Pod alpha/g-w1 is no longer in the API (deleted)"),
        ("remade", "its Pod alpha/g-w1 was deleted and made again (new uid)"),
        ("role", "malformed: its Pod g-w1's kueue.x-k8s.io/role-hash 'feedf00d' names none of "
                 "its Workload's pod sets"),
        ("total", "its pod group g no longer matches its Workload: 3 pods of total count "
                  "['3', '4'], roles [('1a2b3c4d', 1), ('9f8e7d6c', 2)] against the Workload's "
                  "[('1a2b3c4d', 1), ('9f8e7d6c', 2)]"),
        ("count", "its pod group g no longer matches its Workload: 3 pods of total count "
                  "['3'], roles [('1a2b3c4d', 1), ('9f8e7d6c', 2)] against the Workload's "
                  "[('1a2b3c4d', 1), ('9f8e7d6c', 3)]"),
        ("label", "its Pod g-w1 is not of pod group g"),
        ("created", "malformed: the Pod's creationTimestamp 'soon' is not a time"),
        # what no API server sends, but one behind a proxy might: a comment, never a traceback
        ("role-list", "malformed: its Pod g-w1's kueue.x-k8s.io/role-hash ['a'] names none of "
                      "its Workload's pod sets"),
        ("total-map", "its pod group g no longer matches its Workload: 3 pods of total count "
                      "['3', \"{'n': 3}\"], roles [('1a2b3c4d', 1), ('9f8e7d6c', 2)] against "
                      "the Workload's [('1a2b3c4d', 1), ('9f8e7d6c', 2)]"),
        ("name-gone", "malformed: a pod's name None is not an object name (a DNS-1123 subdomain: "
                      "at most 253 of a-z, 0-9, '-' and '.')"),
    ],
)  # fmt: skip
def test_a_group_that_no_longer_matches_its_workload_is_a_comment(change: str, why: str) -> None:
    rest = group_day(roles={LAUNCHER: (1, 1), WORKER: (4, 3 if change == "count" else 2)})
    path = "/api/v1/namespaces/alpha/pods/g-w1"
    meta: dict[str, Any] = rest.objects[path]["metadata"]
    if change == "gone":
        del rest.objects[path]
    elif change == "remade":
        meta["uid"] = "uid-new"
    elif change == "role":
        meta["annotations"][ROLE_HASH] = "feedf00d"
    elif change == "total":
        meta["annotations"][TOTAL_COUNT] = "4"
    elif change == "label":
        meta["labels"][GROUP_LABEL] = "h"
    elif change == "created":
        meta["creationTimestamp"] = "soon"
    elif change == "role-list":
        meta["annotations"][ROLE_HASH] = ["a"]
    elif change == "total-map":
        meta["annotations"][TOTAL_COUNT] = {"n": 3}
    elif change == "name-gone":
        del meta["name"]
    rec = recorded(rest)
    (item,) = rec.items
    assert (item.manifest, item.skipped, item.documents()) == (None, why, ())
    assert f"# not recorded: Workload alpha/g: {why}" in rec.files(single=False)["alpha.yaml"]


def test_pods_of_a_group_another_kind_owns_too_are_not_recorded_as_a_group() -> None:
    # An owner of a kind not recorded that owns a group's Workload too (as Kueue's
    # LeaderWorkerSet integration does its groups'): they are its pods, not a group a user wrote
    # (a StatefulSet's and an LWS's are read as their owner: test_record_kinds.py,
    # test_record_sets.py).
    rest = group_day()
    wl = rest.objects["/apis/kueue.x-k8s.io/v1beta2/workloads"]["items"][0]
    wl["metadata"]["ownerReferences"].insert(0, {
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "g",
        "uid": "uid-aw"})  # fmt: skip
    (item,) = recorded(rest).items
    assert item.documents() == ()
    assert (item.skipped or "").startswith("its owner is a AppWrapper; the mix records Jobs, Pods")
