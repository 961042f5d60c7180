"""A topology-aware stack on the fast engine (docs/topology.md, The what-if): nothing refuses
it, and the engine gets what Kueue's TAS controllers would feed its cache, the stack's Topology
and the flavor's nodes labelled by its levels, as the sandbox labels its kwok nodes. The
engine's own truths of TAS are toolchain/go/whatif/tas_test.go; its agreement with the real
Kueue, tests/rehearse/causes/topology."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.whatif import engine_input, fast, sides

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
TAS_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-tas.yaml"
BLOCK, RACK = "cloud.example.com/topology-block", "cloud.example.com/topology-rack"


def tas_config() -> StackConfig:
    return load_config(parse_config(TAS_STACK.read_text(), TAS_STACK.name))


def test_the_engine_gets_the_topology_the_flavor_names_and_nodes_labelled_by_its_levels():
    sent = engine_input.engine_input(tas_config(), [], "", None)
    (topology,) = [o for o in sent["objects"] if o["kind"] == "Topology"]
    assert topology["metadata"]["name"] == "gpu-topology"
    assert [lv["nodeLabel"] for lv in topology["spec"]["levels"]] == [
        BLOCK,
        RACK,
        "kubernetes.io/hostname",
    ]
    (flavor,) = [o for o in sent["objects"] if o["kind"] == "ResourceFlavor"]
    assert flavor["spec"]["topologyName"] == "gpu-topology"
    labels = {
        n["metadata"]["name"]: n["metadata"]["labels"]
        for n in sent["nodes"]
        if n["metadata"]["name"].startswith("tas-gpu-")
    }
    # 8 nodes, 2 blocks of 2 racks: a rack is 2 nodes in name order, a block 4.
    assert [(lv[BLOCK], lv[RACK]) for lv in labels.values()] == [
        (f"block-{i // 4}", f"rack-{i // 2}") for i in range(8)
    ]
    assert all(lv["kubernetes.io/hostname"] == name for name, lv in labels.items())


def test_a_tas_stack_is_replayed_not_refused(monkeypatch: pytest.MonkeyPatch):
    sent: list[dict[str, Any]] = []

    def engine(version: str, document: dict[str, Any]) -> list[dict[str, Any]]:
        sent.append(document)
        return [{"type": "summary"}]

    monkeypatch.setattr(fast, "run_engine", engine)
    run = fast.replay_entries(tas_config(), [], "", stack="local-tas", label="local-tas")
    assert run.workloads == []
    assert [o["kind"] for o in sent[0]["objects"]].count("Topology") == 1


def test_make_what_if_asks_a_tas_side_only_for_its_engine(monkeypatch: pytest.MonkeyPatch):
    side = sides.ReplaySide("new", "local-tas (work tree)", tas_config(), TAS_STACK, [], "pins")
    monkeypatch.setattr(fast, "binary_problem", lambda version: None)
    assert sides.unbuilt_engine(side) is None
    monkeypatch.setattr(fast, "binary_problem", lambda version: f"no engine of {version}")
    assert sides.unbuilt_engine(side) == (
        f"local-tas (work tree) runs Kueue {side.config.kueue.version} (from pins): "
        f"no engine of {side.config.kueue.version}"
    )
