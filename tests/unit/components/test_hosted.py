"""GpuQueues as a component package for other languages (issue 43, items 4 and 5): the schema
the SDK infers from the hosted component is the checked-in one, its inputs are the config
models' keys with their descriptions, its token is gpu-queues:index:GpuQueues, and a program
constructing it with those inputs gets the library's objects and checks."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pulumi
import pytest

from gpu_queues import ConfigError, keys
from gpu_queues.components import hosted
from gpu_queues.config.model import StackConfig
from tests.conftest import ROOT, MockRun, mocks_for
from tests.unit.test_library import two_teams

pytestmark = pytest.mark.unit

TOKEN = "gpu-queues:index:GpuQueues"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return hosted.schema()


def test_the_checked_in_component_schema_is_the_one_the_provider_serves():
    assert hosted.SCHEMA_PATH.read_text(encoding="utf-8") == hosted.render_schema(), (
        "package/schema.json is stale: run `make schema`"
    )


def test_the_check_command_fails_when_the_schema_is_stale(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(hosted, "SCHEMA_PATH", tmp_path / "schema.json")
    assert hosted.main(["--check"]) == 1 and "stale" in capsys.readouterr().err
    assert hosted.main(["--write"]) == 0 and hosted.main(["--check"]) == 0


def test_the_package_is_gpu_queues_at_the_projects_version(schema):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (schema["name"], schema["version"]) == (keys.PROJECT, project["version"])
    assert list(schema["resources"]) == [TOKEN]
    assert schema["resources"][TOKEN]["isComponent"] is True


def test_its_inputs_are_the_stack_config_keys_and_the_connection(schema):
    config = StackConfig.model_json_schema(by_alias=True)["properties"]
    inputs = schema["resources"][TOKEN]["inputProperties"]
    assert set(inputs) == (set(config) - {keys.KEY_KUBERNETES}) | {"kubeconfig", "context"}
    assert inputs["teams"]["items"]["$ref"] == "#/types/gpu-queues:index:Team"


def test_every_key_carries_its_description_from_the_config_models(schema):
    """One model: a description written once in gpu_queues/config is what an editor shows a
    YAML, TypeScript or Go user (an enum's allowed values added after it)."""
    models = StackConfig.model_json_schema(by_alias=True)["$defs"]
    types = schema["types"]
    described = 0
    for name, spec in models.items():
        if name == "KubernetesConfig":
            continue
        component = types[f"gpu-queues:index:{name}"]["properties"]
        assert set(component) == set(spec["properties"]), name
        for key, prop in spec["properties"].items():
            if prop.get("description"):
                described += 1
                shown = component[key].get("description", "")
                assert shown.startswith(" ".join(prop["description"].split())), (name, key)
    assert described > 50


def test_its_outputs_are_the_typed_attributes(schema):
    outputs = schema["resources"][TOKEN]["properties"]
    assert set(outputs) >= {"kueueVersion", "localQueues", "clusterQueues", "namespaces"}
    assert outputs["localQueues"]["additionalProperties"] == {"type": "string"}
    assert "outputs" not in outputs


def _construct(inputs: dict[str, Any]) -> MockRun:
    run = MockRun()
    pulumi.runtime.set_mocks(mocks_for(run), project="yaml-user", stack="s", preview=True)
    pulumi.runtime.set_all_config({}, [])

    def program() -> None:
        hosted.GpuQueues("ml-queues", inputs, None)  # type: ignore[arg-type]

    pulumi.runtime.test(program)()
    return run


def test_constructed_from_its_inputs_it_builds_the_librarys_objects_under_its_token():
    run = _construct({**two_teams(), "kubeconfig": "apiVersion: v1"})
    assert [r.typ for r in run.resources if r.name == "ml-queues"] == [TOKEN]
    kinds = [r.inputs.get("kind") for r in run.resources if r.typ.startswith("kubernetes:")]
    assert kinds.count("ClusterQueue") == 2 and kinds.count("LocalQueue") == 2


def _as_doubles(value: Any) -> Any:
    """The inputs as another language's program sends them: every number a double."""
    if isinstance(value, bool) or not isinstance(value, int | dict | list):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _as_doubles(v) for k, v in value.items()}
    return [_as_doubles(v) for v in value]


def test_whole_numbers_sent_as_doubles_render_as_a_python_programs_do():
    """`nominalQuota: 8` in YAML reaches the provider as 8.0; the ClusterQueue says "8", as a
    Python program's does, not the quantity "8.0"."""

    def quotas(run: MockRun) -> list[Any]:
        return [
            [r["nominalQuota"] for g in res.inputs["spec"]["resourceGroups"]
             for f in g["flavors"] for r in f["resources"]]
            for res in run.resources if res.inputs.get("kind") == "ClusterQueue"
        ]  # fmt: skip

    sent = _construct({**_as_doubles(two_teams()), "kubeconfig": "apiVersion: v1"})
    native = _construct({**two_teams(), "kubeconfig": "apiVersion: v1"})
    assert quotas(sent) == quotas(native) and "4" in str(quotas(sent))
    assert "4.0" not in str(quotas(sent))


def test_a_bad_config_fails_the_construction_naming_each_key():
    bad = json.loads(json.dumps(two_teams()))
    bad["teams"][0]["clusterQueu"] = bad["teams"][0].pop("clusterQueue")
    with pytest.raises(ConfigError) as raised:
        _construct({**bad, "kubeconfig": "apiVersion: v1"})
    assert "teams[0].clusterQueu" in str(raised.value)
    assert "teams[0].clusterQueue" in str(raised.value)


def test_the_provider_sends_a_bad_config_back_as_the_inputs_it_is_about():
    """The SDK would report the ConfigError with its Python traceback; the provider answers
    with one input property error per problem, at the component's input path."""
    from pulumi.errors import InputPropertiesError

    bad = json.loads(json.dumps(two_teams()))
    bad["teams"][0]["namespace"] = "Team_Vision"
    raised: list[InputPropertiesError] = []

    def program() -> None:
        try:
            hosted.provider().construct("q", TOKEN, {**bad, "kubeconfig": "apiVersion: v1"})
        except InputPropertiesError as error:
            raised.append(error)

    pulumi.runtime.set_mocks(mocks_for(MockRun()), project="yaml-user", stack="s", preview=True)
    pulumi.runtime.test(program)()
    (error,) = raised
    assert error.errors and [e["property_path"] for e in error.errors] == ["teams[0].namespace"]
    assert "not a valid Kubernetes name" in error.errors[0]["reason"]
    assert "Traceback" not in error.message and "invalid config (1 problem(s))" in error.message
