"""The validation core on plain Kueue objects: located errors, Kueue's defaults, any input."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_queues.kueue import capacity as cap
from gpu_queues.kueue.clusterqueue import (
    FAIR_SHARING_WEIGHT,
    FUNGIBILITY_PREFERENCE,
    cluster_queue_errors,
)
from gpu_queues.kueue.errors import ENUM, QUANTITY, UNKNOWN
from gpu_queues.kueue.quantity import parse_quantity
from gpu_queues.kueue.quotas import (
    LENDING_ABOVE_NOMINAL,
    QUOTA_MISSING,
    QUOTA_NOT_COVERED,
    QUOTA_ORDER,
    QUOTA_TWICE,
)
from gpu_queues.kueue.resourceflavor import (
    TAINT_TWICE,
    TOLERATION,
    TOPOLOGY_NEEDS_LABEL,
    resource_flavor_errors,
)
from gpu_queues.kueue.resourcegroups import (
    NOT_WHOLE,
    fractional_quotas,
    uncovered_resources,
    undeclared_flavors,
)
from tests.builders import ClusterQueue, Cohort, FlavorQuotas, ResourceFlavor
from tests.properties import examples

pytestmark = pytest.mark.unit


COVERED = ["cpu", "memory", "nvidia.com/gpu"]


def queue(name="q"):
    """The queue the rules are tried on: one flavor, h100, quotas of every covered resource."""
    return ClusterQueue(name).quota("h100", cpu=8, memory="64Gi", gpu=8)


def cq(**spec):
    return queue().spec(**spec).obj()


def rf(**spec):
    return ResourceFlavor("h100").spec(**spec).obj()


def codes(errors):
    return [(e.where, e.code) for e in errors]


def test_a_valid_queue_has_no_errors():
    assert cluster_queue_errors(cq()) == []
    assert uncovered_resources(cq(), ("cpu", "memory")) == []
    assert fractional_quotas(cq()) == []
    assert undeclared_flavors(cq(), {"h100"}) == []


def test_errors_name_the_field_inside_the_object():
    q = queue().lending("h100", memory="65Gi").cohort("pool").obj()
    [error] = cluster_queue_errors(q)
    assert error.where == "spec.resourceGroups[0].flavors[0].resources[1].lendingLimit"
    assert error.code == LENDING_ABOVE_NOMINAL


def test_missing_extra_duplicate_and_misordered_quotas_are_told_apart():
    misordered = FlavorQuotas("h100").quotas(cpu=8, gpu=8, memory="64Gi")
    q = ClusterQueue("q").resource_group(misordered, covered=COVERED)
    assert codes(cluster_queue_errors(q.obj())) == [
        ("spec.resourceGroups[0].flavors[0].resources", QUOTA_ORDER)
    ]
    # cpu twice, a resource no group covers, and none for nvidia.com/gpu
    odd = FlavorQuotas("h100").quotas(cpu=8, memory="64Gi").resource("cpu", 1)
    odd.resource("example.com/nic", 1)
    q = ClusterQueue("q").resource_group(odd, covered=COVERED)
    assert codes(cluster_queue_errors(q.obj())) == [
        ("spec.resourceGroups[0].flavors[0].resources[2].name", QUOTA_TWICE),
        ("spec.resourceGroups[0].flavors[0].resources[3]", QUOTA_NOT_COVERED),
        ("spec.resourceGroups[0].flavors[0].resources", QUOTA_MISSING),
    ]


def test_fungibility_preference_needs_both_try_next_flavor_with_crd_defaults():
    q = cq(flavorFungibility={"preference": "BorrowingOverPreemption"})
    [error] = cluster_queue_errors(q)  # whenCanBorrow defaults to MayStopSearch
    assert error.code == FUNGIBILITY_PREFERENCE and "MayStopSearch" in error.message
    q["spec"]["flavorFungibility"]["whenCanBorrow"] = "TryNextFlavor"
    assert cluster_queue_errors(q) == []


@pytest.mark.parametrize(
    ("weight", "code"), [("-1", QUANTITY), ("1n", FAIR_SHARING_WEIGHT), ("0", None)]
)
def test_fair_sharing_weight(weight, code):
    errors = cluster_queue_errors(cq(fairSharing={"weight": weight}))
    assert [e.code for e in errors] == ([code] if code else [])


def test_enums_are_checked_as_the_crd_does():
    errors = cluster_queue_errors(cq(stopPolicy="Drain", queueingStrategy="FIFO"))
    assert codes(errors) == [("spec.queueingStrategy", ENUM), ("spec.stopPolicy", ENUM)]


def test_resource_flavor_cel_rules():
    flavor = (
        ResourceFlavor("h100")
        .taint("gpu", "NoSchedule", "a")
        .taint("gpu", "NoSchedule", "b")
        .taint("gpu", "NoExecute")
        .toleration(operator="Equal", value="x")
        .toleration(key="gpu", operator="Exists", value="x")
        .toleration(key="gpu", effect="NoSchedule", tolerationSeconds=5)
        .toleration(operator="Exists")
        .topology("rack")
        .obj()
    )
    assert codes(resource_flavor_errors(flavor)) == [
        ("spec.nodeTaints[1]", TAINT_TWICE),
        ("spec.tolerations[0].operator", TOLERATION),
        ("spec.tolerations[1].value", TOLERATION),
        ("spec.tolerations[2].tolerationSeconds", TOLERATION),
        ("spec.topologyName", TOPOLOGY_NEEDS_LABEL),
    ]


def test_unknown_values_skip_only_the_checks_that_need_them():
    q = (
        ClusterQueue("q")
        .quota("h100", cpu="-1", memory="64Gi", gpu=8)
        .borrowing("h100", gpu=4)  # fine: the unknown cohort may be set
        .lending("h100", gpu=UNKNOWN)
        .cohort(UNKNOWN)
        .obj()
    )
    assert codes(cluster_queue_errors(q)) == [
        ("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota", QUANTITY)
    ]


def test_whole_numbers_of_extended_resources_only():
    # cpu: fractions are fine
    q = ClusterQueue("q").quota("h100", cpu="500m", memory="64Gi", gpu="7500m").obj()
    [error] = fractional_quotas(q)
    assert error.where.endswith("resources[2].nominalQuota") and error.code == NOT_WHOLE


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
    a, b = cq(), queue("r").obj()
    pool = Cohort("pool").quota("h100", cpu=8, memory="64Gi", gpu=8).obj()
    totals = cap.quota_totals([a, b, pool, {"kind": "LocalQueue"}])
    key = ("h100", "nvidia.com/gpu")
    assert totals.total(key) == 24
    [overrun] = cap.over_capacity(totals, {key: Fraction(16)})
    assert overrun.describe() == (
        "nominal quotas of nvidia.com/gpu in flavor 'h100' add up to 24 (ClusterQueue q 8, "
        "ClusterQueue r 8, Cohort pool 8), above the declared capacity 16"
    )
    b = ClusterQueue("r").quota("h100", cpu=8, memory="64Gi", gpu=UNKNOWN).obj()
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
        st.just(UNKNOWN),
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
            *cluster_queue_errors(thing),
            *uncovered_resources(thing, ("cpu",)),
            *fractional_quotas(thing),
            *undeclared_flavors(thing, {"h100"}),
            *resource_flavor_errors(thing),
            *cap.declared_capacity(thing)[1],
        ]:
            assert isinstance(error.message, str) and isinstance(error.where, str)
        cap.over_capacity(cap.quota_totals([thing]), {("h100", "cpu"): Fraction(1)})
