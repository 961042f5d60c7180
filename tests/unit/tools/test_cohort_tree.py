"""quota-diff's cohort tree (gpu_queues/tools/cohort_tree.py): per node its parent, weight and
own GPU quota, old against new, as a table and as a Mermaid tree the pinned Mermaid draws."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.tools import quota_diff
from gpu_queues.whatif.charts import mermaid_blocks
from tests.conftest import stack_raw, without_tree
from tests.unit.config.test_organisation import example
from tests.unit.whatif.test_charts_render import mermaid_render

pytestmark = pytest.mark.unit


def diff(old: dict[str, Any], new: dict[str, Any], changes_only: bool = False) -> str:
    before = quota_diff.side_from_raw("org@main", old)
    after = quota_diff.side_from_raw("org", new)
    assert before.problems == after.problems == ()
    return quota_diff.render(before, after, changes_only)


def changed() -> dict[str, Any]:
    """The worked example with research's weight 2 -> 3, vision's GPUs 8 -> 6, a new team."""
    new = example()
    new["cohorts"][1]["fairSharing"] = {"weight": 3}
    gpus = new["teams"][1]["resourceGroups"][0]["flavors"][0]["resources"]["nvidia.com/gpu"]
    gpus["nominalQuota"] = 6
    extra = copy.deepcopy(new["teams"][5])
    extra.update(name="ml", clusterQueue="ml-cq", namespaces=["ml-train", "ml-eval"])
    extra["localQueues"] = [{"name": "training", "namespace": "ml-train"}]
    extra["resourceGroups"][0]["flavors"][0]["resources"]["nvidia.com/gpu"]["nominalQuota"] = 2
    del extra["submitters"]
    new["teams"].append(extra)
    return new


def test_the_tree_table_shows_each_nodes_parent_weight_and_gpus_old_against_new() -> None:
    text = diff(example(), changed(), changes_only=True)
    table = text.split("#### Cohort tree\n\n", 1)[1].split("\n\n", 1)[0]
    assert table.splitlines() == [
        "| Node | Parent | Weight | GPU quota | Nominal | Borrowing limit | Lending limit "
        "| Change |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | --- |",
        "| research | acme | 2 → **3** | h100 nvidia.com/gpu | 8 | - | 4 | changed |",
        "| team vision | research | - | h100 nvidia.com/gpu | 8 → **6** | 16 | - | changed |",
        "| team ml | platform | - | h100 nvidia.com/gpu | 2 | 16 | - | added |",
    ]
    # The capacity sum counts the cohorts' own quota: 6 teams x 8 + 8 + 8 = 64, now 64 - 2 + 2.
    assert "| h100 | nvidia.com/gpu | 64 | 64 | ok |" in text


def test_the_tree_is_drawn_with_its_changes() -> None:
    [tree] = mermaid_blocks(diff(example(), changed()))
    lines = tree.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n1["research · weight 2 → 3 · 8 GPUs"]' in lines
    assert '    n5("team vision · 8 → 6 GPUs")' in lines
    assert '    n8("team infra · weight 0 · 8 GPUs")' in lines
    assert "    n0 --> n1" in lines and "    n3 --> n10" in lines


def test_the_pinned_mermaid_draws_the_tree() -> None:
    [tree] = mermaid_blocks(diff(example(), changed()))
    [result] = mermaid_render([tree])
    assert result["ok"], result.get("error")
    assert result["type"] == "flowchart-v2"
    assert "research · weight 2 → 3 · 8 GPUs" in result["svg"]
    [broken] = mermaid_render([tree.replace("-->", "-=>", 1)])
    assert not broken["ok"]


def test_a_stack_without_a_tree_has_no_tree_section() -> None:
    flat = without_tree(stack_raw("prod"))  # one cohort, gpu-pool
    assert "Cohort tree" not in diff(flat, flat)
    prod = stack_raw("prod")  # its divisions under gpu-pool
    assert "Cohort tree" in diff(prod, prod)
    assert "No change in the cohort tree." in diff(example(), example(), changes_only=True)


def test_the_tree_in_docs_organisations_is_one_mermaid_draws() -> None:
    doc = Path(__file__).resolve().parents[3] / "docs" / "organisations.md"
    blocks = mermaid_blocks(doc.read_text())
    assert blocks
    assert all(result["ok"] for result in mermaid_render(blocks))
