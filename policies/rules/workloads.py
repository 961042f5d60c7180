"""The pack's rules on workloads: a Job is queued through a LocalQueue and starts suspended, and
a claim on the shared storage class is ReadWriteMany and bound to its static volume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..props import child, is_unknown
from ..resource import Resource, Violation, config_list, config_str, items, names, violation
from . import (
    DEFAULT_SHARED_STORAGE_CLASS,
    JOB_QUEUED_SUSPENDED,
    JOB_TYPE,
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


def job_queued_suspended(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """A Job names a LocalQueue and starts suspended, so Kueue (not the scheduler) admits it."""
    if resource.type != JOB_TYPE:
        return []
    namespace = child(resource.props, "metadata", "namespace")
    if isinstance(namespace, str) and namespace in config_list(config, "exemptNamespaces"):
        return []
    violations: list[Violation] = []
    queue = child(resource.props, "metadata", "labels", QUEUE_NAME_LABEL)
    if not is_unknown(queue) and not queue:
        violations.append(
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"label {QUEUE_NAME_LABEL} is missing, so the job bypasses Kueue and runs "
                "without quota",
                f"add metadata.labels[{QUEUE_NAME_LABEL!r}] naming the team's LocalQueue",
            )
        )
    suspend = child(resource.props, "spec", "suspend")
    if not is_unknown(suspend) and suspend is not True:
        violations.append(
            violation(
                JOB_QUEUED_SUSPENDED,
                resource,
                f"spec.suspend is {suspend if suspend is not None else 'not set'}, so its pods "
                "start before Kueue admits it",
                "set spec.suspend: true (Kueue flips it to false on admission)",
            )
        )
    return violations
