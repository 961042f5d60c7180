"""The Jobs a rehearsal submits (sized by sandbox.rehearse.plan), and how it shows their nodes
and selectors."""

from __future__ import annotations

import re
from typing import Any

from gpu_queues.config.model import Team
from sandbox.rehearse.sizing import JobShape, is_extended

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_IMAGE = "registry.invalid/rehearsal:never-pulled"  # kwok plays the kubelet


def labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


def job_manifest(
    name: str,
    team: Team,
    shape: JobShape,
    claim: str | None = None,
    selector: dict[str, str] | None = None,
    queue: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A suspended Job of the shape for the team's default LocalQueue, or for `queue` (its
    (name, namespace): another of the team's LocalQueues, in that namespace)."""
    queue_name, namespace = queue or (team.local_queue, team.namespace)
    quantities = shape.quantities()
    resources: dict[str, Any] = {"requests": dict(quantities)}
    # Extended resources are asked for as limits (requests must equal them).
    limits = {r: q for r, q in quantities.items() if is_extended(r)}
    if limits:
        resources["limits"] = limits
    container: dict[str, Any] = {
        "name": "work",
        "image": JOB_IMAGE,
        "command": ["sleep", "infinity"],
        "resources": resources,
    }
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if selector:
        pod["nodeSelector"] = dict(selector)
    if claim is not None:
        container["volumeMounts"] = [{"name": "shared", "mountPath": "/mnt/shared"}]
        pod["volumes"] = [{"name": "shared", "persistentVolumeClaim": {"claimName": claim}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: queue_name},
        },
        "spec": {
            "parallelism": shape.pods,
            "completions": shape.pods,
            "suspend": True,
            "backoffLimit": 0,
            "template": {"spec": pod},
        },
    }


def shown_nodes(names: list[str]) -> str:
    """Node names, naturally sorted; a long list shortened (a job may span fifty nodes)."""
    ordered = sorted(
        set(names), key=lambda n: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", n)]
    )
    if len(ordered) <= 4:
        return ", ".join(ordered)
    return f"{len(ordered)} nodes: {', '.join(ordered[:3])}, ..., {ordered[-1]}"
