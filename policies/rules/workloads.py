"""The pack's rules on workloads: a Job (a CronJob's jobs too) is queued through a LocalQueue and
starts suspended, any other workload asking for GPUs is queued too (in a kind Kueue manages),
and a claim on the shared storage class is ReadWriteMany and bound to its static volume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpu_queues.kueue.fields import is_gpu
from gpu_queues.kueue.quantity import QuantityError, parse_quantity

from ..props import child, is_unknown
from ..resource import Resource, Violation, config_list, config_str, items, names, violation
from . import (
    DEFAULT_SHARED_STORAGE_CLASS,
    JOB_QUEUED_SUSPENDED,
    PVC_TYPE,
    QUEUE_NAME_LABEL,
    SHARED_PVC,
)

# --- Rule 7 -----------------------------------------------------------------------------


def shared_pvc_rwx_bound(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """A claim on the shared storage class is ReadWriteMany and names its static volume."""
    if resource.type != PVC_TYPE:
        return []
    spec = child(resource.props, "spec")
    storage_class = child(spec, "storageClassName")
    shared = config_str(config, "sharedStorageClass", DEFAULT_SHARED_STORAGE_CLASS)
    if is_unknown(spec) or storage_class != shared:
        return []
    violations: list[Violation] = []
    modes = child(spec, "accessModes")
    modes_known = not is_unknown(modes) and not any(is_unknown(m) for m in items(modes))
    if modes_known and "ReadWriteMany" not in items(modes):
        violations.append(
            violation(
                SHARED_PVC,
                resource,
                f"accessModes are [{names(items(modes))}] on shared storage class {shared}, "
                "so pods of a job on different nodes cannot all mount it",
                "set accessModes to [ReadWriteMany]",
            )
        )
    volume = child(spec, "volumeName")
    if not is_unknown(volume) and not volume:
        violations.append(
            violation(
                SHARED_PVC,
                resource,
                f"spec.volumeName is not set, so the claim on {shared} does not bind to the "
                "cluster's static shared volume",
                "set spec.volumeName to the shared PersistentVolume's name",
            )
        )
    return violations


# --- Rule 9 -----------------------------------------------------------------------------

# Kinds that run pods Kueue cannot manage (it has no integration for them): a GPU asked for
# there is never counted against any quota, whatever its labels say.
_UNMANAGEABLE: Final = frozenset({"DaemonSet", "ReplicaSet", "ReplicationController"})
# How deep the search for a GPU request goes (a pod template sits at most a few levels down,
# even in a JobSet's or a RayCluster's spec).
_MAX_DEPTH: Final = 24


def _asks_for_gpus(value: Any, depth: int = 0) -> bool:
    """Whether any `limits` or `requests` under `value` names a GPU (an amount that is not
    known yet, or is not zero): wherever the kind keeps its pod templates."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(value, list):
        return any(_asks_for_gpus(v, depth + 1) for v in value)
    if not isinstance(value, Mapping):
        return False
    for key, inner in value.items():
        if key in ("limits", "requests") and isinstance(inner, Mapping):
            for name, amount in inner.items():
                if is_gpu(str(name)) and not is_unknown(amount) and _nonzero(amount):
                    return True
        if _asks_for_gpus(inner, depth + 1):
            return True
    return False


def _nonzero(amount: Any) -> bool:
    try:
        return parse_quantity(amount) != 0
    except QuantityError:
        return True  # the API server refuses it; here it is a request all the same


def _kind(resource: Resource) -> str:
    """The object's kind: the Pulumi type's, or a CustomResource's own `kind`."""
    if resource.kind == "CustomResource":
        kind = child(resource.props, "kind")
        return kind if isinstance(kind, str) else ""
    return resource.kind


def _queued_suspended(
    resource: Resource, labels: Any, suspend: Any, where: str, patch: bool = False
) -> list[Violation]:
    """The queue label in `labels` and `suspend: true`; a patch is judged only on what it
    sets (it cannot remove a label by leaving it out)."""
    violations: list[Violation] = []
    queue = child(labels, QUEUE_NAME_LABEL)
    present = isinstance(labels, Mapping) and QUEUE_NAME_LABEL in labels
    if not is_unknown(labels) and not is_unknown(queue) and not queue and (present or not patch):
        violations.append(
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"label {QUEUE_NAME_LABEL} is {'empty' if present else 'missing'}"
                f"{f' in {where}' if where else ''}, so the job bypasses Kueue and runs "
                "without quota",
                f"add {where or 'metadata'}.labels[{QUEUE_NAME_LABEL!r}] naming the team's "
                "LocalQueue",
            )
        )
    spec = f"{where.rpartition('.')[0]}.spec" if where else "spec"
    if not is_unknown(suspend) and suspend is not True and (suspend is not None or not patch):
        violations.append(
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"{spec}.suspend is {suspend if suspend is not None else 'not set'}, so its pods "
                "start before Kueue admits it",
                f"set {spec}.suspend: true (Kueue flips it to false on admission)",
            )
        )
    return violations


def _gpus_queued(resource: Resource, kind: str) -> list[Violation]:
    """Any other workload asking for GPUs names a LocalQueue, in a kind Kueue manages."""
    if resource.type.startswith("kubernetes:kueue.x-k8s.io/") or not _asks_for_gpus(
        child(resource.props, "spec")
    ):
        return []
    if kind in _UNMANAGEABLE:
        return [
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"it asks for GPUs, but Kueue cannot manage a {kind}, so its pods run without "
                "quota",
                "run GPU work as a Job (or another kind Kueue manages) in a team's LocalQueue",
            )
        ]
    labels = child(resource.props, "metadata", "labels")
    queue = child(labels, QUEUE_NAME_LABEL)
    if is_unknown(labels) or is_unknown(queue) or queue:
        return []
    return [
        violation(
            JOB_QUEUED_SUSPENDED,
            resource,
            f"it asks for GPUs without label {QUEUE_NAME_LABEL}, so its pods bypass Kueue and "
            "run without quota",
            f"add metadata.labels[{QUEUE_NAME_LABEL!r}] naming the team's LocalQueue",
        )
    ]


def job_queued_suspended(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """A Job (a CronJob's job template too) names a LocalQueue and starts suspended, so Kueue
    (not the scheduler) admits it; any other workload that asks for GPUs (a Pod, a
    Deployment, a JobSet, ...) names a LocalQueue, and is of a kind Kueue manages."""
    namespace = child(resource.props, "metadata", "namespace")
    if isinstance(namespace, str) and namespace in config_list(config, "exemptNamespaces"):
        return []
    kind = _kind(resource)
    props = resource.props
    if kind in ("Job", "JobPatch"):
        labels, suspend = child(props, "metadata", "labels"), child(props, "spec", "suspend")
        return _queued_suspended(resource, labels, suspend, "", patch=kind == "JobPatch")
    if kind in ("CronJob", "CronJobPatch"):
        template = child(props, "spec", "jobTemplate")
        if kind == "CronJobPatch" and template is None:
            return []
        labels = child(template, "metadata", "labels")
        suspend = child(template, "spec", "suspend")
        where = "spec.jobTemplate.metadata"
        return _queued_suspended(resource, labels, suspend, where, patch=kind == "CronJobPatch")
    if kind.endswith("Patch"):
        return []  # a patch of another kind cannot remove a label (left: its GPUs' owner)
    return _gpus_queued(resource, kind)
