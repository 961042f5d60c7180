"""Node shapes (issue 11, item 1): a flavor's hardware as identical nodes; capacity follows."""

from __future__ import annotations

import copy
from fractions import Fraction

import pytest

from gpu_queues.config.hardware import flavor_hardware, flavor_nodes
from gpu_queues.config.model import ConfigError, load_config
from gpu_queues.tools import quota_diff
from tests.conftest import stack_raw

pytestmark = pytest.mark.unit

TI = 2**40


@pytest.fixture
def raw():
    return copy.deepcopy(stack_raw("prod"))


def errors(raw) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    return info.value.messages


def at(raw, path: str) -> str:
    found = [m for m in errors(raw) if m.startswith(f"gpu-queues:{path}: ")]
    assert len(found) == 1, errors(raw)
    return found[0]


def test_capacity_is_node_count_times_per_node_resources():
    h100, a100 = load_config(stack_raw("prod")).flavors
    assert h100.effective_capacity() == {"cpu": 768, "memory": 8 * TI, "nvidia.com/gpu": 32}
    assert a100.effective_capacity() == {"cpu": 256, "memory": 2 * TI, "nvidia.com/gpu": 16}


def test_node_list_has_one_node_per_declared_node_with_the_flavors_labels_and_taints():
    h100 = load_config(stack_raw("prod")).flavors[0]
    nodes = h100.node_list()
    assert [n.name for n in nodes] == ["h100-0", "h100-1", "h100-2", "h100-3"]
    for node in nodes:
        assert node.flavor == "h100"
        assert node.labels == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        assert node.taints == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        ]
        assert node.resources == {"cpu": "192", "memory": "2Ti", "nvidia.com/gpu": "8"}


def test_totals_only_flavor_is_one_node_holding_the_capacity():
    (flavor,) = load_config(stack_raw("dev")).flavors
    (node,) = flavor.node_list()
    assert node.resources == {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"}
    assert flavor.effective_capacity()["memory"] == 512 * 2**30


def test_flavor_without_hardware_has_no_nodes_and_no_capacity():
    assert flavor_nodes({"name": "spot"}) == []
    assert flavor_hardware({"name": "spot"}).capacity == {}


def test_long_flavor_names_still_give_node_names_of_at_most_63_characters():
    name = "gpu." + "a" * 70 + ".example"
    nodes = flavor_nodes({"name": name, "nodes": {"count": 12, "resources": {"cpu": 1}}})
    assert len({n.name for n in nodes}) == 12
    assert all(len(n.name) <= 63 and n.name[-1].isalnum() for n in nodes)


def test_capacity_and_nodes_that_agree_are_accepted(raw):
    raw["flavors"][0]["capacity"] = {"cpu": 768, "memory": "8Ti", "nvidia.com/gpu": "32"}
    h100 = load_config(raw).flavors[0]
    assert h100.capacity == {"cpu": "768", "memory": "8Ti", "nvidia.com/gpu": "32"}
    assert h100.effective_capacity() == {"cpu": 768, "memory": 8 * TI, "nvidia.com/gpu": 32}
    assert len(h100.node_list()) == 4  # the nodes stay: capacity only restates them


def test_capacity_that_disagrees_with_the_nodes_is_refused_with_both_numbers(raw):
    raw["flavors"][0]["capacity"] = {"cpu": 768, "memory": "8Ti", "nvidia.com/gpu": 24}
    msg = at(raw, "flavors[0].capacity['nvidia.com/gpu']")
    assert "capacity nvidia.com/gpu is 24 but the nodes add up to 4 nodes x 8 = 32" in msg


def test_capacity_and_nodes_must_list_the_same_resources(raw):
    raw["flavors"][0]["capacity"] = {"cpu": 768, "nvidia.com/gpu": 32, "example.com/nic": 8}
    assert "nodes.resources does not" in at(raw, "flavors[0].capacity['example.com/nic']")
    assert "capacity does not" in at(raw, "flavors[0].nodes.resources.memory")


@pytest.mark.parametrize(
    ("count", "fragment"),
    [
        (0, "must be 1 or more nodes, got 0"),
        (-2, "must be 1 or more nodes, got -2"),
        (2.5, "must be a whole number of nodes (1 or more), got 2.5"),
        ("4", "must be a whole number of nodes (1 or more), got '4'"),
        (True, "must be a whole number of nodes (1 or more), got True"),
    ],
)
def test_node_count_is_a_whole_number_of_nodes(raw, count, fragment):
    raw["flavors"][1]["nodes"]["count"] = count
    assert fragment in at(raw, "flavors[1].nodes.count")


def test_node_shape_needs_resources(raw):
    raw["flavors"][1]["nodes"]["resources"] = {}
    assert "at least 1 item" in at(raw, "flavors[1].nodes.resources")


def test_gpus_per_node_are_whole_numbers(raw):
    raw["flavors"][1]["nodes"]["resources"]["nvidia.com/gpu"] = 0.5
    msg = at(raw, "flavors[1].nodes.resources['nvidia.com/gpu']")
    assert "only whole numbers" in msg


def test_quota_checks_use_the_capacity_the_nodes_give(raw):
    raw["flavors"][1]["nodes"]["count"] = 1  # 8 A100s left; the teams hold 16
    msg = at(raw, "flavors[1].nodes.resources['nvidia.com/gpu']")
    assert "add up to 16 (research 4, vision 8, nlp 4), above the declared capacity 8" in msg
    assert "(1 node x 8)" in msg


def test_quota_diff_reports_the_capacity_the_nodes_give():
    side = quota_diff.side_from_raw("prod", stack_raw("prod"))
    rows = {(r.flavor, r.resource): r for r in quota_diff.capacity_rows(side.config, side.config)}
    assert rows["h100", "nvidia.com/gpu"].capacity_after == Fraction(32)
    assert rows["a100", "nvidia.com/gpu"].capacity_after == Fraction(16)
    assert not rows["h100", "nvidia.com/gpu"].over
