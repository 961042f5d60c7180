"""The policy pack (policies/) run in this process on the Kueue objects a candidate renders
(gpu_queues.config.render.kueue_objects, the objects the program registers), with the pack
config the stack's previews use (gpu_queues.tools.policy_configs.policy_config): each rule's
defaults from its config schema, the file's settings over them, its enforcement level.

The advisor changes only queue settings, so the rules that read its candidates are the ones
on Kueue objects; the rules on the Kueue release, PVCs and Jobs see nothing the advisor
changes, and `pulumi preview --policy-pack policies` (advice.py) runs the whole pack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_queues import yamlio
from gpu_queues.config.model import StackConfig
from gpu_queues.config.render import kueue_objects
from gpu_queues.files import NotReadable, read_text
from policies import catalog
from policies.resource import Resource


@dataclass
class PackResult:
    mandatory: list[str] = field(default_factory=list)
    advisory: list[str] = field(default_factory=list)
    rules: int = 0


def _settings(file: Path) -> dict[str, Any]:
    """The pack's config for the stack (a file anyone may edit): read by the project's
    reading rules, a ValueError naming the file when it cannot be read."""
    try:
        data = yamlio.load_json(read_text(file, f"the policy pack config {file}"), str(file))
    except NotReadable as exc:
        raise ValueError(str(exc)) from None
    except yamlio.YamlRefused:
        raise
    except ValueError as exc:
        raise ValueError(f"the policy pack config {file} is not JSON: {exc}") from None
    return data if isinstance(data, dict) else {}


def _config(schema: Mapping[str, dict[str, Any]], given: Any) -> dict[str, Any]:
    out = {name: prop["default"] for name, prop in schema.items() if "default" in prop}
    if isinstance(given, Mapping):
        out.update({k: v for k, v in given.items() if k != "enforcementLevel"})
    return out


def _level(default: Any, given: Any) -> str:
    level = given.get("enforcementLevel") if isinstance(given, Mapping) else None
    return str(level or default.value)


def resources(config: StackConfig, stack: str) -> list[Resource]:
    out = []
    for obj in kueue_objects(config):
        name = str((obj.get("metadata") or {}).get("name"))
        type_ = f"kubernetes:{obj['apiVersion']}:{obj['kind']}"
        urn = f"urn:pulumi:{stack}::gpu-queues::{type_}::{name}"
        out.append(Resource(type_, name, urn, obj))
    return out


def run_pack(config: StackConfig, stack: str, pack_config: Path) -> PackResult:
    """Every rule of the pack that reads Kueue objects, on the config's objects."""
    settings = _settings(pack_config)
    found = resources(config, stack)
    result = PackResult()
    for spec in catalog.RESOURCE_POLICIES:
        given = settings.get(spec.name)
        level = _level(spec.level, given)
        if level == "disabled":
            continue
        result.rules += 1
        for r in found:
            if spec.applies_to(r.type):
                for v in spec.rule(r, _config(spec.config, given)):
                    (result.mandatory if level == "mandatory" else result.advisory).append(
                        v.message
                    )
    for stack_spec in catalog.STACK_POLICIES:
        given = settings.get(stack_spec.name)
        level = _level(stack_spec.level, given)
        if level == "disabled":
            continue
        result.rules += 1
        for v in stack_spec.rule(found, _config(stack_spec.config, given)):
            (result.mandatory if level == "mandatory" else result.advisory).append(v.message)
    return result
