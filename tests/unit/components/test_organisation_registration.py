"""The worked organisation (docs/examples/organisation) registered under Pulumi mocks: a Cohort
per node of the tree, each team's namespaces, LocalQueues and submit RBAC in every namespace."""

from __future__ import annotations

import pytest

from gpu_queues import keys
from gpu_queues.config.model import load_config
from tests.conftest import MockRun, _test_manifest, run_stack, stack_raw, without_tree
from tests.unit.config.test_organisation import example

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def org_run() -> MockRun:
    return run_stack(load_config(example()), _test_manifest())


def test_every_cohort_of_the_tree_is_registered_with_its_parent(org_run: MockRun) -> None:
    cohorts = {r.inputs["metadata"]["name"]: r for r in org_run.of_kind("Cohort")}
    assert sorted(cohorts) == ["acme", "platform", "product", "research"]
    assert cohorts["research"].inputs["spec"]["parentName"] == "acme"
    assert cohorts["research"].inputs["spec"]["fairSharing"] == {"weight": "2"}
    assert org_run.outputs[keys.OUT_COHORTS] == {
        "acme": None,
        "research": "acme",
        "product": "acme",
        "platform": "acme",
    }


def test_each_namespace_of_a_team_is_created_with_a_queue_and_submit_rbac(
    org_run: MockRun,
) -> None:
    names = {r.inputs["metadata"]["name"] for r in org_run.of_kind("Namespace")}
    assert {"llm-train", "llm-eval", "data-train", "data-eval"} <= names
    roles = {
        r.inputs["metadata"]["namespace"]
        for r in org_run.of_kind("RoleBinding")
        if r.inputs["metadata"]["name"] == "gpu-queues-submit"
    }
    assert {"llm-train", "llm-eval"} <= roles
    binding = next(
        r for r in org_run.of_kind("RoleBinding") if r.inputs["metadata"]["namespace"] == "llm-eval"
    )
    assert binding.inputs["subjects"][0]["name"] == "llm-engineers"
    queues = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in org_run.of_kind("LocalQueue")
        if r.inputs["spec"]["clusterQueue"] == "llm-cq"
    }
    assert queues == {("llm-train", "training"), ("llm-eval", "evaluation")}
    assert org_run.outputs[keys.OUT_TEAM_LOCAL_QUEUES]["llm"] == [
        "llm-train/training",
        "llm-eval/evaluation",
    ]
    assert org_run.outputs[keys.OUT_LOCAL_QUEUES]["llm"] == "llm-train/training"


def test_a_stack_without_a_tree_has_no_tree_outputs() -> None:
    flat = run_stack(load_config(without_tree(stack_raw("prod"))), _test_manifest())
    assert flat.outputs[keys.OUT_COHORT] == "gpu-pool"
    assert keys.OUT_COHORTS not in flat.outputs
    assert keys.OUT_TEAM_LOCAL_QUEUES not in flat.outputs


def test_prods_divisions_hang_under_its_one_cohort_root(prod_run: MockRun) -> None:
    assert prod_run.outputs[keys.OUT_COHORT] == "gpu-pool"
    assert prod_run.outputs[keys.OUT_COHORTS] == {
        "research-division": "gpu-pool",
        "product-division": "gpu-pool",
        "reserve": "gpu-pool",
    }
    assert keys.OUT_TEAM_LOCAL_QUEUES not in prod_run.outputs  # one queue per team
