"""How the golden records are made: the only place that names the code under record, so that
moving a module changes an import here and nothing else."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

from gpu_queues import keys
from gpu_queues.components.validation import validate
from gpu_queues.release.manifest import load_manifest, prepare_manifest
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import Run, report_json
from sandbox.bench.under_mocks import registrations
from tests.conftest import MANIFEST, ROOT, stack_raw, stand_in


def registrations_of(stack: str) -> dict[str, Any]:
    raw = copy.deepcopy(stack_raw(stack))
    kueue = raw.setdefault(keys.KEY_KUEUE, {})
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    kueue["manifest"] = {"path": str(MANIFEST.relative_to(ROOT)), "sha256": digest}
    config, _ = validate(raw, releases=stand_in())
    prepared = None
    if config.kueue.install:
        docs = load_manifest(config.kueue)
        prepared = prepare_manifest(docs, config.kueue, verified_sha256=digest)
    return registrations(raw, prepared)


def through_aliases(found: dict[str, Any]) -> dict[str, Any]:
    """The registrations as the engine matches them against a stack made before a retyping:
    a resource registered with a type-only alias (`pulumi.Alias(type_=old)`, parent unchanged)
    had the old type, in its URN and in those of everything under it (the engine multiplies a
    parent's aliases out to its children: pkg/resource/deploy/step_generator.go,
    generateAliases). So the records made before it still pin everything else."""
    renames: dict[str, str] = {}
    for entry in found.values():
        register = entry.get("register", {})
        if not register.get("type", "").startswith(f"{keys.PROJECT}:"):
            continue  # the SDKs' own aliases (pulumi-kubernetes' older API versions) stay
        for alias in register.get("aliases", []):
            spec = alias.get("spec", {})
            if set(spec) - {"type", "parentUrn"} or spec.get("parentUrn") or "type" not in spec:
                raise ValueError(f"an alias this does not model: {alias}")
            renames[register["type"]] = spec["type"]
    text = json.dumps(found)
    for new, old in renames.items():
        text = re.sub(re.escape(new) + r'(?=["$]|::)', old, text)
    renamed: dict[str, Any] = json.loads(text)
    for entry in renamed.values():
        register = entry.get("register", {})
        if register.get("type", "") in renames.values():
            register.pop("aliases", None)
    return renamed


def report_of(replay: dict[str, Any], which: str) -> str:
    import json

    new = Run.from_json(replay["new"])
    base = Run.from_json(replay["base"]) if which.startswith("compare") else None
    if which.endswith(".md"):
        return render(new, base)
    return json.dumps(report_json(new, base), indent=2, sort_keys=True) + "\n"


def engine_run_of(stack: str, folder: str, mix: str) -> Any:
    """The fast engine's replay of a committed mix on a committed stack, the wall time set to 0:
    what else is in it is the engine's answer. A project stack goes the way `make what-if`
    takes it (sides and all); a test's stack the way its test replays it."""
    import types

    from gpu_queues.whatif.fast import replay_mix
    from gpu_queues.whatif.sides import load_replay_side, replay_side_fast
    from sandbox.shape import load_stack

    if folder == ".":
        side = load_replay_side("new", stack, ROOT, None, ROOT / ".cache" / "golden" / stack)
        args = types.SimpleNamespace(until=None, max_workloads=100_000, max_bytes=100_000_000)
        run = replay_side_fast(side, stack, ROOT / mix, args)
    else:
        source = ROOT / folder / f"Pulumi.{stack}.yaml"
        run = replay_mix(load_stack(source), ROOT / mix, stack=stack, label=stack)
    run.meta.wall_seconds = 0.0
    return run


def engine_report_of(run: Any, which: str) -> str:
    import json

    if which == "report.md":
        return str(render(run, None))
    return json.dumps(report_json(run, None), indent=2, sort_keys=True) + "\n"
