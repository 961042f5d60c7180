"""The stack config's keys as TypedDicts, generated from the config models' JSON schema.

A program of one's own writes its config as the keys a stack file holds (camelCase) and hands
them to GpuQueuesArgs.from_config; typed as `StackConfigKeys`, a misspelt key or a value of
the wrong type is an error in mypy and pyright before anything runs, and the runtime checks
(gpu_queues.config.model.load_config) read the same keys. The classes are written out to
gpu_queues/config/stack_keys.py (a type checker reads source, not a generator) by `make
schema`, whose `--check` (and tests/unit/config/test_typeddicts.py) fails when they are stale.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.config.model import StackConfig

KEYS_PATH = Path(__file__).resolve().parent / "stack_keys.py"
COMPONENT_PATH = Path(__file__).resolve().parent / "component_inputs.py"
SUFFIX = "Keys"

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


@dataclass(frozen=True)
class Style:
    """How the schema is written: for type checkers (stack_keys.py: Literal values, unions,
    `Keys` names) or for Pulumi's component schema (component_inputs.py: the SDK's analyzer
    reads neither Literal nor unions, so an enum is a string whose description lists its
    values, and a value of several types is Any; names are the models')."""

    suffix: str
    component: bool


KEYS = Style(SUFFIX, component=False)
COMPONENT = Style("", component=True)


def _name(ref: str, style: Style = KEYS) -> str:
    return ref.rsplit("/", 1)[-1] + style.suffix


def annotation(spec: dict[str, Any], style: Style = KEYS) -> str:
    """The Python type of one JSON schema property (the subset pydantic writes here)."""
    if "$ref" in spec:
        return _name(str(spec["$ref"]), style)
    if "anyOf" in spec:
        kinds = list(dict.fromkeys(annotation(s, style) for s in spec["anyOf"]))
        if style.component and len([k for k in kinds if k != "None"]) > 1:
            return "Any"
        return " | ".join(kinds)
    if "enum" in spec or "const" in spec:
        if style.component:
            return _SCALARS[spec.get("type", "string")]
        values = spec["enum"] if "enum" in spec else [spec["const"]]
        return "Literal[" + ", ".join(json.dumps(v) for v in values) + "]"
    kind = spec.get("type")
    if isinstance(kind, list):
        if style.component:
            return "Any"
        return " | ".join(annotation({**spec, "type": k}, style) for k in kind)
    if kind == "array":
        return f"list[{annotation(spec.get('items', {}), style)}]"
    if kind == "object":
        extra = spec.get("additionalProperties")
        if isinstance(extra, dict):
            return f"dict[str, {annotation(extra, style)}]"
        patterns = list((spec.get("patternProperties") or {}).values())
        if len(patterns) == 1:
            return f"dict[str, {annotation(patterns[0], style)}]"
        return "dict[str, Any]"
    if kind in _SCALARS:
        return _SCALARS[kind]
    raise ValueError(f"no Python type for the JSON schema {spec!r}")


def _values(spec: dict[str, Any]) -> list[Any]:
    """The values an enum property allows (under anyOf, arrays or maps too)."""
    found = list(spec.get("enum", [])) + ([spec["const"]] if "const" in spec else [])
    for inner in [*spec.get("anyOf", []), spec.get("items"), spec.get("additionalProperties")]:
        if isinstance(inner, dict):
            found += _values(inner)
    return found


def _docstring(text: str, indent: str, wrap: bool = True) -> list[str]:
    """A docstring, wrapped for the reader of stack_keys.py; on one line for the component's
    (the SDK's analyzer keeps a docstring's line breaks and indents in the description)."""
    body = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if not wrap:
        return [f'{indent}"""{body}"""']
    lines = textwrap.wrap(f'"""{body}"""', 100 - len(indent), break_on_hyphens=False)
    return [indent + line for line in lines]


