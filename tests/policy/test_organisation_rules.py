"""The pack's rules on an organisation's objects (docs/organisations.md): the Cohort tree,
Cohorts' own quota and weights, LocalQueues' weights and namespaces. The same functions of
gpu_queues/kueue/ the stack config check runs; here on the objects the program renders."""

from __future__ import annotations

from typing import Any

import pytest
from policy_harness import COHORT, CQ, LQ, RF, resource_args, run_policy, stack_args

from gpu_queues.config import render
from gpu_queues.config.model import load_config
from policies import rules
from tests.unit.config.test_organisation import example

pytestmark = pytest.mark.policy

KINDS = {"Cohort": COHORT, "ClusterQueue": CQ, "LocalQueue": LQ, "ResourceFlavor": RF}


def rendered() -> list[tuple[str, str, dict[str, Any]]]:
    """The worked example's Kueue objects, as the program registers them."""
    objects = render.kueue_objects(load_config(example()))
    return [
        (
            KINDS[o["kind"]],
            f"{o['kind']}-{o['metadata'].get('namespace')}-{o['metadata']['name']}",
            o,
        )
        for o in objects
        if o["kind"] in KINDS
    ]


def check(
    rule: str, resources: list[tuple[str, str, dict[str, Any]]], config: Any = None
) -> list[str]:
    return run_policy(rule, stack_args(resources, config))


def cohort(name: str, parent: str | None = None, **spec: Any) -> tuple[str, str, dict[str, Any]]:
    body = {**({"parentName": parent} if parent else {}), **spec}
    return (
        COHORT,
        name,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Cohort",
            "metadata": {"name": name},
            "spec": body,
        },
    )


def test_the_worked_example_passes_every_rule_of_the_pack() -> None:
    resources = rendered()
    for spec in (
        rules.COHORT_TREE_VALID,
        rules.LOCALQUEUE_NAMESPACE_SELECTED,
        rules.FLAVORS_EXIST,
        rules.QUOTA_WITHIN_CAPACITY,
        rules.CLUSTERQUEUE_EXISTS,
    ):
        assert check(spec, resources) == [], spec
    for type_, name, props in resources:
        for rule in (
            rules.COHORT_WEBHOOK_VALID,
            rules.LOCALQUEUE_WEBHOOK_VALID,
            rules.WEBHOOK_VALID,
            rules.WHOLE_EXTENDED_RESOURCES,
        ):
            assert run_policy(rule, resource_args(type_, props, name)) == [], (rule, name)


def test_a_cycle_and_a_stranger_parent_are_violations() -> None:
    resources = [cohort("a", "b"), cohort("b", "a"), cohort("leaf", "missing")]
    messages = check(rules.COHORT_TREE_VALID, resources)
    assert len(messages) == 3
    assert messages[0].startswith(
        '[cohort-tree-valid] Cohort "a" (Pulumi resource "a"): '
        "spec.parentName: the cohorts form a cycle (a -> b -> a)"
    )
    assert "parent 'missing' is not a declared cohort" in messages[2]
    assert "preExistingCohorts" in messages[2]
    assert len(check(rules.COHORT_TREE_VALID, resources, {"preExistingCohorts": ["missing"]})) == 2


def test_a_tree_over_the_hardware_is_a_capacity_violation() -> None:
    resources = rendered()
    root = next(r for r in resources if r[0] == COHORT and r[1] == "Cohort-None-acme")
    root[2]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "9"
    [message] = check(rules.QUOTA_WITHIN_CAPACITY, resources)
    assert "add up to 65" in message and "Cohort acme 9" in message
    assert "above the declared capacity 64" in message


def test_a_local_queue_outside_its_cluster_queues_namespaces_is_a_violation() -> None:
    resources = rendered()
    lq = next(r for r in resources if r[0] == LQ and r[2]["metadata"]["namespace"] == "llm-eval")
    lq[2]["metadata"]["namespace"] = "vision-eval"
    [message] = check(rules.LOCALQUEUE_NAMESPACE_SELECTED, resources)
    assert message.startswith('[localqueue-namespace-selected] LocalQueue "vision-eval/evaluation"')
    assert "not selected by ClusterQueue 'llm-cq'" in message


def test_cohort_and_local_queue_fields_kueue_would_refuse() -> None:
    _, _, bad = cohort(
        "root",
        fairSharing={"weight": "-1"},
        resourceGroups=[
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": [
                            {"name": "nvidia.com/gpu", "nominalQuota": "1.5", "borrowingLimit": "1"}
                        ],
                    }
                ],
            }
        ],
    )
    messages = run_policy(rules.COHORT_WEBHOOK_VALID, resource_args(COHORT, bad))
    assert any("spec.fairSharing.weight: weight is -1, which is negative" in m for m in messages)
    assert any("borrowingLimit needs a parent cohort" in m for m in messages)
    [whole] = run_policy(rules.WHOLE_EXTENDED_RESOURCES, resource_args(COHORT, bad))
    assert "nominalQuota" in whole
    [missing] = check(rules.FLAVORS_EXIST, [(COHORT, "root", bad)])
    assert "flavor 'h100' is not declared" in missing
    lq = {
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "ns"},
        "spec": {"clusterQueue": "cq", "fairSharing": {"weight": "1n"}},
    }
    [weight] = run_policy(rules.LOCALQUEUE_WEBHOOK_VALID, resource_args(LQ, lq))
    assert "which Kueue cannot tell from zero" in weight
