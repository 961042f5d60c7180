"""Kueue's rules on a Topology (the v1beta2 CRD's validation of spec.levels, v0.18.3), on
hand-written objects in Kueue's documented shape."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.kueue.topology import topology_errors
from tests.builders import Topology

pytestmark = pytest.mark.unit


def topology(*labels: Any) -> dict[str, Any]:
    return Topology("default").levels(*labels).obj()


def shown(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.where, e.message) for e in topology_errors(obj)]


def test_kueues_documented_example_is_accepted():
    # The levels of Kueue's TAS guide: block, rack, host.
    obj = topology(
        "cloud.provider.com/topology-block",
        "cloud.provider.com/topology-rack",
        "kubernetes.io/hostname",
    )
    assert topology_errors(obj) == []


def test_hostname_only_as_the_lowest_level():
    obj = topology("kubernetes.io/hostname", "cloud.provider.com/topology-rack")
    assert shown(obj) == [
        (
            "spec.levels[0].nodeLabel",
            "kubernetes.io/hostname is level 0 of 2; Kueue takes it only as the lowest level",
        )
    ]


def test_a_label_twice_is_refused_at_its_second_use():
    obj = topology("example.com/rack", "example.com/block", "example.com/rack")
    assert shown(obj) == [
        ("spec.levels[2].nodeLabel", "nodeLabel 'example.com/rack' is already level 0")
    ]


@pytest.mark.parametrize(("count", "ok"), [(0, False), (1, True), (16, True), (17, False)])
def test_between_one_and_sixteen_levels(count: int, ok: bool):
    obj = topology(*(f"example.com/level-{i}" for i in range(count)))
    assert shown(obj) == ([] if ok else [("spec.levels", f"levels has {count} entries")])


@pytest.mark.parametrize("label", ["Not A Label", "a/b/c", "-rack", ""])
def test_a_level_must_be_a_label_key(label: str):
    (error,) = topology_errors(topology(label))
    assert error.where == "spec.levels[0].nodeLabel"


def test_a_316_character_label_is_the_longest_accepted():
    # A label key may have 253 + 1 + 63 = 317 characters; the CRD caps nodeLabel at 316.
    longest = f"{'a' * 63}.{'a' * 63}.{'a' * 63}.{'a' * 60}/{'n' * 63}"
    assert len(longest) == 316 and topology_errors(topology(longest)) == []
    (error,) = topology_errors(topology(longest.replace("/", "a/")))  # 317: a label key still
    assert error.where == "spec.levels[0].nodeLabel"
