"""The guardrails of the gpu-queues policy pack, as plain functions on plain data.

Each rule takes a Resource (or every Resource of the stack) and its policy's config, and
returns Violations. A message names the object, the rule and the fix. Values that are unknown
during preview (see policies/props.py) never cause a violation: the check waits for
`pulumi up`. The Kueue rules themselves (ClusterQueue and ResourceFlavor structure, coverage,
whole numbers, flavors that exist) and the capacity sum are the project's one validation core,
one module per Kueue object kind in gpu_queues/kueue/ and gpu_queues/kueue/capacity.py, which
the stack config check runs too.

Here: the policy names, the defaults of their config keys, the resource types they look at, and
the shape of a rule. The rules, by what they judge: queues.py (ClusterQueue structure and
namespaces, LocalQueues and whether their ClusterQueue selects their namespace), cohorts.py
(Cohorts and the tree they make), flavors.py (ResourceFlavors, the flavors queues name, quotas
within the hardware), workloads.py (Jobs, shared storage claims), release.py (the Kueue controller's
image and manifest checksum), multikueue.py (admission checks and MultiKueue objects),
topology.py (Topologies and the flavors that name them).
policies/catalog.py assembles them into the pack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from gpu_queues.kueue import resourcegroups as kueue_resourcegroups
from gpu_queues.kueue.capacity import CAPACITY_ANNOTATION

from ..resource import Resource, Violation, kueue_kind

__all__ = [
    "CAPACITY_ANNOTATION",
    "Resource",
    "ResourceRule",
    "StackRule",
    "Violation",
    "kueue_kind",
]

# Policy names: what `--policy-pack-config` files and violation reports use.
COVERS_CPU_MEMORY: Final = "clusterqueue-covers-cpu-memory"
WEBHOOK_VALID: Final = "clusterqueue-webhook-valid"
WHOLE_EXTENDED_RESOURCES: Final = "clusterqueue-whole-extended-resources"
FLAVOR_WEBHOOK_VALID: Final = "resourceflavor-webhook-valid"
FLAVORS_EXIST: Final = "clusterqueue-flavors-exist"
CLUSTERQUEUE_EXISTS: Final = "localqueue-clusterqueue-exists"
NAMESPACE_SELECTOR_SET: Final = "clusterqueue-namespace-selector-set"
NAMESPACE_SELECTOR_NOT_ALL: Final = "clusterqueue-namespace-selector-not-all"
QUOTA_WITHIN_CAPACITY: Final = "quota-within-capacity"
SHARED_PVC: Final = "shared-pvc-rwx-bound"
KUEUE_RELEASE_PINNED: Final = "kueue-release-pinned"
KUEUE_RELEASE_CHECKSUM: Final = "kueue-release-checksum"
JOB_QUEUED_SUSPENDED: Final = "job-queued-suspended"
ADMISSION_CHECKS_EXIST: Final = "clusterqueue-admission-checks-exist"
MULTIKUEUE_WEBHOOK_VALID: Final = "multikueue-webhook-valid"
MULTIKUEUE_REFERENCES_EXIST: Final = "multikueue-references-exist"
TOPOLOGY_WEBHOOK_VALID: Final = "topology-webhook-valid"
FLAVOR_TOPOLOGY_EXISTS: Final = "resourceflavor-topology-exists"
COHORT_WEBHOOK_VALID: Final = "cohort-webhook-valid"
COHORT_TREE_VALID: Final = "cohort-tree-valid"
LOCALQUEUE_WEBHOOK_VALID: Final = "localqueue-webhook-valid"
LOCALQUEUE_NAMESPACE_SELECTED: Final = "localqueue-namespace-selected"

# Defaults of the config keys (the pack's config schema in catalog.py repeats them).
DEFAULT_REQUIRED_RESOURCES: Final = kueue_resourcegroups.DEFAULT_REQUIRED_RESOURCES
DEFAULT_SHARED_STORAGE_CLASS: Final = "shared-wekafs"
DEFAULT_KUEUE_NAMESPACE: Final = "kueue-system"
DEFAULT_KUEUE_DEPLOYMENT: Final = "kueue-controller-manager"
CHECKSUM_ANNOTATION: Final = "gpu-queues.dev/manifest-sha256"
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"

# The Pulumi types the rules outside Kueue's API look at.
PVC_TYPE: Final = "kubernetes:core/v1:PersistentVolumeClaim"
DEPLOYMENT_TYPE: Final = "kubernetes:apps/v1:Deployment"
JOB_TYPE: Final = "kubernetes:batch/v1:Job"
SECRET_TYPE: Final = "kubernetes:core/v1:Secret"
# The admission check objects multikueue-webhook-valid reads (a provisioning check's
# ProvisioningRequestConfig beside MultiKueue's).
MULTIKUEUE_KINDS: Final = (
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
    "ProvisioningRequestConfig",
)

ResourceRule = Callable[[Resource, Mapping[str, Any]], list[Violation]]
StackRule = Callable[[Sequence[Resource], Mapping[str, Any]], list[Violation]]
