"""Stack config keys and stack output names, shared by the program and its tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

PROJECT: Final = "gpu-queues"

# Top-level keys under the project's config namespace (`gpu-queues:<key>`).
KEY_KUBERNETES: Final = "kubernetes"
KEY_KUEUE: Final = "kueue"
KEY_FLAVORS: Final = "flavors"
KEY_COHORT: Final = "cohort"
KEY_COHORTS: Final = "cohorts"
KEY_TEAMS: Final = "teams"
KEY_SHARED_STORAGE: Final = "sharedStorage"
KEY_MULTI_KUEUE: Final = "multiKueue"
KEY_PRIORITY_CLASSES: Final = "priorityClasses"
KEY_TOPOLOGIES: Final = "topologies"
KEY_PROVISIONING: Final = "provisioning"
CONFIG_KEYS: Final = (
    KEY_KUBERNETES,
    KEY_KUEUE,
    KEY_FLAVORS,
    KEY_COHORT,
    KEY_COHORTS,
    KEY_TEAMS,
    KEY_SHARED_STORAGE,
    KEY_MULTI_KUEUE,
    KEY_PRIORITY_CLASSES,
    KEY_TOPOLOGIES,
    KEY_PROVISIONING,
)

# Stack outputs.
OUT_KUEUE_VERSION: Final = "kueueVersion"
OUT_KUEUE_INSTALLED: Final = "kueueInstalled"
OUT_FLAVORS: Final = "flavors"
OUT_COHORT: Final = "cohort"
# A cohort tree's cohorts (name -> parent) and every team's LocalQueues (namespace/name), only
# on stacks that have a tree or a team of several LocalQueues.
OUT_COHORTS: Final = "cohorts"
OUT_TEAM_LOCAL_QUEUES: Final = "teamLocalQueues"
OUT_CLUSTER_QUEUES: Final = "clusterQueues"
OUT_LOCAL_QUEUES: Final = "localQueues"
OUT_NAMESPACES: Final = "namespaces"
OUT_SHARED_CLAIMS: Final = "sharedClaims"
# MultiKueue: a manager's worker clusters and each dispatching team's AdmissionCheck; a
# worker's kubeconfig for its managers (a secret output, read through a StackReference).
OUT_MULTI_KUEUE: Final = "multiKueue"
OUT_MULTI_KUEUE_KUBECONFIG: Final = "multiKueueKubeconfig"
OUT_PRIORITY_CLASSES: Final = "priorityClasses"
# kueue.metrics: where the ServiceMonitor and the dashboard ConfigMap are (only when on).
OUT_METRICS: Final = "metrics"
# provisioning: each team's ProvisioningRequest admission checks (only when set).
OUT_PROVISIONING: Final = "provisioning"

# Kueue API used for every queue object.
KUEUE_API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
KUEUE_CONFIG_API_VERSION: Final = "config.kueue.x-k8s.io/v1beta2"

# Labels and annotations this project puts on what it creates.
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LABEL_TEAM: Final = "gpu-queues.dev/team"
ANNOTATION_CONFIG_HASH: Final = "gpu-queues.dev/manager-config-sha256"
# On the controller Deployment: the sha256 the release manifest was verified against
# (present only when kueue.manifest.sha256 is configured; policy kueue-release-checksum reads it).
ANNOTATION_MANIFEST_SHA256: Final = "gpu-queues.dev/manifest-sha256"


def stack_file_key(config: Mapping[str, Any] | None, name: str) -> str:
    """The key a stack file's `config:` holds the project's `name` under: `name` itself where
    the file writes it without a namespace (a key without one is the project's own, as the
    Pulumi CLI reads it; gpu_queues.config.stackfile.config_of refuses both forms at once),
    else `gpu-queues:<name>`, the form a new key is written in. The one home of the rule for
    the tools that read or edit one key of a raw stack file (pin, promote, rehearse, the
    plain-text kubeconfig check)."""
    prefixed = f"{PROJECT}:{name}"
    if isinstance(config, Mapping) and name in config and prefixed not in config:
        return name
    return prefixed
