"""The checked-in JSON schema of the stack config matches the models."""

from __future__ import annotations

import json

import pytest

from gpu_queues.config import schema

pytestmark = pytest.mark.unit


def test_checked_in_schema_is_not_stale():
    assert schema.SCHEMA_PATH.exists(), "run `make schema`"
    assert schema.SCHEMA_PATH.read_text(encoding="utf-8") == schema.render(), (
        "schema/stack-config.schema.json is stale: run `make schema`"
    )


def test_schema_check_command_fails_when_stale(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "stack-config.schema.json"
    stale.write_text("{}\n")
    monkeypatch.setattr(schema, "SCHEMA_PATH", stale)
    monkeypatch.setattr(schema, "REFERENCE_PATH", tmp_path / "config-reference.md")
    monkeypatch.setattr(schema.typeddicts, "KEYS_PATH", tmp_path / "stack_keys.py")
    monkeypatch.setattr(schema.typeddicts, "COMPONENT_PATH", tmp_path / "component_inputs.py")
    assert schema.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert schema.main(["--write"]) == 0
    assert schema.main(["--check"]) == 0


def test_schema_describes_the_project_keys():
    props = json.loads(schema.render())["properties"]["config"]["properties"]
    assert set(props) == {
        "gpu-queues:kubernetes",
        "gpu-queues:kueue",
        "gpu-queues:flavors",
        "gpu-queues:cohort",
        "gpu-queues:cohorts",
        "gpu-queues:teams",
        "gpu-queues:sharedStorage",
        "gpu-queues:multiKueue",
        "gpu-queues:priorityClasses",
        "gpu-queues:topologies",
        "gpu-queues:provisioning",
    }


def test_checked_in_config_reference_is_not_stale():
    assert schema.REFERENCE_PATH.read_text(encoding="utf-8") == schema.render_reference(), (
        "docs/config-reference.md is stale: run `make schema`"
    )


def test_config_reference_documents_every_model_and_key():
    text = schema.render_reference()
    for name, spec in json.loads(schema.render())["$defs"].items():
        assert f"## {name}" in text
        for key in spec.get("properties", {}):
            assert f"| `{key}` |" in text, f"{name}.{key} missing from the reference"
