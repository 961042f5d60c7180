"""A flavor's hardware (gpu_queues/config/hardware.py) on hand-written flavors in their stack
config form: the capacity nodes or totals give, where each is written, how it adds up, what
disagrees (each message in full), and the nodes a fake cluster builds from it."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from gpu_queues.config.hardware import (
    FlavorHardware,
    Node,
    flavor_hardware,
    flavor_nodes,
    node_count,
)

pytestmark = pytest.mark.unit

GI = 2**30
HALF_GPU = (
    "nvidia.com/gpu is an extended resource: Kubernetes allows only whole numbers of it (a pod "
    "cannot request 500m of one), got {value!r}"
)


def nodes(count: Any, **resources: Any) -> dict[str, Any]:
    return {"count": count, "resources": resources}


def test_a_flavor_without_hardware_has_no_capacity_and_no_problems():
    assert flavor_hardware({"name": "spot"}) == FlavorHardware()
    assert flavor_hardware({"capacity": None, "nodes": None}) == FlavorHardware()
    assert flavor_hardware({"capacity": ["cpu"], "nodes": "4"}) == FlavorHardware()


def test_totals_only_give_the_capacity_as_written():
    hardware = flavor_hardware({"capacity": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": 8}})
    assert hardware == FlavorHardware(
        capacity={"cpu": 64, "memory": 512 * GI, "nvidia.com/gpu": 8},
        source={
            "cpu": ("capacity", "cpu"),
            "memory": ("capacity", "memory"),
            "nvidia.com/gpu": ("capacity", "nvidia.com/gpu"),
        },
    )


def test_values_that_are_no_quantity_are_left_to_the_models():
    hardware = flavor_hardware(
        {"capacity": {"cpu": True, "memory": "lots", "pods": None, "nvidia.com/gpu": 2, 7: "1"}}
    )
    assert hardware.capacity == {"nvidia.com/gpu": 2, "7": 1}
    assert hardware.problems == []


def test_nodes_give_count_times_each_nodes_resources():
    hardware = flavor_hardware(
        {"nodes": nodes(4, cpu=192, memory="2Ti", **{"nvidia.com/gpu": "8"})}
    )
    assert hardware == FlavorHardware(
        capacity={"cpu": 768, "memory": 8 * 2**40, "nvidia.com/gpu": 32},
        source={
            "cpu": ("nodes", "resources", "cpu"),
            "memory": ("nodes", "resources", "memory"),
            "nvidia.com/gpu": ("nodes", "resources", "nvidia.com/gpu"),
        },
        detail={"cpu": "4 nodes x 192", "memory": "4 nodes x 2Ti", "nvidia.com/gpu": "4 nodes x 8"},
    )


def test_one_node_is_one_node_not_nodes():
    hardware = flavor_hardware({"nodes": nodes(1, cpu="500m")})
    assert hardware.capacity == {"cpu": Fraction(1, 2)}
    assert hardware.detail == {"cpu": "1 node x 500m"}


@pytest.mark.parametrize("count", [0, -1, True, False, 2.0, "2", None])
def test_a_count_that_is_no_number_of_nodes_leaves_the_totals(count):
    hardware = flavor_hardware({"nodes": nodes(count, cpu=8), "capacity": {"cpu": 3}})
    assert hardware == FlavorHardware(capacity={"cpu": 3}, source={"cpu": ("capacity", "cpu")})


@pytest.mark.parametrize(
    ("given", "count"),
    [
        ({"count": 1}, 1),
        ({"count": 12}, 12),
        ({"count": 0}, None),
        ({"count": -3}, None),
        ({"count": True}, None),
        ({"count": 1.0}, None),
        ({}, None),
        ([1], None),
        (None, None),
    ],
)
def test_node_count_is_a_whole_number_of_one_or_more(given, count):
    assert node_count(given) == count


def test_fractions_of_whole_number_resources_are_refused_where_written():
    hardware = flavor_hardware(
        {
            "nodes": {"count": "x", "resources": {"nvidia.com/gpu": 0.5, "cpu": "500m"}},
            "capacity": {"nvidia.com/gpu": "0.5", "pods": "1.5", "cpu": 0.5},
        }
    )
    assert hardware.problems == [
        (("capacity", "nvidia.com/gpu"), HALF_GPU.format(value="0.5")),
        (
            ("capacity", "pods"),
            "pods is counted in units: Kubernetes allows only whole numbers of it (a pod cannot "
            "request 1500m of one), got '1.5'",
        ),
        (("nodes", "resources", "nvidia.com/gpu"), HALF_GPU.format(value=0.5)),
    ]


def test_capacity_that_restates_the_nodes_is_accepted_and_named_as_written():
    flavor = {"nodes": nodes(2, cpu=8, memory="16Gi"), "capacity": {"memory": "32Gi", "cpu": 16}}
    assert flavor_hardware(flavor) == FlavorHardware(
        capacity={"cpu": 16, "memory": 32 * GI},
        source={"cpu": ("capacity", "cpu"), "memory": ("capacity", "memory")},
        detail={"cpu": "2 nodes x 8", "memory": "2 nodes x 16Gi"},
    )


def test_capacity_that_disagrees_with_the_nodes_is_refused_with_both_numbers():
    flavor = {"nodes": nodes(3, cpu="1500m", memory=1), "capacity": {"cpu": 4, "memory": 3}}
    hardware = flavor_hardware(flavor)
    assert hardware.problems == [
        (
            ("capacity", "cpu"),
            "capacity cpu is 4 but the nodes add up to 3 nodes x 1500m = 4500m; make them "
            "agree, or keep only nodes (capacity follows from them)",
        )
    ]
    assert hardware.capacity == {"cpu": Fraction(9, 2), "memory": 3}


def test_capacity_and_nodes_must_list_the_same_resources():
    flavor = {
        "nodes": nodes(2, cpu=4, memory="1Gi", **{"nvidia.com/gpu": 1}),
        "capacity": {"cpu": 8, "example.com/nic": 2},
    }
    hardware = flavor_hardware(flavor)
    assert hardware.problems == [
        (
            ("capacity", "example.com/nic"),
            "capacity lists example.com/nic but nodes.resources does not; give example.com/nic "
            "per node in nodes.resources, or remove it from capacity",
        ),
        (
            ("nodes", "resources", "memory"),
            "nodes.resources lists memory but capacity does not; add its total (2Gi) to "
            "capacity, or remove capacity (it follows from the nodes)",
        ),
        (
            ("nodes", "resources", "nvidia.com/gpu"),
            "nodes.resources lists nvidia.com/gpu but capacity does not; add its total (2) to "
            "capacity, or remove capacity (it follows from the nodes)",
        ),
    ]
    # What the nodes give counts; the resource only capacity names does not.
    assert hardware.capacity == {"cpu": 8, "memory": 2 * GI, "nvidia.com/gpu": 2}
    assert hardware.source["cpu"] == ("capacity", "cpu")
    assert hardware.source["memory"] == ("nodes", "resources", "memory")


def test_a_resource_only_capacity_names_does_not_hide_the_next_ones_disagreement():
    flavor = {"nodes": nodes(2, cpu=4), "capacity": {"example.com/nic": 2, "cpu": 7}}
    assert flavor_hardware(flavor).problems == [
        (
            ("capacity", "example.com/nic"),
            "capacity lists example.com/nic but nodes.resources does not; give example.com/nic "
            "per node in nodes.resources, or remove it from capacity",
        ),
        (
            ("capacity", "cpu"),
            "capacity cpu is 7 but the nodes add up to 2 nodes x 4 = 8; make them agree, or keep "
            "only nodes (capacity follows from them)",
        ),
    ]


def test_an_empty_capacity_beside_nodes_asks_for_nothing():
    hardware = flavor_hardware({"nodes": nodes(2, cpu=4), "capacity": {}})
    assert hardware.problems == []
    assert hardware.capacity == {"cpu": 8}
    hardware = flavor_hardware({"nodes": nodes(2, cpu=4), "capacity": {"cpu": "x"}})
    assert hardware.problems == []  # the quantity is the models' to report


# --- nodes -----------------------------------------------------------------------------------


def test_declared_nodes_are_count_identical_nodes_with_the_flavors_labels_and_taints():
    flavor = {
        "name": "h100",
        "nodeLabels": {"gpu": "h100", "zone": 1},
        "nodeTaints": [
            {"key": "nvidia.com/gpu", "value": None, "effect": "NoSchedule"},
            "not a taint",
            {"key": "spot", "value": True, "effect": "NoExecute"},
        ],
        "nodes": nodes(2, cpu=192, memory="2Ti"),
        "capacity": {"cpu": 1},  # the nodes win
    }
    taints = [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        {"key": "spot", "value": "True", "effect": "NoExecute"},
    ]
    labels = {"gpu": "h100", "zone": "1"}
    resources = {"cpu": "192", "memory": "2Ti"}
    assert flavor_nodes(flavor) == [
        Node("h100-0", "h100", labels, taints, resources),
        Node("h100-1", "h100", labels, taints, resources),
    ]


def test_nodes_do_not_share_their_labels_taints_or_resources():
    flavor = {
        "name": "a",
        "nodeLabels": {"l": "v"},
        "nodeTaints": [{"key": "k"}],
        "nodes": nodes(2, cpu=1),
    }
    first, second = flavor_nodes(flavor)
    first.labels["l"] = "changed"
    first.taints[0]["key"] = "changed"
    first.resources["cpu"] = "changed"
    assert second == Node("a-1", "a", {"l": "v"}, [{"key": "k"}], {"cpu": "1"})
    assert flavor["nodeLabels"] == {"l": "v"}


def test_totals_only_are_one_node_holding_the_whole_capacity():
    flavor = {"name": "dev", "capacity": {"cpu": 64, "memory": "512Gi"}, "nodes": nodes(0, cpu=1)}
    assert flavor_nodes(flavor) == [Node("dev-0", "dev", {}, [], {"cpu": "64", "memory": "512Gi"})]


def test_no_hardware_no_nodes_and_nodes_without_resources_are_empty():
    assert flavor_nodes({"name": "spot"}) == []
    assert flavor_nodes({"name": "spot", "capacity": [1], "nodes": {"count": "2"}}) == []
    assert flavor_nodes({"name": "x", "nodes": {"count": 1}}) == [Node("x-0", "x", {}, [], {})]
    assert flavor_nodes({"nodes": {"count": 1, "resources": None}, "nodeLabels": None}) == [
        Node("-0", "", {}, [], {})
    ]


F61 = "gpu." + "a" * 57
F62 = "gpu." + "a" * 58
DOTTED = "a" * 50 + ".-" + "b" * 12


@pytest.mark.parametrize(
    ("flavor", "index", "name"),
    [
        (F61, 0, F61 + "-0"),  # 63 characters: as it is
        (F61, 9, F61 + "-9"),
        (F61, 10, "gpu." + "a" * 47 + "-59a1e998-10"),  # 64: the flavor cut, its digest kept
        (F62, 0, "gpu." + "a" * 48 + "-61a51038-0"),
        (DOTTED, 0, "a" * 50 + "-459b95d3-0"),  # no '.' or '-' left before the digest
    ],
)
def test_node_names_are_kept_to_63_characters(flavor, index, name):
    assert len(name) <= 63
    found = flavor_nodes({"name": flavor, "nodes": nodes(index + 1, cpu=1)})
    assert found[index].name == name
