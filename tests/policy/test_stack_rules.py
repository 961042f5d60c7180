"""Stack rules (3, 4, 6) through faithful StackValidationArgs."""

import json

import pytest
from policy_harness import (
    COHORT,
    CQ,
    LQ,
    RF,
    UNKNOWN,
    cluster_queue,
    flavor,
    local_queue,
    run_policy,
    seed_stack,
    stack_args,
)

from policies import rules
from tests.builders import ClusterQueue, Cohort

pytestmark = pytest.mark.policy


def check(rule, resources, config=None):
    return run_policy(rule, stack_args(resources, config))


# Rule 3 ---------------------------------------------------------------------------------


def test_seed_flavors_exist():
    assert check(rules.FLAVORS_EXIST, seed_stack()) == []


def test_missing_flavor_is_rejected():
    resources = [
        (RF, "rf", flavor("cpu-flavor")),
        (CQ, "cq", cluster_queue(flavor_name="gpu-flavour")),
    ]
    [message] = check(rules.FLAVORS_EXIST, resources)
    assert '[clusterqueue-flavors-exist] ClusterQueue "gpu-cluster-queue"' in message
    assert "gpu-flavour" in message and "declared: cpu-flavor" in message
    assert "FlavorNotFound" in message and "preExistingFlavors" in message


def test_pre_existing_flavor_from_config_is_accepted():
    resources = [(CQ, "cq", cluster_queue())]
    assert check(rules.FLAVORS_EXIST, resources) != []
    assert check(rules.FLAVORS_EXIST, resources, {"preExistingFlavors": ["gpu-flavor"]}) == []


def test_unknown_flavor_names_wait_for_the_update():
    assert check(rules.FLAVORS_EXIST, [(CQ, "cq", cluster_queue(flavor_name=UNKNOWN))]) == []
    resources = [(RF, "rf", flavor(UNKNOWN)), (CQ, "cq", cluster_queue())]
    assert check(rules.FLAVORS_EXIST, resources) == []


# Rule 4 ---------------------------------------------------------------------------------


def test_seed_local_queue_points_at_its_cluster_queue():
    assert check(rules.CLUSTERQUEUE_EXISTS, seed_stack()) == []


def test_local_queue_pointing_at_missing_cluster_queue_is_rejected():
    resources = [
        (CQ, "cq", cluster_queue()),
        (LQ, "lq", local_queue(cluster_queue="gpu-clusterqueue")),
    ]
    [message] = check(rules.CLUSTERQUEUE_EXISTS, resources)
    assert (
        '[localqueue-clusterqueue-exists] LocalQueue "default/gpu-queue" (Pulumi resource "lq")'
        in message
    )
    assert '"gpu-clusterqueue"' in message and "declared: gpu-cluster-queue" in message
    assert "Fix: point spec.clusterQueue" in message


def test_local_queue_without_cluster_queue_is_rejected():
    [message] = check(rules.CLUSTERQUEUE_EXISTS, [(LQ, "lq", local_queue(cluster_queue=""))])
    assert "spec.clusterQueue is not set" in message


def test_pre_existing_cluster_queue_from_config_is_accepted():
    config = {"preExistingClusterQueues": ["gpu-cluster-queue"]}
    assert check(rules.CLUSTERQUEUE_EXISTS, [(LQ, "lq", local_queue())], config) == []


def test_unknown_references_wait_for_the_update():
    assert check(rules.CLUSTERQUEUE_EXISTS, [(LQ, "lq", local_queue(cluster_queue=UNKNOWN))]) == []
    resources = [(CQ, "cq", cluster_queue(name=UNKNOWN)), (LQ, "lq", local_queue())]
    assert check(rules.CLUSTERQUEUE_EXISTS, resources) == []


# Rule 6 ---------------------------------------------------------------------------------

SEED_CAPACITY = {"capacity": {"gpu-flavor": {"cpu": 64, "memory": "512Gi", "nvidia.com/gpu": 8}}}


def test_seed_quota_fits_its_capacity_exactly():
    assert check(rules.QUOTA_WITHIN_CAPACITY, seed_stack(), SEED_CAPACITY) == []


def test_no_capacity_configured_means_nothing_to_check():
    assert check(rules.QUOTA_WITHIN_CAPACITY, seed_stack()) == []


def test_quotas_summed_across_queues_above_capacity_are_rejected():
    team_a = ClusterQueue("team-a").quota("gpu-flavor", cpu=32, memory="256Gi", gpu=6).obj()
    team_b = ClusterQueue("team-b").quota("gpu-flavor", cpu=32, memory="256Gi", gpu=4).obj()
    [message] = check(
        rules.QUOTA_WITHIN_CAPACITY, [(CQ, "a", team_a), (CQ, "b", team_b)], SEED_CAPACITY
    )
    assert "nominal quotas of nvidia.com/gpu in flavor 'gpu-flavor'" in message
    assert "add up to 10 (ClusterQueue team-a 6, ClusterQueue team-b 4)" in message
    assert "above the declared capacity 8 (from the policy config)" in message
    assert "Fix:" in message


def test_units_are_compared_exactly():
    big = (
        ClusterQueue("gpu-cluster-queue")
        .quota("gpu-flavor", cpu="64001m", memory="549755813889", gpu=8)
        .obj()
    )
    messages = check(rules.QUOTA_WITHIN_CAPACITY, [(CQ, "cq", big)], SEED_CAPACITY)
    assert len(messages) == 2


def test_cohort_pool_quota_counts_too():
    pool = Cohort("research").quota("gpu-flavor", gpu=2).obj()
    [message] = check(
        rules.QUOTA_WITHIN_CAPACITY, [*seed_stack(), (COHORT, "pool", pool)], SEED_CAPACITY
    )
    assert "Cohort research 2" in message


def test_capacity_can_come_from_a_flavor_annotation():
    annotated = flavor(**{"gpu-queues.dev/capacity": json.dumps({"nvidia.com/gpu": 4})})
    resources = [(RF, "rf", annotated), (CQ, "cq", cluster_queue())]
    [message] = check(rules.QUOTA_WITHIN_CAPACITY, resources)
    assert (
        "above the declared capacity 4 "
        "(from ResourceFlavor gpu-flavor's gpu-queues.dev/capacity annotation)" in message
    )


def test_bad_capacity_config_is_reported():
    [message] = check(
        rules.QUOTA_WITHIN_CAPACITY, seed_stack(), {"capacity": {"gpu-flavor": {"cpu": "lots"}}}
    )
    assert "policy config: capacity.gpu-flavor.cpu" in message


def test_unknown_quota_waits_for_the_update():
    cq = (
        ClusterQueue("gpu-cluster-queue")
        .quota("gpu-flavor", cpu=64, memory="512Gi", gpu=UNKNOWN)
        .obj()
    )
    other = ClusterQueue("b").quota("gpu-flavor", cpu=1, memory="1Gi", gpu=8).obj()
    messages = check(rules.QUOTA_WITHIN_CAPACITY, [(CQ, "a", cq), (CQ, "b", other)], SEED_CAPACITY)
    assert all("nvidia.com/gpu" not in m for m in messages)
    assert len(messages) == 2  # cpu and memory are known and over
