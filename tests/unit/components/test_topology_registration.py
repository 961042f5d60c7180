"""A stack's topologies are registered as Kueue v1beta2 Topologies, its TAS flavor names its
topology, and a stack without topologies registers none (issue 26, part 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from tests.conftest import run_stack

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
TAS_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-tas.yaml"


def test_the_topology_is_registered_and_the_flavor_names_it() -> None:
    cfg = load_config(parse_config(TAS_STACK.read_text(), TAS_STACK.name))
    run = run_stack(cfg, None)
    topology = run.one("Topology", "gpu-topology")
    assert topology.typ == "kubernetes:kueue.x-k8s.io/v1beta2:Topology"
    assert topology.inputs["spec"] == {
        "levels": [
            {"nodeLabel": "cloud.example.com/topology-block"},
            {"nodeLabel": "cloud.example.com/topology-rack"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    }
    flavor = run.one("ResourceFlavor", "tas-gpu")
    assert flavor.inputs["spec"]["topologyName"] == "gpu-topology"
    assert flavor.inputs["spec"]["nodeLabels"] == {"gpu-queues.dev/pool": "tas"}


def test_a_stack_without_topologies_registers_none(prod_run) -> None:
    assert prod_run.of_kind("Topology") == []
    assert all("topologyName" not in r.inputs["spec"] for r in prod_run.of_kind("ResourceFlavor"))
