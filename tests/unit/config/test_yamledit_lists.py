"""The YAML editor (gpu_queues.config.yamledit) through list items: a key inside an item of a
block list is edited in place like any other, every other byte kept; an item itself is never
added, removed or replaced."""

from __future__ import annotations

import difflib

import pytest

from gpu_queues.config import yamledit

pytestmark = pytest.mark.unit

TEXT = """\
config:
  gpu-queues:teams:
  # the research team
  - name: research
    resourceGroups:
    - flavors:
      - name: h100   # four nodes
        resources:
          nvidia.com/gpu: {nominalQuota: 16, lendingLimit: 8}
          cpu:
            nominalQuota: 64   # per node
  - name: vision
    cohort: pool
"""
TEAMS = ("config", "gpu-queues:teams")
GPU = (*TEAMS, 0, "resourceGroups", 0, "flavors", 0, "resources", "nvidia.com/gpu")


def changed(old: str, new: str) -> list[str]:
    return [
        line
        for line in difflib.ndiff(old.splitlines(), new.splitlines())
        if line[:1] in "+-" and line[1:2] == " "
    ]


def test_a_key_in_a_flow_mapping_inside_list_items_rewrites_that_entry_only():
    new = yamledit.edit(TEXT, {(*GPU, "nominalQuota"): 20, (*GPU, "lendingLimit"): yamledit.REMOVE})
    assert changed(TEXT, new) == [
        "-           nvidia.com/gpu: {nominalQuota: 16, lendingLimit: 8}",
        "+           nvidia.com/gpu: {nominalQuota: 20}",
    ]


def test_block_keys_in_items_keep_their_comments_and_a_removal_stops_at_the_item():
    cpu = (*GPU[:-1], "cpu", "nominalQuota")
    new = yamledit.edit(TEXT, {cpu: 32, (*TEAMS, 1, "cohort"): yamledit.REMOVE})
    assert changed(TEXT, new) == [
        "-             nominalQuota: 64   # per node",
        "+             nominalQuota: 32   # per node",
        "-     cohort: pool",
    ]
    assert "  - name: vision\n" in new and "# the research team" in new
    added = yamledit.edit(TEXT, {(*TEAMS, 0, "cohort"): "pool"})
    assert changed(TEXT, added) == ["+     cohort: pool"]


def test_an_item_itself_or_one_past_the_end_is_refused():
    with pytest.raises(yamledit.EditError, match=r"list item"):
        yamledit.edit(TEXT, {(*TEAMS, 1): {"name": "x"}})
    with pytest.raises(yamledit.EditError, match=r"no item 5"):
        yamledit.edit(TEXT, {(*TEAMS, 5, "name"): "x"})


def test_get_reads_through_list_items():
    import yaml

    doc = yaml.safe_load(TEXT)
    assert yamledit.get(doc, (*GPU, "nominalQuota")) == 16
    assert yamledit.get(doc, (*TEAMS, 7, "name")) is yamledit.REMOVE
