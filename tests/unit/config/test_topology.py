"""Topology-aware scheduling in the stack config (issue 26, part 1): topologies and the flavors
that name them are validated naming the key, rendered as Kueue v1beta2 objects, and the
flavor's declared nodes carry their domains' labels (what the sandbox builds)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config import render
from gpu_queues.config.hardware import flavor_nodes
from gpu_queues.config.model import ConfigError, load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue import versions
from gpu_queues.whatif import nodes as stack_nodes
from tests.builders import Flavor, Stack

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
TAS_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-tas.yaml"
BLOCK, RACK, HOST = (
    "cloud.example.com/topology-block",
    "cloud.example.com/topology-rack",
    "kubernetes.io/hostname",
)


def stack() -> dict[str, Any]:
    h100 = (
        Flavor("h100").labels({"pool": "h100"}).topology("default")
        .nodes(16, cpu=96, memory="1Ti", gpu=8).node_topology(block=2, rack=4)
    )  # fmt: skip
    return Stack().topology("default", block=BLOCK, rack=RACK, host=HOST).flavor(h100).raw()


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    return info.value.messages


# --- render -------------------------------------------------------------------------------


def test_the_topology_and_the_flavor_render_as_kueue_v1beta2_objects():
    objects = render.kueue_objects(load_config(stack()))
    assert objects[0] == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "default", "labels": {"app.kubernetes.io/managed-by": "gpu-queues"}},
        "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
    }
    assert objects[1]["kind"] == "ResourceFlavor"
    assert objects[1]["spec"] == {"nodeLabels": {"pool": "h100"}, "topologyName": "default"}


def test_a_flavor_without_a_topology_renders_as_before():
    raw = stack()
    del raw["flavors"][0]["topologyName"], raw["flavors"][0]["nodes"]["topology"]
    del raw["topologies"]
    assert render.kueue_objects(load_config(raw))[0]["spec"] == {"nodeLabels": {"pool": "h100"}}


# --- the nodes' labels ----------------------------------------------------------------------


def test_sixteen_nodes_in_two_blocks_of_four_racks_are_labelled_by_domain():
    cfg = load_config(stack())
    flavor = cfg.flavors[0]
    nodes = flavor.node_list(cfg.levels_of(flavor))
    assert len(nodes) == 16
    # nodes fill a rack (2 nodes), then the next; racks are numbered across the flavor
    expected = [
        {"pool": "h100", BLOCK: f"block-{i // 8}", RACK: f"rack-{i // 2}"} for i in range(16)
    ]
    assert [n.labels for n in nodes] == expected
    assert nodes[5].name == "h100-5" and nodes[5].labels[RACK] == "rack-2"


def test_the_sandbox_nodes_carry_the_levels_and_their_hostname():
    cfg = load_config(stack())
    node = stack_nodes.flavor_nodes(cfg)[9]
    labels = node["metadata"]["labels"]
    assert (labels[BLOCK], labels[RACK], labels[HOST]) == ("block-1", "rack-4", "h100-9")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_the_committed_tas_stack_shapes_two_blocks_of_two_racks():
    cfg = load_config(parse_config(TAS_STACK.read_text(), TAS_STACK.name))
    racks = [n["metadata"]["labels"][RACK] for n in stack_nodes.flavor_nodes(cfg)]
    assert racks == ["rack-0", "rack-0", "rack-1", "rack-1", "rack-2", "rack-2", "rack-3", "rack-3"]


# --- validation, naming the key -------------------------------------------------------------


def test_a_flavor_naming_a_missing_topology_is_refused():
    raw = stack()
    raw["flavors"][0]["topologyName"] = "racks"
    assert errors(raw) == [
        "gpu-queues:flavors[0].topologyName: topology 'racks' is not declared under topologies "
        "(declared: default); Kueue would leave every ClusterQueue using this flavor inactive "
        "(TopologyNotFound)"
    ]


def test_a_level_the_nodes_do_not_carry_is_refused_with_kueues_words():
    raw = stack()
    raw["flavors"][0]["nodes"]["topology"] = {"block": 2}
    assert errors(raw) == [
        "gpu-queues:flavors[0].nodes.topology: level 'rack' of topology 'default' (node label "
        f"{RACK}) has no count: give rack: N (how many per domain above), so the nodes carry "
        f"{RACK}; without it Kueue finds no topology domains at level: {RACK}"
    ]


def test_a_count_for_a_level_the_topology_lacks_is_refused():
    raw = stack()
    raw["flavors"][0]["nodes"]["topology"] |= {"zone": 2, "host": 1}
    assert errors(raw) == [
        "gpu-queues:flavors[0].nodes.topology.zone: 'zone' is not a level of 'default': its "
        "levels with a count are block, rack",
        "gpu-queues:flavors[0].nodes.topology.host: 'host' is not a level of 'default': each "
        f"node is a domain of its own at {HOST}; remove it",
    ]


def test_levels_that_do_not_divide_the_nodes_are_refused():
    raw = stack()
    raw["flavors"][0]["nodes"]["topology"] = {"block": 2, "rack": 3}
    assert errors(raw) == [
        "gpu-queues:flavors[0].nodes.topology.rack: 16 nodes do not split evenly into 6 rack "
        "domain(s); make nodes.count a multiple of 6, or change the counts"
    ]


def test_nodes_topology_without_a_topology_name_is_refused():
    raw = stack()
    del raw["flavors"][0]["topologyName"]
    (message,) = errors(raw)
    assert message.startswith("gpu-queues:flavors[0].nodes.topology: nodes.topology lays")


def test_a_tas_flavor_with_totals_only_is_refused():
    raw = stack()
    raw["flavors"][0].pop("nodes")
    raw["flavors"][0]["capacity"] = {"nvidia.com/gpu": 128}
    (message,) = errors(raw)
    assert message.startswith("gpu-queues:flavors[0].capacity: the flavor uses topology")


def test_a_tas_flavor_without_node_labels_is_refused_as_kueue_does():
    raw = stack()
    del raw["flavors"][0]["nodeLabels"]
    assert errors(raw) == [
        "gpu-queues:flavors[0].topologyName: topologyName is set but the flavor has no "
        "nodeLabels; add at least one nodeLabel"
    ]


def test_a_flavor_selecting_by_a_level_label_is_refused():
    raw = stack()
    raw["flavors"][0]["nodeLabels"][RACK] = "rack-0"
    (message,) = errors(raw)
    assert message.startswith(f"gpu-queues:flavors[0].nodeLabels['{RACK}']: '{RACK}' is a level")


def test_kueues_topology_rules_name_the_stack_key():
    raw = stack()
    raw["topologies"][0]["levels"].insert(0, {"name": "node", "nodeLabel": HOST})
    assert errors(raw) == [
        "gpu-queues:topologies[0].levels[0].nodeLabel: kubernetes.io/hostname is level 0 of 4; "
        "Kueue takes it only as the lowest level; move it last",
        "gpu-queues:topologies[0].levels[3].nodeLabel: nodeLabel 'kubernetes.io/hostname' is "
        "already level 0; list each label once",
    ]


def test_two_topologies_of_one_name_and_a_level_name_twice_are_refused():
    raw = stack()
    raw["topologies"].append(copy.deepcopy(raw["topologies"][0]))
    raw["topologies"][1]["levels"][1]["name"] = "block"
    assert errors(raw) == [
        "gpu-queues:topologies[1].name: duplicate topology name 'default': already used at "
        "gpu-queues:topologies[0].name",
        "gpu-queues:topologies[1].levels[1].name: level name 'block' is used twice in topology "
        "'default'",
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [("levels", []), ("levle", 1)],
)
def test_a_malformed_topology_names_the_key(key: str, value: Any):
    raw = stack()
    raw["topologies"][0][key] = value
    assert any(m.startswith(f"gpu-queues:topologies[0].{key}: ") for m in errors(raw))


def test_switching_the_gate_off_is_refused():
    raw = stack() | {"kueue": {"manager": {"featureGates": {"TopologyAwareScheduling": False}}}}
    assert errors(raw) == [
        "gpu-queues:kueue.manager.featureGates.TopologyAwareScheduling: TopologyAwareScheduling "
        "is switched off but the stack declares topologies: Kueue would ignore them and admit "
        "by quota alone; remove the gate"
    ]


@pytest.mark.parametrize("version", versions.supported())
def test_every_supported_release_has_topology_aware_scheduling(version: str):
    # Beta and on by default since Kueue v0.14 (pkg/features); a release without it is refused.
    assert "TopologyAwareScheduling" in versions.release(version).feature_gates
    assert load_config(stack() | {"kueue": {"version": version}}).topologies


def test_a_release_without_topology_aware_scheduling_is_refused(monkeypatch):
    pin = versions.supported()[-1]
    old = versions.release(pin)
    gates = tuple(g for g in old.feature_gates if g != "TopologyAwareScheduling")
    monkeypatch.setitem(
        versions.releases(), pin, versions.Release(pin, gates, frameworks=old.frameworks)
    )
    assert errors(stack() | {"kueue": {"version": pin}}) == [
        f"gpu-queues:topologies: Kueue {pin} has no topology-aware scheduling (no "
        "TopologyAwareScheduling feature gate); use a release that has it, or remove the "
        "topologies"
    ]


def test_a_release_locking_the_gate_off_is_refused(monkeypatch):
    pin = versions.supported()[-1]
    old = versions.release(pin)
    locked = versions.Release(
        pin,
        old.feature_gates,
        locked_gates={**old.locked_gates, "TopologyAwareScheduling": False},
        frameworks=old.frameworks,
    )
    monkeypatch.setitem(versions.releases(), pin, locked)
    (message,) = errors(stack() | {"kueue": {"version": pin}})
    assert message.startswith(f"gpu-queues:topologies: Kueue {pin} has no topology-aware")


def test_nodes_that_do_not_divide_get_no_level_labels_rather_than_wrong_ones():
    # The config check refuses such a layout; the node list, read from raw config, never
    # invents domains of unequal size.
    flavor = stack()["flavors"][0]
    flavor["nodes"] |= {"count": 6, "topology": {"block": 2, "rack": 2}}
    levels = [("block", BLOCK), ("rack", RACK), ("host", HOST)]
    assert {n.labels.get(RACK) for n in flavor_nodes(flavor, levels)} == {None}
    flavor["nodes"]["count"] = 8
    assert [n.labels[RACK] for n in flavor_nodes(flavor, levels)][::2] == [
        "rack-0",
        "rack-1",
        "rack-2",
        "rack-3",
    ]