def _typed_dict(name: str, spec: dict[str, Any], style: Style = KEYS) -> list[str]:
    required = set(spec.get("required", []))
    model = name[: len(name) - len(style.suffix)]
    lines = [f"class {name}(TypedDict, total=False):"]
    lines += _docstring(
        spec.get("description") or f"The keys of {model}.", "    ", not style.component
    )
    lines.append("")
    for key, prop in spec.get("properties", {}).items():
        if not key.isidentifier():
            raise ValueError(f"{name}: key {key!r} cannot be a TypedDict field")
        kind = annotation(prop, style)
        lines.append(f"    {key}: Required[{kind}]" if key in required else f"    {key}: {kind}")
        text = str(prop.get("description") or "")
        if style.component and _values(prop):
            allowed = ", ".join(json.dumps(v) for v in _values(prop))
            text = f"{text} (one of {allowed})" if text else f"One of {allowed}."
        if text:
            lines += _docstring(text, "    ", not style.component)
    return lines


def _in_order(defs: dict[str, Any]) -> list[str]:
    """The models, each after those it refers to (alphabetical otherwise): the classes are
    evaluated at import, and TypedDict reads `Required` only from evaluated annotations."""
    refs = {
        name: {r.rsplit("/", 1)[-1] for r in _refs(spec)} - {name} for name, spec in defs.items()
    }
    done: list[str] = []
    while len(done) < len(defs):
        ready = sorted(n for n in defs if n not in done and refs[n] <= set(done))
        if not ready:
            raise ValueError(
                f"the config models refer to each other: {sorted(set(defs) - set(done))}"
            )
        done.append(ready[0])
    return done


def _refs(spec: Any) -> list[str]:
    if isinstance(spec, dict):
        own = [str(spec["$ref"])] if "$ref" in spec else []
        return own + [r for value in spec.values() for r in _refs(value)]
    if isinstance(spec, list):
        return [r for value in spec for r in _refs(value)]
    return []


HEADS = {
    KEYS: (
        "The stack config keys as TypedDicts (camelCase, as Pulumi.<stack>.yaml holds them).",
        "Hand a StackConfigKeys to GpuQueuesArgs.from_config.",
    ),
    COMPONENT: (
        "The stack config as the inputs of the multi-language GpuQueues component.",
        "The SDK's analyzer reads them into the component schema (gpu_queues/components/"
        "hosted.py); the connection is the component's own kubeconfig and context inputs.",
    ),
}


def render(style: Style = KEYS) -> str:
    """One TypedDict per config model, each after those it names, then StackConfig (the whole
    config): stack_keys.py (KEYS) or component_inputs.py (COMPONENT)."""
    schema = StackConfig.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = schema.pop("$defs", {})
    if style.component:  # the component's kubeconfig and context are inputs of their own
        del schema["properties"][keys.KEY_KUBERNETES], defs["KubernetesConfig"]
    names = sorted([*(n + style.suffix for n in defs), "StackConfig" + style.suffix])
    title, use = HEADS[style]
    out = [
        f'"""{title}',
        "",
        "Generated from the config models by `make schema` (gpu_queues/config/typeddicts.py);",
        *textwrap.wrap(f'do not edit. {use}"""', 100),
        "",
        "IMPORTS",
        "",
        "__all__ = [",
        *(f'    "{n}",' for n in names),
        "]",
    ]
    for name in _in_order(defs):
        out += ["", "", *_typed_dict(name + style.suffix, defs[name], style)]
    schema["description"] = "The whole stack config: the keys under `gpu-queues:`."
    out += ["", "", *_typed_dict("StackConfig" + style.suffix, schema, style)]
    text = "\n".join(out) + "\n"
    used = [n for n in ("Any", "Literal") if re.search(rf"[:\[] ?{n}\b", text)]
    imports = ", ".join([*used, "Required", "TypedDict"])
    return text.replace("IMPORTS", f"from typing import {imports}")
