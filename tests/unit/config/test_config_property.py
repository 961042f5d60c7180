"""Property: any config either validates or raises ConfigError, never anything else."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_queues.config.model import ConfigError, StackConfig, load_config
from tests.conftest import stack_raw
from tests.properties import examples
from tests.unit.config.stackgen import random_stack

pytestmark = pytest.mark.unit

KEYS = [
    "name",
    "namespace",
    "cohort",
    "teams",
    "flavors",
    "resourceGroups",
    "coveredResources",
    "nominalQuota",
    "borrowingLimit",
    "lendingLimit",
    "capacity",
    "cpu",
    "memory",
    "nvidia.com/gpu",
    "version",
    "kueue",
    "sharedStorage",
    "volumeName",
    "adoptNamespace",
    "preemption",
    "manifest",
    "sha256",
    "kubeconfig",
    "resources",
    "policy",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["64", "512Gi", "-1", "1e3", "8x", "v0.18.3", "h100", "gpu-pool", "", "Ω"]),
    st.text(max_size=8),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), inner, max_size=5),
    ),
    max_leaves=25,
)
BASE = stack_raw("prod")


def _mutate(data, path, value):
    """Replace the value at a path of indices into nested containers."""
    node = data
    for step in path[:-1]:
        if isinstance(node, dict) and node:
            node = node[list(node)[step % len(node)]]
        elif isinstance(node, list) and node:
            node = node[step % len(node)]
        else:
            return data
    if isinstance(node, dict) and node:
        node[list(node)[path[-1] % len(node)]] = value
    elif isinstance(node, list) and node:
        node[path[-1] % len(node)] = value
    return data


def _check(raw) -> StackConfig | None:
    """Either refused, each problem at a key path of the stack config and saying what is
    wrong; or accepted as a config that holds what `raw` said: every key it set is there,
    and loading the config's own stack-file form gives the same config back."""
    try:
        result = load_config(copy.deepcopy(raw))
    except ConfigError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.path.startswith("gpu-queues:"), str(problem)
            assert problem.message.strip(), str(problem)
        return None
    assert isinstance(result, StackConfig)
    held = result.model_dump(by_alias=True, exclude_none=True)
    assert {k for k, v in raw.items() if v is not None} <= set(held), (raw, held)
    assert load_config(held) == result
    return result


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6))
def test_random_configs_validate_or_raise_config_error(raw):
    _check(raw)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 50), min_size=1, max_size=8), json_values), max_size=4
    )
)
def test_mutated_prod_configs_validate_or_raise_config_error(mutations):
    raw = copy.deepcopy(BASE)
    for path, value in mutations:
        raw = _mutate(raw, path, value)
    result = _check(raw)
    if raw == BASE:  # nothing changed (no mutations, or the same value): prod, as it is
        assert result == load_config(copy.deepcopy(BASE))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32))
def test_generated_valid_stacks_are_accepted(seed):
    # No false refusals: any names, flavors, node shapes, teams and cohort that fit together.
    config = load_config(random_stack(seed))
    for flavor in config.flavors:
        nodes = flavor.node_list()
        assert nodes and all(n.flavor == flavor.name for n in nodes)
        assert flavor.effective_capacity()
