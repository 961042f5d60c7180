"""Deployments and StatefulSets in a mix, alike: each holds the GPUs of all its replicas (1
when not given) and both engines replay it (the sandbox's kube-controller-manager makes its
pods: sandbox/replay/serving.py follows a Deployment's); malformed
replicas, template or selector an invalid row naming the field; without its integration,
unsupported, naming it. A Deployment's row: test_deployment_mix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_queues.whatif.engine_input import FAST_KINDS, not_fast
from gpu_queues.whatif.mix import Catalog
from sandbox.replay.engine import on_the_sandbox
from tests.unit.whatif.serving import SERVING, entries, serving

pytestmark = pytest.mark.unit

KINDS = pytest.mark.parametrize(
    ("kind", "framework"), [("Deployment", "deployment"), ("StatefulSet", "statefulset")]
)


@KINDS
def test_it_holds_the_gpus_of_all_its_replicas_on_both_engines(
    tmp_path: Path, kind: str, framework: str
) -> None:
    (e,) = entries(tmp_path, serving(kind))
    assert (e.status, e.kind, e.gpus, e.pods) == ("ok", kind, 6, 3)
    assert kind in FAST_KINDS and not_fast(e) is None
    assert on_the_sandbox(e) == e  # kube-controller-manager makes its pods there
    (one,) = entries(tmp_path, serving(kind, replicas=None))
    assert (one.gpus, one.pods) == (2, 1)  # replicas default to 1, as the API server's


@KINDS
@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": 0}, "spec.replicas"),
        ({"replicas": -2}, "spec.replicas"),
        ({"replicas": "three"}, "spec.replicas"),
        ({"template": None}, "spec.template"),
        ({"template": ["x"]}, "spec.template"),
        ({"selector": None}, "spec.selector"),
        ({"selector": "app=serve"}, "spec.selector"),
    ],
)
def test_a_malformed_one_is_invalid_naming_the_field(
    tmp_path: Path, kind: str, framework: str, spec: dict[str, Any], field: str
) -> None:
    (e,) = entries(tmp_path, serving(kind, **spec))
    assert e.status == "invalid" and (e.problem or "").startswith(f"{field}:"), e.problem


@KINDS
def test_one_without_its_integration_names_it_to_enable(
    tmp_path: Path, kind: str, framework: str
) -> None:
    # The other kind's integration stays on: only its own counts.
    without = Catalog(SERVING.queues, SERVING.priority_classes,
                      SERVING.frameworks - {framework})  # fmt: skip
    (e,) = entries(tmp_path, serving(kind), catalog=without)
    assert e.status == "unsupported" and f"integration {framework} is not enabled" in str(e.problem)
