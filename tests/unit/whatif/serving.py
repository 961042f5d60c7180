"""The serving workloads the mix tests write (test_serving_mix, test_deployment_mix): a
Deployment or StatefulSet of team-vision, three replicas of 2 GPUs unless a test says
otherwise, read as a mix with both integrations on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpu_queues.whatif.mix import Catalog, Entry, load_mix
from tests.unit.whatif.test_mix import CATALOG

SERVING = Catalog(CATALOG.queues, CATALOG.priority_classes,
                  CATALOG.frameworks | {"statefulset", "deployment"})  # fmt: skip


def serving(kind: str, **spec: Any) -> dict[str, Any]:
    """A `kind` (Deployment, StatefulSet) whose spec fields are the defaults changed by `spec`,
    a field given None left out."""
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
        "kind": kind,
        "metadata": {"name": "serve", "namespace": "team-vision",
                     "labels": {"kueue.x-k8s.io/queue-name": "vision-jobs"}},
        "spec": {k: v for k, v in body.items() if v is not None},
    }  # fmt: skip


def entries(tmp_path: Path, *docs: Any, catalog: Catalog = SERVING) -> list[Entry]:
    """The documents read as a mix."""
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return load_mix(path, catalog)
