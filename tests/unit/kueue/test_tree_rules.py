"""The rules on a cohort tree and on LocalQueues (gpu_queues/kueue/cohort.py, localqueue.py),
on plain objects as both the config check and the policy pack hand them over."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.kueue import cohort as cohort_rules
from gpu_queues.kueue.errors import UNKNOWN
from gpu_queues.kueue.localqueue import (
    NAMESPACE_NOT_SELECTED,
    local_queue_errors,
    selector_matches,
    unselected_local_queues,
)
from gpu_queues.kueue.quotas import LIMIT_WITHOUT_PARENT

pytestmark = pytest.mark.unit

NAME = "kubernetes.io/metadata.name"


def cohort(name: Any, parent: Any = None, **spec: Any) -> dict[str, Any]:
    body = {**({"parentName": parent} if parent is not None else {}), **spec}
    return {"kind": "Cohort", "metadata": {"name": name}, "spec": body}


def gpus(**quota: Any) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", **quota}]}],
        }
    ]


def codes(errors: list[Any]) -> list[str]:
    return [e.code for e in errors]


def test_a_root_cohort_may_not_set_limits_and_a_child_may_lend_above_its_quota() -> None:
    root = cohort("root", resourceGroups=gpus(nominalQuota=2, borrowingLimit=1))
    assert codes(cohort_rules.cohort_errors(root)) == [LIMIT_WITHOUT_PARENT]
    child = cohort("leaf", "root", resourceGroups=gpus(nominalQuota=2, lendingLimit=5))
    assert cohort_rules.cohort_errors(child) == []
    unknown_parent = cohort("leaf", UNKNOWN, resourceGroups=gpus(nominalQuota=2, lendingLimit=1))
    assert cohort_rules.cohort_errors(unknown_parent) == []


@pytest.mark.parametrize(
    ("weight", "code"),
    [("-1", "quantity"), ("1n", "fair-sharing-weight"), ("lots", "quantity")],
)
def test_a_cohort_and_a_local_queue_weight_kueue_refuses(weight: str, code: str) -> None:
    assert codes(cohort_rules.cohort_errors(cohort("a", fairSharing={"weight": weight}))) == [code]
    lq = {"kind": "LocalQueue", "spec": {"fairSharing": {"weight": weight}}}
    assert codes(local_queue_errors(lq)) == [code]


def test_zero_and_fractional_weights_are_kueues() -> None:
    for weight in ("0", "0.5", 2):
        assert cohort_rules.cohort_errors(cohort("a", fairSharing={"weight": weight})) == []


def test_the_tree_reports_a_stranger_parent_and_every_member_of_a_cycle() -> None:
    objects = [
        cohort("a", "c"),
        cohort("b", "a"),
        cohort("c", "b"),
        cohort("below", "a"),
        cohort("lost", "typo"),
        cohort("root"),
        {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"cohortName": "a"}},
    ]
    found = [(name, e.code) for name, e in cohort_rules.cohort_tree_errors(objects)]
    assert found == [
        ("a", cohort_rules.COHORT_CYCLE),
        ("b", cohort_rules.COHORT_CYCLE),
        ("c", cohort_rules.COHORT_CYCLE),
        ("lost", cohort_rules.PARENT_UNDECLARED),
    ]


def test_no_verdict_on_a_tree_with_a_name_not_known_yet() -> None:
    assert cohort_rules.cohort_tree_errors([cohort(UNKNOWN), cohort("x", "y")]) == []
    assert cohort_rules.cohort_tree_errors([cohort("x", UNKNOWN)]) == []


@pytest.mark.parametrize(
    ("selector", "namespace", "verdict"),
    [
        (None, "a", False),
        ({}, "a", True),
        ({"matchLabels": {NAME: "a"}}, "a", True),
        ({"matchLabels": {NAME: "a"}}, "b", False),
        ({"matchExpressions": [{"key": NAME, "operator": "In", "values": ["a", "b"]}]}, "b", True),
        ({"matchExpressions": [{"key": NAME, "operator": "In", "values": ["a"]}]}, "c", False),
        ({"matchExpressions": [{"key": NAME, "operator": "NotIn", "values": ["a"]}]}, "a", False),
        ({"matchExpressions": [{"key": NAME, "operator": "Exists"}]}, "a", True),
        ({"matchLabels": {"team": "x"}}, "a", None),
        ({"matchLabels": {"team": "x", NAME: "b"}}, "a", False),
        ({"matchLabels": {NAME: UNKNOWN}}, "a", None),
    ],
)
def test_a_selector_matches_a_namespace_by_its_name_label(
    selector: Any, namespace: str, verdict: bool | None
) -> None:
    assert selector_matches(selector, namespace) is verdict


def test_a_local_queue_its_cluster_queue_does_not_select_is_reported() -> None:
    cq = {
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {"matchLabels": {NAME: "team-a"}}},
    }
    inside = {
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "team-a"},
        "spec": {"clusterQueue": "cq"},
    }
    outside = {
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "team-b"},
        "spec": {"clusterQueue": "cq"},
    }
    elsewhere = {
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "x"},
        "spec": {"clusterQueue": "not-here"},
    }
    found = unselected_local_queues([cq, inside, outside, elsewhere])
    assert [(lq["metadata"]["namespace"], e.code) for lq, e in found] == [
        ("team-b", NAMESPACE_NOT_SELECTED)
    ]
    # Two queues of the name: no verdict (the duplicate is refused elsewhere).
    assert unselected_local_queues([cq, {**cq, "spec": {}}, outside]) == []
