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
import textwrap
from pathlib import Path
from typing import Any

from gpu_queues.config.model import StackConfig

KEYS_PATH = Path(__file__).resolve().parent / "stack_keys.py"
SUFFIX = "Keys"

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1] + SUFFIX


def annotation(spec: dict[str, Any]) -> str:
    """The Python type of one JSON schema property (the subset pydantic writes here)."""
    if "$ref" in spec:
        return _name(str(spec["$ref"]))
    if "anyOf" in spec:
        return " | ".join(dict.fromkeys(annotation(s) for s in spec["anyOf"]))
    if "enum" in spec:
        return "Literal[" + ", ".join(json.dumps(v) for v in spec["enum"]) + "]"
    if "const" in spec:
        return f"Literal[{json.dumps(spec['const'])}]"
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(annotation({**spec, "type": k}) for k in kind)
    if kind == "array":
        return f"list[{annotation(spec.get('items', {}))}]"
    if kind == "object":
        extra = spec.get("additionalProperties")
        if isinstance(extra, dict):
            return f"dict[str, {annotation(extra)}]"
        patterns = list((spec.get("patternProperties") or {}).values())
        if len(patterns) == 1:
            return f"dict[str, {annotation(patterns[0])}]"
        return "dict[str, Any]"
    if kind in _SCALARS:
        return _SCALARS[kind]
    raise ValueError(f"no Python type for the JSON schema {spec!r}")


def _docstring(text: str, indent: str) -> list[str]:
    body = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = textwrap.wrap(f'"""{body}"""', 100 - len(indent), break_on_hyphens=False)
    return [indent + line for line in lines]


def _typed_dict(name: str, spec: dict[str, Any]) -> list[str]:
    required = set(spec.get("required", []))
    lines = [f"class {name}(TypedDict, total=False):"]
    lines += _docstring(spec.get("description") or f"The keys of {name[: -len(SUFFIX)]}.", "    ")
    lines.append("")
    for key, prop in spec.get("properties", {}).items():
        if not key.isidentifier():
            raise ValueError(f"{name}: key {key!r} cannot be a TypedDict field")
        kind = annotation(prop)
        lines.append(f"    {key}: Required[{kind}]" if key in required else f"    {key}: {kind}")
        if prop.get("description"):
            lines += _docstring(str(prop["description"]), "    ")
    return lines


def _in_order(defs: dict[str, Any]) -> list[str]:
    """The models, each after those it refers to (alphabetical otherwise): the classes are
    evaluated at import, and TypedDict reads `Required` only from evaluated annotations."""
    refs = {
        name: {_name(r)[: -len(SUFFIX)] for r in _refs(spec)} - {name}
        for name, spec in defs.items()
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


def render() -> str:
    """stack_keys.py: one TypedDict per config model, then StackConfigKeys (the whole config)."""
    schema = StackConfig.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = schema.pop("$defs", {})
    out = [
        '"""The stack config keys as TypedDicts (camelCase, as Pulumi.<stack>.yaml holds them).',
        "",
        "Generated from the config models by `make schema` (gpu_queues/config/typeddicts.py);",
        'do not edit. Hand a StackConfigKeys to GpuQueuesArgs.from_config."""',
        "",
        "IMPORTS",
        "",
        "__all__ = [",
        *(f'    "{n}",' for n in sorted([*(n + SUFFIX for n in defs), "StackConfig" + SUFFIX])),
        "]",
    ]
    for name in _in_order(defs):
        out += ["", "", *_typed_dict(name + SUFFIX, defs[name])]
    schema["description"] = "The whole stack config: the keys under `gpu-queues:`."
    out += ["", "", *_typed_dict("StackConfig" + SUFFIX, schema)]
    text = "\n".join(out) + "\n"
    used = [n for n in ("Any", "Literal") if f"{n}[" in text or f", {n}]" in text]
    names = ", ".join([*used, "Required", "TypedDict"])
    return text.replace("IMPORTS", f"from typing import {names}")
