"""The validation core on plain Kueue objects: located errors, Kueue's defaults, any input."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_queues.kueue import capacity as cap
from gpu_queues.kueue import rules as kr
from gpu_queues.kueue.quantity import parse_quantity
from tests.properties import examples

pytestmark = pytest.mark.unit


def cq(**spec):
    base = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": 8},
                            {"name": "memory", "nominalQuota": "64Gi"},
                            {"name": "nvidia.com/gpu", "nominalQuota": 8},
                        ],
                    }
                ],
            }
        ],
    }
    base.update(spec)
    return {"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": base}


def rf(**spec):
    return {"kind": "ResourceFlavor", "metadata": {"name": "h100"}, "spec": spec}


def codes(errors):
    return [(e.where, e.code) for e in errors]


def test_a_valid_queue_has_no_errors():
    assert kr.cluster_queue_errors(cq()) == []
    assert kr.uncovered_resources(cq(), ("cpu", "memory")) == []
    assert kr.fractional_quotas(cq()) == []
    assert kr.undeclared_flavors(cq(), {"h100"}) == []


def test_errors_name_the_field_inside_the_object():
    q = cq()
    q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["lendingLimit"] = "65Gi"
    q["spec"]["cohortName"] = "pool"
    [error] = kr.cluster_queue_errors(q)
    assert error.where == "spec.resourceGroups[0].flavors[0].resources[1].lendingLimit"
    assert error.code == kr.LENDING_ABOVE_NOMINAL


def test_missing_extra_duplicate_and_misordered_quotas_are_told_apart():
    q = cq()
    resources = q["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[1], resources[2] = resources[2], resources[1]
    assert codes(kr.cluster_queue_errors(q)) == [
        ("spec.resourceGroups[0].flavors[0].resources", kr.QUOTA_ORDER)
    ]
    resources.append({"name": "cpu", "nominalQuota": 1})
    resources.append({"name": "example.com/nic", "nominalQuota": 1})
    del resources[1]
    assert codes(kr.cluster_queue_errors(q)) == [
        ("spec.resourceGroups[0].flavors[0].resources[2].name", kr.QUOTA_TWICE),
        ("spec.resourceGroups[0].flavors[0].resources[3]", kr.QUOTA_NOT_COVERED),
        ("spec.resourceGroups[0].flavors[0].resources", kr.QUOTA_MISSING),
    ]


def test_fungibility_preference_needs_both_try_next_flavor_with_crd_defaults():
    q = cq(flavorFungibility={"preference": "BorrowingOverPreemption"})
    [error] = kr.cluster_queue_errors(q)  # whenCanBorrow defaults to MayStopSearch
    assert error.code == kr.FUNGIBILITY_PREFERENCE and "MayStopSearch" in error.message
    q["spec"]["flavorFungibility"]["whenCanBorrow"] = "TryNextFlavor"
    assert kr.cluster_queue_errors(q) == []


@pytest.mark.parametrize(
    ("weight", "code"), [("-1", kr.QUANTITY), ("1n", kr.FAIR_SHARING_WEIGHT), ("0", None)]
)
def test_fair_sharing_weight(weight, code):
    errors = kr.cluster_queue_errors(cq(fairSharing={"weight": weight}))
    assert [e.code for e in errors] == ([code] if code else [])


def test_enums_are_checked_as_the_crd_does():
    errors = kr.cluster_queue_errors(cq(stopPolicy="Drain", queueingStrategy="FIFO"))
    assert codes(errors) == [("spec.queueingStrategy", kr.ENUM), ("spec.stopPolicy", kr.ENUM)]


def test_resource_flavor_cel_rules():
    flavor = rf(
        nodeTaints=[
            {"key": "gpu", "value": "a", "effect": "NoSchedule"},
            {"key": "gpu", "value": "b", "effect": "NoSchedule"},
            {"key": "gpu", "effect": "NoExecute"},
        ],
        tolerations=[
            {"operator": "Equal", "value": "x"},
            {"key": "gpu", "operator": "Exists", "value": "x"},
            {"key": "gpu", "effect": "NoSchedule", "tolerationSeconds": 5},
            {"operator": "Exists"},
        ],
        topologyName="rack",
    )
    assert codes(kr.resource_flavor_errors(flavor)) == [
        ("spec.nodeTaints[1]", kr.TAINT_TWICE),
        ("spec.tolerations[0].operator", kr.TOLERATION),
        ("spec.tolerations[1].value", kr.TOLERATION),
        ("spec.tolerations[2].tolerationSeconds", kr.TOLERATION),
        ("spec.topologyName", kr.TOPOLOGY_NEEDS_LABEL),
    ]


def test_unknown_values_skip_only_the_checks_that_need_them():
    q = cq(cohortName=kr.UNKNOWN)
    quota = q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
    quota["borrowingLimit"] = 4  # fine: the unknown cohort may be set
    quota["lendingLimit"] = kr.UNKNOWN
    q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "-1"
    assert codes(kr.cluster_queue_errors(q)) == [
        ("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", kr.QUANTITY)
    ]


def test_whole_numbers_of_extended_resources_only():
    q = cq()
    resources = q["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[0]["nominalQuota"] = "500m"  # cpu: fractions are fine
    resources[2]["nominalQuota"] = "7500m"
    [error] = kr.fractional_quotas(q)
    assert error.where.endswith("resources[2].nominalQuota") and error.code == kr.NOT_WHOLE


@pytest.mark.parametrize(
    "value",
    ["8", "4Ti", "1536Mi", "1500m", "250n", "3u", "123456789", "1Ei", "2Ki"],
)
def test_the_capacity_annotation_is_exact(value):
    encoded = cap.encode_capacity({"memory": parse_quantity(value)})
    decoded, errors = cap.declared_capacity(
        {"metadata": {"annotations": {cap.CAPACITY_ANNOTATION: encoded}}}
    )
    assert errors == [] and decoded == {"memory": parse_quantity(value)}


def test_the_capacity_annotation_rounds_sub_nano_values_up_like_the_api_server():
    assert json.loads(cap.encode_capacity({"cpu": Fraction(1, 10**10)})) == {"cpu": "1n"}


def test_quota_totals_sum_queues_and_cohorts_and_withhold_verdicts_on_unknowns():
    a, b = cq(), cq()
    b["metadata"]["name"] = "r"
    pool = {
        "kind": "Cohort",
        "metadata": {"name": "pool"},
        "spec": {"resourceGroups": a["spec"]["resourceGroups"]},
    }
    totals = cap.quota_totals([a, b, pool, {"kind": "LocalQueue"}])
    key = ("h100", "nvidia.com/gpu")
    assert totals.total(key) == 24
    [overrun] = cap.over_capacity(totals, {key: Fraction(16)})
    assert overrun.describe() == (
        "nominal quotas of nvidia.com/gpu in flavor 'h100' add up to 24 (ClusterQueue q 8, "
        "ClusterQueue r 8, Cohort pool 8), above the declared capacity 16"
    )
    b["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = kr.UNKNOWN
    assert cap.over_capacity(cap.quota_totals([a, b]), {key: Fraction(1)}) == []
    # A capacity no quota names (here negative, as a mutated node's allocatable was in the
    # property test that found it) is no overrun, and no KeyError.
    assert cap.over_capacity(totals, {("h100", "name"): Fraction(-4)}) == []


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=5),
        st.sampled_from(["cpu", "nvidia.com/gpu", "8", "-1", "1.5", "h100", "Never", "Exists"]),
        st.just(kr.UNKNOWN),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "spec", "resourceGroups", "coveredResources", "flavors", "name",
                    "resources", "nominalQuota", "borrowingLimit", "lendingLimit", "cohortName",
                    "preemption", "reclaimWithinCohort", "borrowWithinCohort", "policy",
                    "nodeTaints", "tolerations", "key", "operator", "value", "effect",
                    "nodeLabels", "metadata", "annotations", "kind", "flavorFungibility",
                    "preference", "fairSharing", "weight", "topologyName",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=examples(120), deadline=None)
@given(json_values)
def test_the_core_never_raises_on_any_input(obj):
    # The pack runs it on whatever the engine hands it: an exception would abort the policy.
    for kind in ("ClusterQueue", "ResourceFlavor"):
        thing = {**obj, "kind": kind} if isinstance(obj, dict) else obj
        for error in [
            *kr.cluster_queue_errors(thing),
            *kr.uncovered_resources(thing, ("cpu",)),
            *kr.fractional_quotas(thing),
            *kr.undeclared_flavors(thing, {"h100"}),
            *kr.resource_flavor_errors(thing),
            *cap.declared_capacity(thing)[1],
        ]:
            assert isinstance(error.message, str) and isinstance(error.where, str)
        cap.over_capacity(cap.quota_totals([thing]), {("h100", "cpu"): Fraction(1)})
