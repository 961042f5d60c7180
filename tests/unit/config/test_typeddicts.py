"""The TypedDicts of the stack config keys (gpu_queues/config/stack_keys.py) are the config
models' JSON schema written as Python: generated, checked for staleness, key for key."""

from __future__ import annotations

import typing

import pytest

from gpu_queues.config import stack_keys, typeddicts
from gpu_queues.config.model import StackConfig

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("path", "style"),
    [(typeddicts.KEYS_PATH, typeddicts.KEYS), (typeddicts.COMPONENT_PATH, typeddicts.COMPONENT)],
    ids=["stack_keys", "component_inputs"],
)
def test_checked_in_typeddicts_are_not_stale(path, style):
    assert path.read_text(encoding="utf-8") == typeddicts.render(style), (
        f"{path.name} is stale: run `make schema`"
    )


@pytest.mark.parametrize(
    ("spec", "python"),
    [
        ({"anyOf": [{"type": "string"}, {"type": "number"}]}, "Any"),
        ({"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]}, "str | None"),
        ({"type": "array", "items": {"$ref": "#/$defs/Team"}}, "list[Team]"),
    ],
)
def test_the_component_flavor_writes_what_the_sdks_analyzer_reads(spec, python):
    """No Literal, no union but with None: Pulumi's component schema has neither."""
    assert typeddicts.annotation(spec, typeddicts.COMPONENT) == python


def test_every_model_has_its_typeddict_with_the_same_keys_and_required_ones():
    schema = StackConfig.model_json_schema(by_alias=True)
    models = {**schema.pop("$defs"), "StackConfig": schema}
    for name, spec in models.items():
        typed = getattr(stack_keys, name + typeddicts.SUFFIX)
        assert list(typing.get_type_hints(typed)) == list(spec["properties"]), name
        assert typed.__required_keys__ == frozenset(spec.get("required", [])), name


@pytest.mark.parametrize(
    ("spec", "python"),
    [
        ({"anyOf": [{"type": "string"}, {"type": "number"}]}, "str | float"),
        ({"type": "array", "items": {"$ref": "#/$defs/Team"}}, "list[TeamKeys]"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        (
            {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            'Literal["a", "b"] | None',
        ),
    ],
)
def test_a_json_schema_type_is_written_as_its_python_type(spec, python):
    assert typeddicts.annotation(spec) == python


def test_a_json_schema_type_without_a_python_one_is_an_error_not_any():
    with pytest.raises(ValueError, match="no Python type"):
        typeddicts.annotation({"type": "tuple"})
