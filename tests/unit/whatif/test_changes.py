"""A change of the stack at an instant of the replay (gpu_queues/whatif/changes.py): which
objects it hands the engines, in which order, and every way it is refused, by name."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.pins import kueue_version
from gpu_queues.whatif import changes
from gpu_queues.whatif.changes import ChangeError, StackChange
from gpu_queues.whatif.cli import main as whatif_main
from tests.builders import Flavor, Stack, Team

pytestmark = pytest.mark.unit


def stack() -> Stack:
    return (
        Stack()
        .flavor(Flavor("pool").nodes(1, cpu=64, memory="512Gi", gpu=8))
        .set("cohorts", [{"name": "root"}, {"name": "research", "parent": "root"}])
        .team(
            Team("alpha").cohort("research").quota("pool", cpu=32, memory="256Gi", gpu=4),
            Team("beta").cohort("root").quota("pool", cpu=32, memory="256Gi", gpu=4),
        )
    )


def config_of(raw: dict) -> StackConfig:
    return load_config(raw)


def with_team(raw: dict, index: int, **fields: object) -> dict:
    out = copy.deepcopy(raw)
    out["teams"][index].update(fields)
    return out


def test_a_stop_policy_changes_that_team_s_cluster_queue_only() -> None:
    raw = stack().raw()
    found = changes.queue_updates(
        config_of(raw), config_of(with_team(raw, 0, stopPolicy="HoldAndDrain")), "the change"
    )
    assert [(o["kind"], o["metadata"]["name"]) for o in found] == [("ClusterQueue", "alpha-cq")]
    assert found[0]["spec"]["stopPolicy"] == "HoldAndDrain"


def test_objects_come_cohorts_first_then_cluster_queues_then_local_queues() -> None:
    raw = stack().raw()
    after = with_team(raw, 1, stopPolicy="Hold", fairSharing={"weight": 2})
    after = with_team(
        after,
        0,
        localQueues=[
            {"name": "gpu-queue", "namespace": "team-alpha", "fairSharing": {"weight": 3}}
        ],
    )
    del after["teams"][0]["localQueue"]
    after["cohorts"][1]["fairSharing"] = {"weight": 2}
    found = changes.queue_updates(config_of(raw), config_of(after), "the change")
    assert [o["kind"] for o in found] == ["Cohort", "ClusterQueue", "LocalQueue"]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda r: r["flavors"][0]["nodes"].update(count=2), "the nodes its flavors declare"),
        (
            lambda r: r.update(priorityClasses=[{"name": "urgent", "value": 1000}]),
            "WorkloadPriorityClass urgent",
        ),
        (
            lambda r: r.update(
                kueue={
                    "manager": {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}
                }
            ),
            "gpu-queues:kueue",
        ),
        (lambda r: r["flavors"][0].update(nodeLabels={"pool": "yes"}), "ResourceFlavor pool"),
    ],
)
def test_anything_but_the_queues_is_refused_by_name(edit, named: str) -> None:
    raw = stack().raw()
    after = copy.deepcopy(raw)
    edit(after)
    with pytest.raises(ChangeError, match="may alter only the spec of Cohorts") as refused:
        changes.queue_updates(config_of(raw), config_of(after), "the change at 2h (x.yaml)")
    assert named in str(refused.value)
    assert str(refused.value).startswith("the change at 2h (x.yaml) changes ")


def test_a_new_queue_is_refused_and_so_is_a_change_of_nothing() -> None:
    raw = stack().raw()
    after = copy.deepcopy(raw)
    after["teams"].append(Team("gamma").cohort("root").quota("pool", cpu=0, memory=0, gpu=0).raw())
    with pytest.raises(ChangeError, match="adds ClusterQueue gamma-cq, LocalQueue "):
        changes.queue_updates(config_of(raw), config_of(after), "the change")
    moved = with_team(raw, 0, namespace="elsewhere")
    with pytest.raises(ChangeError, match="adds LocalQueue elsewhere/gpu-queue; removes "):
        changes.queue_updates(config_of(raw), config_of(moved), "the change")
    with pytest.raises(ChangeError, match="changes nothing the replay runs"):
        changes.queue_updates(config_of(raw), config_of(raw), "the change")


def test_changes_go_in_time_order_each_against_the_one_before() -> None:
    raw = stack().raw()
    drained = config_of(with_team(raw, 0, stopPolicy="HoldAndDrain"))
    found = changes.changed_over(
        config_of(raw), [(7200.0, "back.yaml", config_of(raw)), (3600.0, "drain.yaml", drained)]
    )
    assert [(c.at, c.source) for c in found] == [(3600.0, "drain.yaml"), (7200.0, "back.yaml")]
    assert "stopPolicy" not in found[1].objects[0]["spec"]
    assert changes.notes(found) == [
        "at 1h the stack changed (drain.yaml): ClusterQueue alpha-cq",
        "at 2h the stack changed (back.yaml): ClusterQueue alpha-cq",
    ]
    again = [StackChange.from_json(json.loads(json.dumps(c.to_json()))) for c in found]
    assert again == found


@pytest.mark.parametrize(
    ("flag", "said"),
    [("2h", "expected AT=STACK_FILE"), ("=x.yaml", "expected AT"), ("soon=x.yaml", "instant")],
)
def test_a_bad_flag_is_refused_by_name(flag: str, said: str) -> None:
    with pytest.raises(ChangeError, match=said):
        changes.parse_flag(flag)
    assert changes.parse_flag("1h30m=Pulumi.x.yaml") == (5400.0, "Pulumi.x.yaml")


@pytest.mark.parametrize(
    "data",
    [[], {"at": -1, "objects": []}, {"at": True, "objects": []}, {"at": 1, "objects": [{}]}],
)
def test_a_change_file_of_another_shape_is_refused(data: object) -> None:
    with pytest.raises(ChangeError):
        StackChange.from_json(data)


def test_the_command_refuses_a_change_with_a_base_and_a_bad_change_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "Pulumi.s.yaml").write_text(stack().kueue(version=kueue_version()).yaml())
    mix = tmp_path / "mix.yaml"
    mix.write_text("")
    args = ["--stack", "s", "--root", str(tmp_path), "--workloads", str(mix)]
    args += ["--out", str(tmp_path / "out")]
    assert whatif_main([*args, "--change", "1h=x.yaml", "--base", "HEAD"]) == 2
    assert "with --base there are two" in capsys.readouterr().err
    assert whatif_main([*args, "--change", f"1h={tmp_path / 'missing.yaml'}"]) == 2
    assert "--change 1h=" in (err := capsys.readouterr().err) and "no such file" in err
    bad = tmp_path / "bad.yaml"
    raw = with_team(stack().raw(), 0, stopPolicy="hold")
    bad.write_text(yaml.safe_dump({"config": {f"gpu-queues:{k}": v for k, v in raw.items()}}))
    assert whatif_main([*args, "--change", f"1h={bad}"]) == 2
    err = capsys.readouterr().err
    assert "the stack config is invalid" in err and "stopPolicy" in err
