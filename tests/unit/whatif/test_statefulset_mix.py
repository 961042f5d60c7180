"""StatefulSets in a mix: a StatefulSet is one workload of its replicas (the fast engine
replays it, and so does the sandbox's), malformed replicas or template an invalid row
naming the field. Deployments: test_deployment_mix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.engine_input import not_fast
from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from sandbox.replay.engine import on_the_sandbox
from tests.unit.whatif.test_mix import CATALOG

pytestmark = pytest.mark.unit

SERVING = Catalog(CATALOG.queues, CATALOG.priority_classes,
                  CATALOG.frameworks | {"statefulset", "deployment"})  # fmt: skip


def statefulset(**spec: Any) -> dict[str, Any]:
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
        "kind": "StatefulSet",
        "metadata": {"name": "serve", "namespace": "team-vision",
                     "labels": {"kueue.x-k8s.io/queue-name": "vision-jobs"}},
        "spec": {k: v for k, v in body.items() if v is not None},
    }  # fmt: skip


def entries(tmp_path: Path, *docs: Any, catalog: Catalog = SERVING) -> list[Entry]:
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return load_mix(path, catalog)


def test_a_statefulset_holds_the_gpus_of_all_its_replicas_on_both_engines(
    tmp_path: Path,
) -> None:
    (e,) = entries(tmp_path, statefulset())
    assert (e.status, e.kind, e.gpus, e.pods) == ("ok", "StatefulSet", 6, 3)
    assert not_fast(e) is None
    assert on_the_sandbox(e) == e  # kube-controller-manager makes its pods there
    (one,) = entries(tmp_path, statefulset(replicas=None))
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
    ],
)
def test_a_malformed_statefulset_is_invalid_naming_the_field(
    tmp_path: Path, spec: dict[str, Any], field: str
) -> None:
    (e,) = entries(tmp_path, statefulset(**spec))
    assert e.status == "invalid" and (e.problem or "").startswith(f"{field}:"), e.problem


def test_a_statefulset_without_its_integration_names_it_to_enable(tmp_path: Path) -> None:
    (e,) = entries(tmp_path, statefulset(), catalog=CATALOG)
    assert e.status == "unsupported" and "integration statefulset is not enabled" in str(e.problem)
