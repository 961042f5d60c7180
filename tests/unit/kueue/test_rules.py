"""The validation core on plain Kueue objects: located errors, Kueue's defaults, any input."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_queues.kueue import capacity as cap
from gpu_queues.kueue.clusterqueue import (
    BORROW_NEEDS_RECLAIM,
    CHECK_FLAVOR,
    CHECK_NAME,
    CHECK_TWICE,
    FAIR_SHARING_WEIGHT,
    FUNGIBILITY_PREFERENCE,
    cluster_queue_errors,
)
from gpu_queues.kueue.errors import (
    ENUM,
    FLAVOR_TWICE,
    LIST_SIZE,
    NOT_A_LIST,
    QUANTITY,
    TOO_MANY,
    UNKNOWN,
)
from gpu_queues.kueue.quantity import parse_quantity
from gpu_queues.kueue.quotas import (
    LENDING_ABOVE_NOMINAL,
    LIMIT_WITHOUT_COHORT,
    NOMINAL_MISSING,
    QUOTA_MISSING,
    QUOTA_NOT_COVERED,
    QUOTA_ORDER,
    QUOTA_TWICE,
)
from gpu_queues.kueue.resourceflavor import (
    LABEL,
    TAINT_TWICE,
    TOLERATION,
    TOPOLOGY_NEEDS_LABEL,
    resource_flavor_errors,
)
from gpu_queues.kueue.resourcegroups import (
    COVERED_TWICE,
    FLAVOR_NAME,
    FLAVOR_UNDECLARED,
    NOT_COVERED,
    NOT_WHOLE,
    RESOURCE_NAME,
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


# --- every message in full (the mutation run: docs/mutation.md) -----------------------------


def said(errors):
    return [(e.where, e.message, e.fix, e.code) for e in errors]


def test_each_toleration_rule_says_what_is_wrong_and_how_to_fix_it():
    flavor = (
        ResourceFlavor("h100")
        .toleration(key="gpu", operator="In")
        .toleration(value="x")
        .toleration(key="gpu", operator="Exists", value="x")
        .toleration(key="gpu", effect="NoRun")
        .toleration(key="gpu", effect="NoSchedule", tolerationSeconds=5)
        .toleration(key="gpu", tolerationSeconds=5)
        .obj()
    )
    assert said(resource_flavor_errors(flavor)) == [
        (
            "spec.tolerations[0].operator",
            "operator is 'In'",
            "use Equal (the default) or Exists",
            TOLERATION,
        ),
        (
            "spec.tolerations[1].operator",
            "a toleration without a key matches every taint, which needs operator Exists",
            "set operator: Exists, or give the key",
            TOLERATION,
        ),
        (
            "spec.tolerations[2].value",
            "a value is set but operator is Exists, which matches any value",
            "remove the value, or use operator Equal",
            TOLERATION,
        ),
        (
            "spec.tolerations[3].effect",
            "effect is 'NoRun'",
            "use one of NoSchedule, PreferNoSchedule, NoExecute",
            TOLERATION,
        ),
        (
            "spec.tolerations[4].tolerationSeconds",
            "tolerationSeconds is set but effect is not NoExecute",
            "set effect: NoExecute, or remove tolerationSeconds",
            TOLERATION,
        ),
        (
            "spec.tolerations[5].tolerationSeconds",
            "tolerationSeconds is set but effect is not NoExecute",
            "set effect: NoExecute, or remove tolerationSeconds",
            TOLERATION,
        ),
    ]


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "gpu"},
        {"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"},
        {"operator": "Exists"},
        {"key": "gpu", "operator": "Exists", "value": ""},
        {"key": "gpu", "effect": ""},
        {"key": "gpu", "effect": "PreferNoSchedule"},
        {"key": "gpu", "effect": "NoExecute", "tolerationSeconds": 30},
        {"key": "gpu", "operator": "In", "value": UNKNOWN},
    ],
)
def test_tolerations_kueue_accepts(toleration):
    assert resource_flavor_errors(ResourceFlavor("h100").toleration(**toleration).obj()) == []


def test_a_toleration_that_is_not_an_object_is_left_to_the_schema():
    flavor = ResourceFlavor("h100").spec(tolerations=["gpu", UNKNOWN]).obj()
    assert resource_flavor_errors(flavor) == []


def test_taints_need_a_known_effect_and_one_per_key_and_effect():
    flavor = (
        ResourceFlavor("h100")
        .taint("gpu", "NoRun")
        .taint("gpu", "NoSchedule", "a")
        .taint("gpu", "NoExecute")
        .taint("gpu", "NoSchedule", "b")
        .taint("gpu", "NoSchedule", "c")
        .taint("other", "NoSchedule")
        .obj()
    )
    assert said(resource_flavor_errors(flavor)) == [
        (
            "spec.nodeTaints[0].effect",
            "taint effect is 'NoRun'",
            "use one of NoSchedule, PreferNoSchedule, NoExecute",
            ENUM,
        ),
        (
            "spec.nodeTaints[3]",
            "taint gpu:NoSchedule is already nodeTaints[1]",
            "keep one taint per key and effect",
            TAINT_TWICE,
        ),
        (
            "spec.nodeTaints[4]",
            "taint gpu:NoSchedule is already nodeTaints[1]",
            "keep one taint per key and effect",
            TAINT_TWICE,
        ),
    ]
    unknown = ResourceFlavor("h100").spec(
        nodeTaints=[{"key": UNKNOWN, "effect": "NoRun"}, {"key": "gpu", "effect": UNKNOWN}]
    )
    assert resource_flavor_errors(unknown.obj()) == []


def test_at_most_eight_labels_taints_and_tolerations():
    labels = {f"l{i}": "x" for i in range(9)}
    flavor = ResourceFlavor("h100").labels(labels)
    for i in range(9):
        flavor.taint(f"t{i}", "NoSchedule").toleration(key=f"t{i}")
    assert said(resource_flavor_errors(flavor.obj())) == [
        ("spec.nodeLabels", "nodeLabels has 9 entries", "keep at most 8", TOO_MANY),
        ("spec.nodeTaints", "nodeTaints has 9 entries", "list between 0 and 8 taints", LIST_SIZE),
        (
            "spec.tolerations",
            "tolerations has 9 entries",
            "list between 0 and 8 tolerations",
            LIST_SIZE,
        ),
    ]
    eight = ResourceFlavor("h100").labels({f"l{i}": "x" for i in range(8)})
    for i in range(8):
        eight.taint(f"t{i}", "NoSchedule").toleration(key=f"t{i}")
    assert resource_flavor_errors(eight.obj()) == []


def test_node_labels_need_qualified_keys_and_label_values():
    flavor = ResourceFlavor("h100").labels(
        {
            "gpu.example.com/model": "h100",
            "-bad": "ok",
            "good": "not ok",
            "also/bad/key": "x" * 64,
            "count": 3,
        }
    )
    assert said(resource_flavor_errors(flavor.obj())) == [
        ("spec.nodeLabels.-bad", "'-bad' is not a valid label key", "write [prefix/]name", LABEL),
        (
            "spec.nodeLabels.good",
            "'not ok' is not a valid label value",
            "at most 63 letters, digits, '-', '_' or '.'",
            LABEL,
        ),
        (
            "spec.nodeLabels.also/bad/key",
            "'also/bad/key' is not a valid label key",
            "write [prefix/]name",
            LABEL,
        ),
        (
            "spec.nodeLabels.also/bad/key",
            f"'{'x' * 64}' is not a valid label value",
            "at most 63 letters, digits, '-', '_' or '.'",
            LABEL,
        ),
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"topologyName": "rack"}, [("spec.topologyName", TOPOLOGY_NEEDS_LABEL)]),
        ({"topologyName": "rack", "nodeLabels": {}}, [("spec.topologyName", TOPOLOGY_NEEDS_LABEL)]),
        ({"topologyName": "rack", "nodeLabels": {"zone": "a"}}, []),
        ({"topologyName": "rack", "nodeLabels": UNKNOWN}, []),
        ({"topologyName": UNKNOWN}, []),
        ({"topologyName": ""}, []),
    ],
)
def test_a_topology_needs_node_labels(spec, expected):
    assert codes(resource_flavor_errors(ResourceFlavor("h100").spec(**spec).obj())) == expected


def test_the_topology_message():
    [error] = resource_flavor_errors(ResourceFlavor("h100").topology("rack").obj())
    assert (error.message, error.fix) == (
        "topologyName is set but the flavor has no nodeLabels",
        "add at least one nodeLabel",
    )


def test_a_flavor_without_a_spec_or_with_an_unknown_one_has_nothing_to_check():
    assert resource_flavor_errors(ResourceFlavor("h100").obj()) == []
    assert resource_flavor_errors({"spec": UNKNOWN}) == []


def test_each_enum_names_the_field_and_what_is_allowed():
    q = cq(
        queueingStrategy="FIFO",
        stopPolicy="Drain",
        preemption={
            "reclaimWithinCohort": "Sometimes",
            "withinClusterQueue": "Always",
            "borrowWithinCohort": {"policy": "Always"},
        },
        flavorFungibility={"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
    )
    assert said(cluster_queue_errors(q)) == [
        (
            "spec.queueingStrategy",
            "queueingStrategy is 'FIFO'",
            "use one of BestEffortFIFO, StrictFIFO",
            ENUM,
        ),
        ("spec.stopPolicy", "stopPolicy is 'Drain'", "use one of None, Hold, HoldAndDrain", ENUM),
        (
            "spec.preemption.reclaimWithinCohort",
            "reclaimWithinCohort is 'Sometimes'",
            "use one of Never, LowerPriority, Any",
            ENUM,
        ),
        (
            "spec.preemption.withinClusterQueue",
            "withinClusterQueue is 'Always'",
            "use one of Never, LowerPriority, LowerOrNewerEqualPriority",
            ENUM,
        ),
        (
            "spec.preemption.borrowWithinCohort.policy",
            "policy is 'Always'",
            "use one of Never, LowerPriority",
            ENUM,
        ),
        (
            "spec.flavorFungibility.whenCanBorrow",
            "whenCanBorrow is 'Borrow'",
            "use one of MayStopSearch, TryNextFlavor",
            ENUM,
        ),
        (
            "spec.flavorFungibility.whenCanPreempt",
            "whenCanPreempt is 'Preempt'",
            "use one of MayStopSearch, TryNextFlavor",
            ENUM,
        ),
    ]
    preference = cq(
        flavorFungibility={
            "preference": "Cheapest",
            "whenCanBorrow": "TryNextFlavor",
            "whenCanPreempt": "TryNextFlavor",
        }
    )
    assert said(cluster_queue_errors(preference)) == [
        (
            "spec.flavorFungibility.preference",
            "preference is 'Cheapest'",
            "use one of BorrowingOverPreemption, PreemptionOverBorrowing",
            ENUM,
        ),
    ]


def test_every_value_each_enum_allows_is_accepted():
    for strategy in ("BestEffortFIFO", "StrictFIFO"):
        assert cluster_queue_errors(cq(queueingStrategy=strategy)) == []
    for policy in ("None", "Hold", "HoldAndDrain"):
        assert cluster_queue_errors(cq(stopPolicy=policy)) == []
    for within in ("Never", "LowerPriority", "LowerOrNewerEqualPriority"):
        assert cluster_queue_errors(cq(preemption={"withinClusterQueue": within})) == []
    for reclaim in ("Never", "LowerPriority", "Any"):
        assert cluster_queue_errors(cq(preemption={"reclaimWithinCohort": reclaim})) == []
    for when in ("MayStopSearch", "TryNextFlavor"):
        fungibility = {"whenCanBorrow": when, "whenCanPreempt": when}
        assert cluster_queue_errors(cq(flavorFungibility=fungibility)) == []
    for preference in ("BorrowingOverPreemption", "PreemptionOverBorrowing"):
        fungibility = {
            "preference": preference,
            "whenCanBorrow": "TryNextFlavor",
            "whenCanPreempt": "TryNextFlavor",
        }
        assert cluster_queue_errors(cq(flavorFungibility=fungibility)) == []
    assert cluster_queue_errors(cq(stopPolicy=UNKNOWN, queueingStrategy=UNKNOWN)) == []


BORROW_FIX = (
    "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort.policy to Never"
)


@pytest.mark.parametrize(
    ("reclaim", "said_of_it"),
    [(None, "not set (Kueue defaults it to Never)"), ("Never", "Never")],
)
def test_preempting_to_borrow_needs_reclaiming(reclaim, said_of_it):
    preemption = {"borrowWithinCohort": {"policy": "LowerPriority"}}
    if reclaim:
        preemption["reclaimWithinCohort"] = reclaim
    assert said(cluster_queue_errors(cq(preemption=preemption))) == [
        (
            "spec.preemption.borrowWithinCohort.policy",
            f"borrowWithinCohort.policy is LowerPriority but reclaimWithinCohort is {said_of_it}; "
            "Kueue refuses preempting to borrow without reclaiming",
            BORROW_FIX,
            BORROW_NEEDS_RECLAIM,
        )
    ]


@pytest.mark.parametrize(
    "preemption",
    [
        {"borrowWithinCohort": {"policy": "LowerPriority"}, "reclaimWithinCohort": "Any"},
        {"borrowWithinCohort": {"policy": "LowerPriority"}, "reclaimWithinCohort": "LowerPriority"},
        {"borrowWithinCohort": {"policy": "Never"}},
        {"borrowWithinCohort": {}},
        {"borrowWithinCohort": {"policy": UNKNOWN}},
        {"borrowWithinCohort": {"policy": "LowerPriority"}, "reclaimWithinCohort": UNKNOWN},
    ],
)
def test_preemption_kueue_accepts(preemption):
    assert cluster_queue_errors(cq(preemption=preemption)) == []


@pytest.mark.parametrize(
    ("fungibility", "they_are"),
    [
        ({}, "MayStopSearch and TryNextFlavor"),
        (
            {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"},
            "TryNextFlavor and MayStopSearch",
        ),
        (
            {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "MayStopSearch and TryNextFlavor",
        ),
    ],
)
def test_a_fungibility_preference_needs_both_searches_to_go_on(fungibility, they_are):
    q = cq(flavorFungibility={"preference": "PreemptionOverBorrowing", **fungibility})
    assert said(cluster_queue_errors(q)) == [
        (
            "spec.flavorFungibility.preference",
            "preference PreemptionOverBorrowing needs whenCanBorrow and whenCanPreempt both "
            f"TryNextFlavor (they are {they_are})",
            "set both to TryNextFlavor, or remove preference",
            FUNGIBILITY_PREFERENCE,
        )
    ]


@pytest.mark.parametrize(
    "fungibility",
    [
        {"preference": UNKNOWN},
        {"preference": "BorrowingOverPreemption", "whenCanBorrow": UNKNOWN},
        {"preference": "BorrowingOverPreemption", "whenCanPreempt": UNKNOWN},
        {"preference": "BorrowingOverPreemption", "whenCanBorrow": "TryNextFlavor"},
    ],
)
def test_a_fungibility_preference_kueue_accepts_or_cannot_yet_judge(fungibility):
    assert cluster_queue_errors(cq(flavorFungibility=fungibility)) == []


@pytest.mark.parametrize("weight", ["1n", "0.000000001"])
def test_a_fair_sharing_weight_kueue_cannot_tell_from_zero(weight):
    assert said(cluster_queue_errors(cq(fairSharing={"weight": weight}))) == [
        (
            "spec.fairSharing.weight",
            f"weight {weight} is above zero but at most 1n, which Kueue cannot tell from zero",
            "use 0, or a weight above 1n",
            FAIR_SHARING_WEIGHT,
        )
    ]


@pytest.mark.parametrize("weight", ["0", "2n", "1", 1, "0.5", UNKNOWN])
def test_fair_sharing_weights_kueue_accepts(weight):
    assert cluster_queue_errors(cq(fairSharing={"weight": weight})) == []
    assert cluster_queue_errors(cq(fairSharing={})) == []


def test_a_negative_fair_sharing_weight_is_a_quantity_error():
    assert said(cluster_queue_errors(cq(fairSharing={"weight": "-1"}))) == [
        (
            "spec.fairSharing.weight",
            "weight is -1, which is negative",
            "write a non-negative Kubernetes quantity such as 8, 64 or 512Gi",
            QUANTITY,
        )
    ]


def strategy(*checks):
    return cq(admissionChecksStrategy={"admissionChecks": list(checks)})


def test_admission_checks_strategy_names_each_check_once():
    q = strategy(
        {"name": "multikueue"},
        {"name": ""},
        {"name": "multikueue"},
        {"onFlavors": ["h100"]},
        {"name": "prov", "onFlavors": ["h100", "a100", "h100"]},
        {"name": "prov2", "onFlavors": ["h100", UNKNOWN, UNKNOWN]},
        {"name": UNKNOWN},
        {"name": 5},
    )
    path = "spec.admissionChecksStrategy.admissionChecks"
    assert said(cluster_queue_errors(q)) == [
        (
            f"{path}[1].name",
            "the admission check has no name",
            "name the AdmissionCheck",
            CHECK_NAME,
        ),
        (
            f"{path}[2].name",
            "admission check 'multikueue' is already admissionChecks[0]",
            "list each admission check once",
            CHECK_TWICE,
        ),
        (
            f"{path}[3].name",
            "the admission check has no name",
            "name the AdmissionCheck",
            CHECK_NAME,
        ),
        (
            f"{path}[4].onFlavors",
            "onFlavors names a flavor twice",
            "list each flavor once",
            FLAVOR_TWICE,
        ),
        (
            f"{path}[4].onFlavors[1]",
            "onFlavors names flavor 'a100', which is not in the queue's quota (its flavors: "
            "h100), so Kueue refuses the ClusterQueue",
            "name a flavor the team has quota in",
            CHECK_FLAVOR,
        ),
        (
            f"{path}[7].name",
            "the admission check has no name",
            "name the AdmissionCheck",
            CHECK_NAME,
        ),
    ]


def test_admission_checks_strategy_sizes():
    path = "spec.admissionChecksStrategy.admissionChecks"
    assert said(cluster_queue_errors(strategy())) == [
        (path, "admissionChecks has 0 entries", "list between 1 and 64 admission checks", LIST_SIZE)
    ]
    many = strategy(*({"name": f"c{i}"} for i in range(65)))
    assert codes(cluster_queue_errors(many)) == [(path, LIST_SIZE)]
    assert cluster_queue_errors(strategy(*({"name": f"c{i}"} for i in range(64)))) == []
    flavors = strategy({"name": "c", "onFlavors": [f"f{i}" for i in range(65)]})
    errors = cluster_queue_errors(flavors)
    # Each of the 65 is also outside the quota (h100 only): the onFlavors rule's own test.
    assert [e.where for e in errors if e.code == CHECK_FLAVOR] == [
        f"{path}[0].onFlavors[{i}]" for i in range(65)
    ]
    assert said([e for e in errors if e.code != CHECK_FLAVOR]) == [
        (
            f"{path}[0].onFlavors",
            "onFlavors has 65 entries",
            "list between 0 and 64 flavors",
            LIST_SIZE,
        )
    ]
    assert cluster_queue_errors(strategy({"name": "c", "onFlavors": ["h100"]})) == []
    assert cluster_queue_errors(cq(admissionChecksStrategy=UNKNOWN)) == []
    assert cluster_queue_errors(cq(admissionChecksStrategy={"admissionChecks": UNKNOWN})) == []


def test_a_queue_with_an_unknown_spec_has_nothing_to_check():
    assert cluster_queue_errors({"spec": UNKNOWN}) == []


def flavor_quotas(*resources, covered=("cpu", "memory")):
    """A ClusterQueue in Kueue's shape: one group covering `covered`, flavor h100 with
    `resources` (its quotas, as written)."""
    h100 = FlavorQuotas("h100")
    for quota in resources:
        h100.entry(quota)
    return ClusterQueue("q").resource_group(h100, covered=covered).obj()


RESOURCES = "spec.resourceGroups[0].flavors[0].resources"
QUANTITY_FIX = "write a non-negative Kubernetes quantity such as 8, 64 or 512Gi"


def test_each_quota_name_problem_in_full():
    q = flavor_quotas(
        {"name": "cpu", "nominalQuota": 8},
        {"nominalQuota": 1},
        {"name": "cpu", "nominalQuota": 1},
        {"name": "nvidia.com/gpu", "nominalQuota": 1},
    )
    assert said(cluster_queue_errors(q)) == [
        (
            f"{RESOURCES}[1].name",
            "the quota has no name",
            "name the covered resource this quota is for",
            QUOTA_NOT_COVERED,
        ),
        (
            f"{RESOURCES}[2].name",
            "a second quota for resource 'cpu'",
            "give each flavor exactly one quota per covered resource",
            QUOTA_TWICE,
        ),
        (
            f"{RESOURCES}[3]",
            "resource 'nvidia.com/gpu' is not in coveredResources (cpu, memory)",
            "add it to coveredResources or remove this quota",
            QUOTA_NOT_COVERED,
        ),
        (
            RESOURCES,
            "no quota for covered resource 'memory'",
            "give each flavor exactly one quota per covered resource: cpu, memory",
            QUOTA_MISSING,
        ),
    ]


def test_quotas_out_of_the_covered_order_in_full():
    q = flavor_quotas({"name": "memory", "nominalQuota": "1Gi"}, {"name": "cpu", "nominalQuota": 1})
    assert said(cluster_queue_errors(q)) == [
        (
            RESOURCES,
            "resources lists [memory, cpu] but coveredResources is [cpu, memory]",
            "list the quotas in the order of coveredResources",
            QUOTA_ORDER,
        )
    ]
    # An unnamed or extra quota is told as such, not also as out of order.
    extra = flavor_quotas(
        {"name": "memory", "nominalQuota": "1Gi"},
        {"name": "cpu", "nominalQuota": 1},
        {"name": "pods", "nominalQuota": 1},
    )
    assert codes(cluster_queue_errors(extra)) == [(f"{RESOURCES}[2]", QUOTA_NOT_COVERED)]
    unnamed = flavor_quotas(
        {"name": "memory", "nominalQuota": "1Gi"},
        {"name": "cpu", "nominalQuota": 1},
        {"nominalQuota": 1},
    )
    assert codes(cluster_queue_errors(unnamed)) == [(f"{RESOURCES}[2].name", QUOTA_NOT_COVERED)]
    # Unknown names or covered resources: the names are judged once known.
    unknown = flavor_quotas(
        {"name": UNKNOWN, "nominalQuota": 1}, {"name": "cpu", "nominalQuota": 1}
    )
    assert cluster_queue_errors(unknown) == []
    covered = flavor_quotas({"name": "gpu", "nominalQuota": 1}, covered=("cpu", UNKNOWN))
    assert cluster_queue_errors(covered) == []


def test_each_quota_amount_problem_in_full():
    q = flavor_quotas(
        {"name": "cpu", "borrowingLimit": "x"},
        {"name": "memory", "nominalQuota": "-1Gi", "lendingLimit": "2Gi"},
    )
    assert said(cluster_queue_errors(q)) == [
        (
            f"{RESOURCES}[0].nominalQuota",
            "the quota has no nominalQuota",
            "set nominalQuota (it is required)",
            NOMINAL_MISSING,
        ),
        (
            f"{RESOURCES}[0].borrowingLimit",
            "borrowingLimit 'x' is not a quantity (expected e.g. 64, 500m, 512Gi, 1.5G, 1e3)",
            QUANTITY_FIX,
            QUANTITY,
        ),
        (
            f"{RESOURCES}[0].borrowingLimit",
            "borrowingLimit needs a cohort to borrow from or lend to, and the queue has no "
            "cohortName",
            "set spec.cohortName, or remove borrowingLimit",
            LIMIT_WITHOUT_COHORT,
        ),
        (
            f"{RESOURCES}[1].nominalQuota",
            "nominalQuota is -1Gi, which is negative",
            QUANTITY_FIX,
            QUANTITY,
        ),
        (
            f"{RESOURCES}[1].lendingLimit",
            "lendingLimit needs a cohort to borrow from or lend to, and the queue has no "
            "cohortName",
            "set spec.cohortName, or remove lendingLimit",
            LIMIT_WITHOUT_COHORT,
        ),
    ]


def test_lending_within_nominal_and_limits_with_a_cohort():
    def with_cohort(key, *resources):
        q = flavor_quotas(*resources)
        q["spec"][key] = "pool"
        return q

    above = with_cohort(
        "cohortName",
        {"name": "cpu", "nominalQuota": 8, "lendingLimit": 9, "borrowingLimit": 100},
        {"name": "memory", "nominalQuota": "1Gi", "lendingLimit": "1Gi"},
    )
    assert said(cluster_queue_errors(above)) == [
        (
            f"{RESOURCES}[0].lendingLimit",
            "lendingLimit 9 is above nominalQuota 8",
            "lower lendingLimit to at most nominalQuota",
            LENDING_ABOVE_NOMINAL,
        )
    ]
    # v1beta1 names the field cohort; an unknown cohort may be set
    v1beta1 = with_cohort("cohort", {"name": "cpu", "nominalQuota": 8, "borrowingLimit": 1})
    v1beta1["spec"]["resourceGroups"][0]["coveredResources"] = ["cpu"]
    assert cluster_queue_errors(v1beta1) == []
    empty = with_cohort("cohortName", {"name": "cpu", "nominalQuota": 8, "borrowingLimit": 1})
    empty["spec"]["cohortName"] = ""
    empty["spec"]["resourceGroups"][0]["coveredResources"] = ["cpu"]
    assert codes(cluster_queue_errors(empty)) == [
        (f"{RESOURCES}[0].borrowingLimit", LIMIT_WITHOUT_COHORT)
    ]
    unknown_nominal = with_cohort(
        "cohortName",
        {"name": "cpu", "nominalQuota": UNKNOWN, "lendingLimit": 9},
        {"name": "memory", "nominalQuota": "1Gi", "lendingLimit": UNKNOWN},
    )
    assert cluster_queue_errors(unknown_nominal) == []


GROUPS = "spec.resourceGroups"


def groups_queue(*groups, cohort=None):
    built = ClusterQueue("q").spec(resourceGroups=list(groups))
    if cohort:
        built.cohort(cohort)
    return built.obj()


def group(covered, *flavors):
    """A group covering `covered`, each flavor with a quota of 1 per covered resource."""
    return {
        "coveredResources": list(covered),
        "flavors": [
            {"name": f, "resources": [{"name": c, "nominalQuota": 1} for c in covered]}
            for f in flavors
        ],
    }


def second_cpu(g, f):
    """The quota error of a flavor given cpu twice (its group covers cpu twice)."""
    return (
        f"{GROUPS}[{g}].flavors[{f}].resources[1].name",
        "a second quota for resource 'cpu'",
        "give each flavor exactly one quota per covered resource",
        QUOTA_TWICE,
    )


def test_covered_resources_and_flavor_names_in_full():
    q = groups_queue(
        group(["cpu", "cpu"], "h100", "h100"),
        group(["cpu", "Not A Name"], "h100", "A100"),
    )
    assert said(cluster_queue_errors(q)) == [
        (
            f"{GROUPS}[0].coveredResources[1]",
            "resource 'cpu' is already covered by this resource group",
            "cover each resource in only one resource group, once",
            COVERED_TWICE,
        ),
        second_cpu(0, 0),
        (
            f"{GROUPS}[0].flavors[1].name",
            "flavor 'h100' already appears in this resource group",
            "use each flavor in only one resource group, once",
            FLAVOR_TWICE,
        ),
        second_cpu(0, 1),
        (
            f"{GROUPS}[1].coveredResources[0]",
            "resource 'cpu' is already covered by resourceGroups[0]",
            "cover each resource in only one resource group, once",
            COVERED_TWICE,
        ),
        (
            f"{GROUPS}[1].coveredResources[1]",
            "'Not A Name' is not a resource name",
            "write a resource name such as cpu, memory or nvidia.com/gpu",
            RESOURCE_NAME,
        ),
        (
            f"{GROUPS}[1].flavors[0].name",
            "flavor 'h100' already appears in resourceGroups[0]",
            "use each flavor in only one resource group, once",
            FLAVOR_TWICE,
        ),
        (
            f"{GROUPS}[1].flavors[1].name",
            "'A100' is not a valid ResourceFlavor name",
            "use lowercase letters, digits, '-' and '.'",
            FLAVOR_NAME,
        ),
    ]


@pytest.mark.parametrize("name", [None, ""])
def test_a_flavor_without_a_name(name):
    q = groups_queue(group(["cpu"], name))
    assert said(cluster_queue_errors(q)) == [
        (
            f"{GROUPS}[0].flavors[0].name",
            "the flavor has no name",
            "name the ResourceFlavor this quota is for",
            FLAVOR_NAME,
        )
    ]


def test_unknown_names_and_non_string_names():
    assert cluster_queue_errors(groups_queue(group([UNKNOWN], UNKNOWN))) == []
    odd = groups_queue(group([7], "h100"))
    odd["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = 7
    assert codes(cluster_queue_errors(odd)) == [(f"{GROUPS}[0].coveredResources[0]", RESOURCE_NAME)]
    number = groups_queue(group(["cpu"], "h100"))
    number["spec"]["resourceGroups"][0]["flavors"][0]["name"] = 5
    assert codes(cluster_queue_errors(number)) == [(f"{GROUPS}[0].flavors[0].name", FLAVOR_NAME)]


def test_resource_groups_that_are_not_a_list_or_too_many():
    assert said(cluster_queue_errors(groups_queue())) == []
    not_a_list = {"spec": {"resourceGroups": {"cpu": 1}}}
    assert said(cluster_queue_errors(not_a_list)) == [
        (GROUPS, "resourceGroups is not a list", "write a list", NOT_A_LIST)
    ]
    seventeen = groups_queue(*(group([f"example.com/r{g}"], f"f{g}") for g in range(17)))
    assert said(cluster_queue_errors(seventeen)) == [
        (
            GROUPS,
            "it has 17 resourceGroups, more than 16",
            "merge resource groups until there are at most 16",
            TOO_MANY,
        )
    ]
    sixteen = groups_queue(*(group([f"example.com/r{g}"], f"f{g}") for g in range(16)))
    assert cluster_queue_errors(sixteen) == []
    assert cluster_queue_errors({"spec": {"resourceGroups": UNKNOWN}}) == []


def test_a_group_needs_covered_resources_flavors_and_quotas():
    empty = groups_queue({"coveredResources": [], "flavors": []})
    assert said(cluster_queue_errors(empty)) == [
        (
            f"{GROUPS}[0].coveredResources",
            "coveredResources has 0 entries",
            "list between 1 and 64 resources",
            LIST_SIZE,
        ),
        (
            f"{GROUPS}[0].flavors",
            "flavors has 0 entries",
            "list between 1 and 64 flavors",
            LIST_SIZE,
        ),
    ]
    no_quotas = groups_queue({"coveredResources": ["cpu"], "flavors": [{"name": "h100"}]})
    assert said(cluster_queue_errors(no_quotas)) == [
        (
            f"{GROUPS}[0].flavors[0].resources",
            "resources has 0 entries",
            "list between 1 and 64 quotas",
            LIST_SIZE,
        ),
        (
            f"{GROUPS}[0].flavors[0].resources",
            "no quota for covered resource 'cpu'",
            "give each flavor exactly one quota per covered resource: cpu",
            QUOTA_MISSING,
        ),
    ]
    unknown = groups_queue({"coveredResources": UNKNOWN, "flavors": [{"name": "x"}]})
    assert cluster_queue_errors(unknown) == []
    unknown_quotas = groups_queue(
        {"coveredResources": ["cpu"], "flavors": [{"name": "h100", "resources": UNKNOWN}]}
    )
    assert cluster_queue_errors(unknown_quotas) == []


def test_the_webhooks_totals():
    # 9 resources x 57 flavors = 513 combinations in one group (at most 512)
    covered = [f"example.com/r{i}" for i in range(9)]
    big = groups_queue(group(covered, *(f"f{i}" for i in range(57))))
    assert said(cluster_queue_errors(big)) == [
        (
            f"{GROUPS}[0]",
            "the group has 513 flavor-resource combinations",
            "keep at most 512 per resource group",
            TOO_MANY,
        )
    ]
    at_limit = groups_queue(group(covered[:8], *(f"f{i}" for i in range(64))))
    assert cluster_queue_errors(at_limit) == []
    # 257 flavors and 257 covered resources across the groups (at most 256 of each)
    wide = groups_queue(
        *(
            group([f"example.com/r{g}-{i}" for i in range(17)], *(f"f{g}-{i}" for i in range(17)))
            for g in range(15)
        ),
        group([f"example.com/last-{i}" for i in range(2)], "last-0", "last-1"),
    )
    assert said(cluster_queue_errors(wide)) == [
        (GROUPS, "it has 257 flavors in all", "keep at most 256 flavors", TOO_MANY),
        (GROUPS, "it covers 257 resources in all", "cover at most 256 resources", TOO_MANY),
    ]
    exact = groups_queue(
        *(
            group([f"example.com/r{g}-{i}" for i in range(16)], *(f"f{g}-{i}" for i in range(16)))
            for g in range(16)
        ),
    )
    assert cluster_queue_errors(exact) == []


def test_uncovered_resources_in_full():
    q = groups_queue(group(["nvidia.com/gpu"], "h100"), group(["cpu"], "std"))
    assert said(uncovered_resources(q, ("cpu", "memory", "ephemeral-storage"))) == [
        (
            GROUPS,
            "coveredResources [nvidia.com/gpu, cpu] do not include memory, ephemeral-storage, so a "
            "job whose pods also request memory, ephemeral-storage (almost every job) is never "
            "admitted",
            "add 'memory', 'ephemeral-storage' to a resourceGroup's coveredResources and give "
            "every flavor of that group a nominalQuota for it",
            NOT_COVERED,
        )
    ]
    assert uncovered_resources(groups_queue(), ()) == []
    assert said(uncovered_resources(groups_queue(), ("cpu",)))[0][1].startswith(
        "coveredResources [none] do not include cpu,"
    )
    assert uncovered_resources({"spec": {"resourceGroups": UNKNOWN}}, ("cpu",)) == []
    assert uncovered_resources(groups_queue({"coveredResources": UNKNOWN}), ("cpu",)) == []
    assert uncovered_resources(groups_queue({"coveredResources": [UNKNOWN]}), ("cpu",)) == []


def test_fractional_quotas_in_full():
    q = groups_queue(
        {
            "coveredResources": ["cpu", "nvidia.com/gpu"],
            "flavors": [
                {
                    "name": "h100",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "500m"},
                        {
                            "name": "nvidia.com/gpu",
                            "nominalQuota": "1500m",
                            "borrowingLimit": "0.5",
                            "lendingLimit": 1,
                        },
                        {"nominalQuota": "0.5"},
                    ],
                }
            ],
        },
        cohort="pool",
    )
    path = f"{GROUPS}[0].flavors[0].resources[1]"
    [nominal, borrowing] = fractional_quotas(q)
    assert (nominal.where, nominal.fix, nominal.code) == (
        f"{path}.nominalQuota",
        "write a whole number of nvidia.com/gpu",
        NOT_WHOLE,
    )
    assert nominal.message.startswith("nominalQuota: ")
    assert (borrowing.where, borrowing.code) == (f"{path}.borrowingLimit", NOT_WHOLE)
    assert borrowing.message.startswith("borrowingLimit: ")


def test_undeclared_flavors_in_full():
    q = groups_queue(group(["cpu"], "h100", "a100", ""), group(["memory"], "l4"))
    assert said(undeclared_flavors(q, {"l4", "h100"})) == [
        (
            f"{GROUPS}[0].flavors[1].name",
            "flavor 'a100' is not declared (declared: h100, l4), so Kueue would mark the queue "
            "inactive (FlavorNotFound) and admit nothing",
            "declare the ResourceFlavor, or fix the flavor name",
            FLAVOR_UNDECLARED,
        )
    ]
    assert undeclared_flavors(q, {"l4", "h100", "a100"}) == []


def test_an_unknown_taint_skips_only_itself():
    flavor = ResourceFlavor("h100").spec(
        nodeTaints=[{"key": UNKNOWN, "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoRun"}]
    )
    assert codes(resource_flavor_errors(flavor.obj())) == [("spec.nodeTaints[1].effect", ENUM)]


def test_an_unknown_quota_list_or_quota_skips_only_itself():
    q = groups_queue(
        {
            "coveredResources": ["cpu"],
            "flavors": [
                {"name": "std", "resources": UNKNOWN},
                {"name": "h100", "resources": [{"name": "cpu"}]},
            ],
        }
    )
    assert codes(cluster_queue_errors(q)) == [
        (f"{GROUPS}[0].flavors[1].resources[0].nominalQuota", NOMINAL_MISSING)
    ]
    # an unknown quota has no limits to need a cohort for
    unknown = groups_queue(
        {"coveredResources": [UNKNOWN], "flavors": [{"name": "std", "resources": [UNKNOWN]}]}
    )
    assert cluster_queue_errors(unknown) == []


def test_fractional_quotas_of_every_limit_after_an_unnamed_quota():
    q = groups_queue(
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {
                    "name": "h100",
                    "resources": [
                        {"nominalQuota": "0.5"},
                        {"name": "nvidia.com/gpu", "nominalQuota": 2, "lendingLimit": "0.5"},
                    ],
                }
            ],
        },
        cohort="pool",
    )
    assert codes(fractional_quotas(q)) == [
        (f"{GROUPS}[0].flavors[0].resources[1].lendingLimit", NOT_WHOLE)
    ]
