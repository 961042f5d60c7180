"""How the golden records are made: the only place that names the code under record, so that
moving a module changes an import here and nothing else."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from gpu_queues import keys
from gpu_queues.components.gpu_queues import validate
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


def report_of(replay: dict[str, Any], which: str) -> str:
    import json

    new = Run.from_json(replay["new"])
    base = Run.from_json(replay["base"]) if which.startswith("compare") else None
    if which.endswith(".md"):
        return render(new, base)
    return json.dumps(report_json(new, base), indent=2, sort_keys=True) + "\n"
