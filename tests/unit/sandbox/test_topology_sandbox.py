"""Topology-aware stacks in the sandbox's tools (issue 26, part 1): the rehearsal expects Kueue
to hold a pod no node holds on a TAS flavor (it places before it admits), and the fast what-if
engine, which does not model TAS, refuses such a stack by name instead of replaying it by
quota alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.whatif import engine_input, fast, sides
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


def test_the_fast_engine_refuses_a_tas_stack_by_name():
    why = engine_input.topology_problem(tas_config())
    assert why == (
        "the fast engine does not model topology-aware scheduling, and this stack's flavors use "
        "topologies: tas-gpu (gpu-topology); replay it with ENGINE=sandbox, on the real Kueue "
        "and scheduler (docs/what-if.md)"
    )
    with pytest.raises(engine_input.FastEngineError) as info:
        fast.replay_entries(tas_config(), [], "", stack="local-tas", label="local-tas")
    assert str(info.value) == why


def test_the_fast_engine_takes_a_stack_whose_flavors_use_no_topology():
    assert engine_input.topology_problem(load_config(stack_raw("prod"))) is None
    cfg = tas_config()
    unused = cfg.model_copy(
        update={"flavors": [f.model_copy(update={"topology_name": None}) for f in cfg.flavors]}
    )
    assert unused.topologies and engine_input.topology_problem(unused) is None


def test_make_what_if_refuses_a_tas_side_on_the_fast_engine_before_replaying_any():
    side = sides.ReplaySide("new", "local-tas (work tree)", tas_config(), TAS_STACK, [], "pins")
    assert (
        sides.unbuilt_engine(side)
        == f"local-tas (work tree): {engine_input.topology_problem(side.config)}"
    )
