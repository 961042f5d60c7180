"""Pod groups in a mix (gpu_queues.whatif.podgroups): several Pod documents, one workload;
a group Kueue would refuse or treat otherwise than its pods say is one invalid row naming the
field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.mix import ANNOTATION_DURATION, ANNOTATION_SUBMIT_AT, load_mix
from gpu_queues.whatif.outcome import outcome
from gpu_queues.whatif.podgroups import GROUP_LABEL, TOTAL_COUNT, missing
from tests.builders import Pod
from tests.unit.whatif.test_mix import CATALOG

pytestmark = pytest.mark.unit


def member(
    name: str, group: str = "g", total: str | None = "2", gpus: int = 2, **notes: str
) -> Any:
    """A pod of team-vision's group `group`, as its user writes it."""
    pod = Pod(name, "team-vision").queue("vision-jobs").limits(gpu=gpus).label(GROUP_LABEL, group)
    if total is not None:
        pod.annotation(TOTAL_COUNT, total)
    for key, value in notes.items():
        pod.annotation(key, value)
    return pod.obj()


def timed(name: str, key: str, value: str) -> Any:
    """A pod of group g with one of the replay's annotations."""
    body = member(name)
    body["metadata"]["annotations"][key] = value
    return body


def entries(tmp_path: Path, *docs: Any) -> list[Any]:
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return load_mix(path, CATALOG)


def test_a_pod_group_is_one_entry_holding_the_gpus_of_all_its_pods(tmp_path: Path) -> None:
    at = {ANNOTATION_SUBMIT_AT: "1m", ANNOTATION_DURATION: "10m"}
    single = Pod("solo", "team-vision").queue("vision-jobs").limits(gpu=1).obj()
    got = entries(tmp_path, member("g-0", gpus=2, **at), single, member("g-1", gpus=3, **at))
    assert [(e.kind, e.name, e.index) for e in got] == [("Pod", "g", 0), ("Pod", "solo", 1)]
    group = got[0]
    assert group.status == "ok" and group.gpus == 5 and group.pods == 2
    assert (group.submit_at, group.duration) == (60.0, 600.0)
    assert [m["metadata"]["name"] for m in group.members] == ["g-0", "g-1"]
    assert group.manifest == group.members[0] and missing(group) == 0
    assert got[1].members == ()


def test_two_groups_of_one_name_in_two_namespaces_are_two_workloads(tmp_path: Path) -> None:
    other = member("g-0")
    other["metadata"]["namespace"] = "team-research"
    other["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "gpu-queue"
    got = entries(tmp_path, member("g-0"), member("g-1"), other)
    assert [(e.namespace, e.pods) for e in got] == [("team-vision", 2), ("team-research", 1)]


def test_a_group_short_of_pods_waits_with_the_reason(tmp_path: Path) -> None:
    (group,) = entries(tmp_path, member("g-0", total="3"), member("g-1", total="3"))
    assert group.status == "ok" and missing(group) == 1
    row = outcome(group, None, running=False, stuck=None, evictions=[], admitted_at=None,
                  gpu_seconds=0.0, problem=None)  # fmt: skip
    assert row.outcome == "pending"
    assert row.message == (
        "Kueue makes no Workload for a pod group until all its pods exist: 1 of its 3 are not "
        "in the mix"
    )


@pytest.mark.parametrize(
    ("docs", "field", "says"),
    [
        ([member("g-0", total=None), member("g-1")], TOTAL_COUNT, "has none"),
        ([member("g-0", total="two"), member("g-1")], TOTAL_COUNT, "not a whole number"),
        ([member("g-0", total="0"), member("g-1", total="0")], TOTAL_COUNT, "not a whole number"),
        ([member("g-0", total="2"), member("g-1", total="3")], TOTAL_COUNT, "differ ([2, 3])"),
        ([member("g-0", total="1"), member("g-1", total="1")], TOTAL_COUNT, "more than its"),
        ([timed("g-0", ANNOTATION_SUBMIT_AT, "1m"), member("g-1")], ANNOTATION_SUBMIT_AT, "differ"),
        ([timed("g-0", ANNOTATION_DURATION, "1h"), member("g-1")], ANNOTATION_DURATION, "differ"),
        ([member("g-0", group="Big"), member("g-1", group="Big")], GROUP_LABEL, "is not"),
    ],
)  # fmt: skip
def test_a_group_kueue_would_refuse_or_split_is_one_invalid_row_naming_the_field(
    tmp_path: Path, docs: list[Any], field: str, says: str
) -> None:
    (group,) = entries(tmp_path, *docs)
    assert group.status == "invalid" and group.members == () and group.manifest == {}
    assert group.problem is not None and f"[{field}]" in group.problem and says in group.problem


def test_a_group_of_pods_on_two_queues_is_invalid_naming_the_label(tmp_path: Path) -> None:
    other = member("g-1")
    other["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "vision-other"
    got = entries(tmp_path, member("g-0"), other)
    # The second pod names a queue team-vision does not have: it is its own invalid row, and
    # the group left is short of it (Kueue would see only the pods created).
    assert [(e.name, e.status) for e in got] == [("g", "ok"), ("g-1", "invalid")]
    assert missing(got[0]) == 1
