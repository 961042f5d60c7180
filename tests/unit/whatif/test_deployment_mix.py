"""Deployments in a mix: one row of the report, its pods Kueue's Workloads, one each (the fast
engine replays it, and the sandbox's: sandbox/replay/serving.py); malformed replicas, template or
selector an invalid row naming the field; the row pending until all its replicas are
admitted, saying how many are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.engine_input import FAST_KINDS, not_fast
from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from gpu_queues.whatif.outcome import outcome, replicas_row
from sandbox.replay.engine import on_the_sandbox
from tests.unit.whatif.test_mix import CATALOG

pytestmark = pytest.mark.unit

SERVING = Catalog(CATALOG.queues, CATALOG.priority_classes,
                  CATALOG.frameworks | {"deployment"})  # fmt: skip


def deployment(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "serve"}},
        "template": {
            "metadata": {"labels": {"app": "serve"}},
            "spec": {"containers": [{"name": "s", "image": "x",
                                     "resources": {"limits": {"nvidia.com/gpu": 2}}}]},
        },
    }  # fmt: skip
    body.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "team-vision",
                     "labels": {"kueue.x-k8s.io/queue-name": "vision-jobs"}},
        "spec": {k: v for k, v in body.items() if v is not None},
    }  # fmt: skip


def entries(tmp_path: Path, *docs: Any, catalog: Catalog = SERVING) -> list[Entry]:
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return load_mix(path, catalog)


def test_a_deployment_holds_the_gpus_of_all_its_replicas_on_both_engines(
    tmp_path: Path,
) -> None:
    (e,) = entries(tmp_path, deployment())
    assert (e.status, e.kind, e.gpus, e.pods) == ("ok", "Deployment", 6, 3)
    assert "Deployment" in FAST_KINDS and not_fast(e) is None
    assert on_the_sandbox(e) == e  # kube-controller-manager makes its pods there
    (one,) = entries(tmp_path, deployment(replicas=None))
    assert (one.gpus, one.pods) == (2, 1)  # replicas default to 1, as the API server's


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
def test_a_malformed_deployment_is_invalid_naming_the_field(
    tmp_path: Path, spec: dict[str, Any], field: str
) -> None:
    (e,) = entries(tmp_path, deployment(**spec))
    assert e.status == "invalid" and (e.problem or "").startswith(f"{field}:"), e.problem


def test_a_deployment_without_its_integration_names_it_to_enable(tmp_path: Path) -> None:
    without = Catalog(CATALOG.queues, CATALOG.priority_classes,
                      CATALOG.frameworks - {"deployment"})  # fmt: skip
    (e,) = entries(tmp_path, deployment(), catalog=without)
    assert e.status == "unsupported" and "integration deployment is not enabled" in str(e.problem)


def pod_workload(flavor: str | None) -> dict[str, Any]:
    """A pod's Workload: admitted to flavor, or (None) pending with Kueue's message."""
    if flavor is None:
        pending = {"type": "QuotaReserved", "status": "False", "message": "4 more needed"}
        return {"status": {"conditions": [pending]}}
    assignment = {"name": "main", "flavors": {"nvidia.com/gpu": flavor}, "count": 1}
    return {"status": {"admission": {"clusterQueue": "vision", "podSetAssignments": [assignment]},
                       "conditions": [{"type": "QuotaReserved", "status": "True"},
                                      {"type": "Admitted", "status": "True"}]}}  # fmt: skip


def row(tmp_path: Path, replicas: list[dict[str, Any]], admitted_at: float | None) -> Any:
    (e,) = entries(tmp_path, deployment())
    waiting = [w for w in replicas if "admission" not in w["status"]]
    first = (waiting or replicas)[0]
    base = outcome(e, first, running=not waiting, stuck=None, evictions=[],
                   admitted_at=admitted_at, gpu_seconds=0.0, problem=None)  # fmt: skip
    return replicas_row(e, base, replicas, admitted_at)


def test_a_deployment_short_of_replicas_is_pending_saying_how_many_and_why(
    tmp_path: Path,
) -> None:
    r = row(tmp_path, [pod_workload("a100"), pod_workload("a100"), pod_workload(None)], None)
    assert (r.outcome, r.wait_seconds) == ("pending", None)
    assert r.message == "2 of 3 pods admitted: 4 more needed"


def test_a_deployment_whose_replicas_got_different_flavors_says_so(tmp_path: Path) -> None:
    r = row(tmp_path, [pod_workload("a100"), pod_workload("h100"), pod_workload("a100")], 60.0)
    assert (r.outcome, r.flavor) == ("admitted", "a100, h100")
    assert r.message == "its pods were admitted to different flavors: a100, h100"
    same = row(tmp_path, [pod_workload("h100")] * 3, 60.0)
    assert (same.outcome, same.flavor, same.message) == ("admitted", "h100", None)
