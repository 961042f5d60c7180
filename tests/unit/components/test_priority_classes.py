"""WorkloadPriorityClasses in the stack config: validated, rendered and registered."""

from __future__ import annotations

import pytest

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.model import ConfigError, load_config
from tests.conftest import MANIFEST, run_stack, stack_raw

pytestmark = pytest.mark.unit

CLASSES = [
    {"name": "batch-low", "value": 10, "description": "preemptible sweeps"},
    {"name": "prod-training", "value": 1000},
]


def test_priority_classes_are_registered_as_workload_priority_classes() -> None:
    from gpu_queues.release.manifest import parse_manifest

    raw = stack_raw("prod") | {keys.KEY_PRIORITY_CLASSES: CLASSES}
    run = run_stack(load_config(raw), parse_manifest(MANIFEST.read_bytes(), str(MANIFEST)))
    low = run.one("WorkloadPriorityClass", "batch-low")
    assert low.typ == "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"
    assert low.inputs["value"] == 10 and low.inputs["description"] == "preemptible sweeps"
    assert "spec" not in low.inputs
    high = run.one("WorkloadPriorityClass", "prod-training")
    assert high.inputs["value"] == 1000 and "description" not in high.inputs
    assert run.outputs[keys.OUT_PRIORITY_CLASSES] == {"batch-low": 10, "prod-training": 1000}


def test_a_stack_without_priority_classes_registers_none(prod_run) -> None:
    assert prod_run.of_kind("WorkloadPriorityClass") == []
    assert prod_run.outputs[keys.OUT_PRIORITY_CLASSES] == {}


def test_render_keeps_value_at_the_top_level() -> None:
    obj = render.workload_priority_class({"name": "urgent", "value": -5})
    assert obj == {
        "apiVersion": keys.KUEUE_API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "urgent", "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}},
        "value": -5,
    }
    kinds = [o["kind"] for o in render.kueue_objects({keys.KEY_PRIORITY_CLASSES: CLASSES})]
    assert kinds == ["WorkloadPriorityClass", "WorkloadPriorityClass"]


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        ({"name": "x", "value": 2**31}, "priorityClasses[0].value", "less than or equal"),
        ({"name": "x", "value": -(2**31) - 1}, "priorityClasses[0].value", "greater than"),
        ({"name": "Not_A_Name", "value": 1}, "priorityClasses[0].name", ""),
        ({"name": "x"}, "priorityClasses[0].value", "required"),
        ({"name": "x", "value": 1, "valu": 2}, "priorityClasses[0].valu", ""),
    ],
)
def test_bad_priority_classes_are_refused_with_their_key(
    entry: dict[str, object], key: str, words: str
) -> None:
    raw = stack_raw("dev") | {keys.KEY_PRIORITY_CLASSES: [entry]}
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    text = str(caught.value)
    assert key in text, text
    assert words in text


def test_two_priority_classes_with_one_name_are_refused() -> None:
    raw = stack_raw("dev") | {
        keys.KEY_PRIORITY_CLASSES: [{"name": "a", "value": 1}, {"name": "a", "value": 2}]
    }
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    assert "priorityClasses[1].name" in str(caught.value)
    assert "duplicate priority class name 'a'" in str(caught.value)
