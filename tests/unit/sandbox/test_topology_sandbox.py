"""Topology-aware stacks in the sandbox's tools (issue 26, part 1): the rehearsal expects Kueue
to hold a pod no node holds on a TAS flavor (it places before it admits). The fast what-if
engine replays such a stack (tests/unit/whatif/test_topology_input.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.stackfile import parse_config
from sandbox.rehearse import plan as rp
from tests.conftest import stack_raw

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
TAS_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-tas.yaml"


def tas_config() -> StackConfig:
    return load_config(parse_config(TAS_STACK.read_text(), TAS_STACK.name))


def test_the_rehearsal_expects_a_pod_bigger_than_a_node_held_by_the_topology():
    (team,) = rp.plan(tas_config())
    assert team.too_big is not None
    assert team.too_big.shape.requests == {"nvidia.com/gpu": 32}  # the whole quota, one pod
    assert team.too_big.largest_node == 4
    assert team.too_big.topology == "gpu-topology"


def test_without_a_topology_the_rehearsal_still_expects_it_admitted_and_unschedulable():
    (research, *_) = rp.plan(load_config(stack_raw("prod")))
    assert research.too_big is not None and research.too_big.topology is None
