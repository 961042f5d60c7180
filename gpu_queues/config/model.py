"""Typed stack config: the pydantic models and `load_config`, the one entry point.

Validation has two layers that always both run, and every problem is reported at once in one
ConfigError: the models check each value (types, names, quantities, enums, unknown keys; types
in gpu_queues/kueue/fieldtypes.py), and `config_checks.cross_check` looks at relations between
values on the raw config, including Kueue's own rules on the objects the program would
register.
Error formatting lives in gpu_queues/config/errors.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from gpu_queues import keys
from gpu_queues.config.base import Model
from gpu_queues.config.checks import cross_check
from gpu_queues.config.errors import ConfigError, Loc, Problem, format_loc, problems_from_validation
from gpu_queues.config.hardware import Node, flavor_hardware, flavor_nodes
from gpu_queues.config.monitoring import MetricsConfig
from gpu_queues.config.multikueue import (
    MultiKueue,
    MultiKueueManagerRole,
    MultiKueueTeam,
    MultiKueueWorker,
    MultiKueueWorkerRole,
)
from gpu_queues.config.provisioning import Provisioning
from gpu_queues.config.teams import (
    AdmissionScope,
    Cohort,
    CohortNode,
    FairSharingWeight,
    FlavorFungibility,
    ResourceGroup,
    Subject,
    Team,
    TeamLocalQueue,
)
from gpu_queues.config.topology import Topology, TopologyLevel
from gpu_queues.kueue.fieldtypes import (
    Duration,
    FeatureGate,
    ImageRegistry,
    LabelName,
    LabelValue,
    ManifestUrl,
    NodeCount,
    ObjectName,
    PriorityClassName,
    QualifiedName,
    Quantity,
    ResourceName,
    Sha256,
    StorageSize,
    Version,
    WorkloadPriorityClassName,
)
from gpu_queues.pins import kueue_version

__all__ = [
    "AdmissionFairSharing",
    "AdmissionScope",
    "Cohort",
    "CohortNode",
    "ConfigError",
    "FairSharingWeight",
    "Flavor",
    "FlavorFungibility",
    "KueueConfig",
    "Loc",
    "ManagerConfig",
    "MetricsConfig",
    "MultiKueue",
    "MultiKueueManagerRole",
    "MultiKueueSettings",
    "MultiKueueTeam",
    "MultiKueueWorker",
    "MultiKueueWorkerRole",
    "Node",
    "NodeShape",
    "PriorityClass",
    "Problem",
    "Provisioning",
    "ResourceGroup",
    "SharedVolume",
    "StackConfig",
    "Subject",
    "Team",
    "TeamLocalQueue",
    "Topology",
    "TopologyLevel",
    "format_loc",
    "load_config",
    "raw_from_pulumi_config",
]


# --- kubernetes connection ---------------------------------------------------------------


class KubernetesConfig(Model):
    """How the explicit Kubernetes provider connects. Unset kubeconfig: the ambient KUBECONFIG."""

    kubeconfig: SecretStr | None = Field(
        default=None, description="kubeconfig content (set it as a secret); unset: $KUBECONFIG"
    )
    context: str | None = Field(default=None, description="kubeconfig context to use")


# --- kueue ---------------------------------------------------------------------------------


class ManifestSource(Model):
    url: ManifestUrl | None = Field(
        default=None, description="mirror of manifests.yaml; default: the official release URL"
    )
    path: str | None = Field(
        default=None, description="local manifests.yaml, relative to the project root (air-gapped)"
    )
    sha256: Sha256 | None = Field(
        default=None, description="expected sha256 of the manifest; mismatch: nothing is applied"
    )
    custom: bool | None = Field(
        default=None,
        description="true: the manifest is not the release of kueue.version object for object "
        "(unset or false refuses it); it is then checked field by field against that release as "
        "rendered by `make kueue-manifest` (docs/kueue-manifest.md) and needs a reason",
    )
    reason: str | None = Field(
        default=None,
        max_length=500,
        description="why the stack installs a custom manifest; required with custom: true, "
        "shown in the preview",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ManifestSource:
        if self.url is not None and self.path is not None:
            raise PydanticCustomError("manifest_source", "set either url or path, not both")
        if self.custom and not (self.reason or "").strip():
            raise PydanticCustomError(
                "manifest_custom",
                "custom: true needs a non-empty reason (why this stack does not install the "
                "release as published)",
            )
        if self.reason is not None and any(
            ch in "\x7f" or ord(ch) < 0x20 or 0x80 <= ord(ch) < 0xA0 or ch in "\u2028\u2029"
            for ch in self.reason
        ):
            raise PydanticCustomError(
                "manifest_custom",
                "reason must be one line of text (no line breaks or control characters): the "
                "preview shows it, and a second line there could pass for the program's own",
            )
        if not self.custom and self.reason is not None:
            raise PydanticCustomError(
                "manifest_custom", "reason is read only with custom: true; remove it or set custom"
            )
        return self


class Integrations(Model):
    frameworks: list[str] | None = Field(
        default=None,
        description="e.g. batch/job, pod, jobset.x-k8s.io/jobset; unset: the release default",
    )
    external_frameworks: list[str] | None = None
    label_keys_to_copy: list[QualifiedName] | None = None


class RequeuingStrategy(Model):
    timestamp: Literal["Eviction", "Creation"] | None = None
    # int32 in Kueue's Configuration: a larger number would stop its manager from starting
    backoff_limit_count: int | None = Field(default=None, ge=0, le=2**31 - 1)
    backoff_base_seconds: int | None = Field(default=None, ge=1, le=2**31 - 1)
    backoff_max_seconds: int | None = Field(default=None, ge=1, le=2**31 - 1)


class WaitForPodsReady(Model):
    """Present means enabled (Kueue v1beta2 has no `enable` field)."""

    timeout: Duration
    block_admission: bool | None = None
    recovery_timeout: Duration | None = None
    requeuing_strategy: RequeuingStrategy | None = None


# The preemption strategies Kueue's manager starts with (pkg/config/validation.go,
# validStrategySets, the same in every supported release): one of these lists, in this order.
FAIR_SHARING_STRATEGIES: tuple[tuple[str, ...], ...] = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


class FairSharing(Model):
    """Present means enabled."""

    preemption_strategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] = (
        Field(
            description="how a fair-sharing preemption is judged, in order: "
            + "; ".join(", ".join(s) for s in FAIR_SHARING_STRATEGIES)
            + " (Kueue's manager refuses to start without it, or with another list)"
        )
    )

    @field_validator("preemption_strategies")
    @classmethod
    def _kueue_starts_with(cls, value: list[str]) -> list[str]:
        if tuple(value) not in FAIR_SHARING_STRATEGIES:
            allowed = " or ".join(f"[{', '.join(s)}]" for s in FAIR_SHARING_STRATEGIES)
            raise PydanticCustomError(
                "fair_sharing_strategies",
                "must be {allowed}, in that order: Kueue's manager refuses to start with [{given}]",
                {"allowed": allowed, "given": ", ".join(value)},
            )
        return value


class AdmissionFairSharing(Model):
    """Kueue's `admissionFairSharing` of the Configuration: present means enabled. Teams with
    `admissionScope` order their LocalQueues' jobs by each queue's decayed recent usage."""

    usage_half_life_time: Duration = Field(
        description="how fast a LocalQueue's past usage is forgotten (half of it per period)"
    )
    usage_sampling_interval: Duration = Field(description="how often usage is sampled")
    resource_weights: dict[ResourceName, float] | None = Field(
        default=None, description="weight of each resource in the usage (default 1 each)"
    )


class LabelSelectorRequirement(Model):
    key: QualifiedName
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(Model):
    match_labels: dict[QualifiedName, LabelValue] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class MultiKueueSettings(Model):
    """Kueue's `multiKueue` section of the Configuration; read only on a MultiKueue manager."""

    gc_interval: Duration | None = Field(
        default=None,
        description="how often remote objects whose local workload is gone are deleted "
        "(Kueue's default 1m; 0s: never)",
    )
    origin: LabelValue | None = Field(
        default=None,
        min_length=1,
        description="label value marking this manager's objects on the workers, for its "
        "garbage collector; default on a manager stack: gpu-queues-<stack>, so two managers "
        "sharing a worker never delete each other's work",
    )
    worker_lost_timeout: Duration | None = Field(
        default=None,
        description="how long a workload stays admitted while its worker is unreachable "
        "(Kueue's default 15m)",
    )
    dispatcher_name: (
        Literal[
            "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
            "kueue.x-k8s.io/multikueue-dispatcher-incremental",
        ]
        | None
    ) = Field(
        default=None,
        description="how workers are nominated (Kueue's built-in dispatchers, config API "
        "MultiKueueDispatcherMode*): all at once (the default) or a few at a time",
    )


class ManagerConfig(Model):
    """Fields rendered into Kueue's manager Configuration (ConfigMap kueue-manager-config)."""

    integrations: Integrations | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    fair_sharing: FairSharing | None = None
    admission_fair_sharing: AdmissionFairSharing | None = Field(
        default=None,
        description="admission fair sharing among a ClusterQueue's LocalQueues, for teams "
        "with admissionScope (docs/organisations.md)",
    )
    managed_jobs_namespace_selector: LabelSelector | None = None
    manage_jobs_without_queue_name: bool | None = None
    feature_gates: dict[FeatureGate, bool] | None = None
    multi_kueue: MultiKueueSettings | None = None


class Toleration(Model):
    key: QualifiedName | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class Taint(Model):
    key: QualifiedName
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class ResourceRequirements(Model):
    requests: dict[ResourceName, Quantity] | None = None
    limits: dict[ResourceName, Quantity] | None = None


# The Secret the release's controller mounts as its webhook certificate (Kueue fills it): never
# a registry credential, which the kubelet would send to the registry.
RELEASE_SECRETS: frozenset[str] = frozenset({"kueue-webhook-server-cert"})
MAX_PULL_SECRETS = 8
# The Secrets this program makes in kueue-system (a MultiKueue manager's worker kubeconfigs,
# a worker's token for its managers: gpu_queues/components/multikueue.py) all start so. A pod
# naming a Secret lets its node read it, so none may be a pull secret.
PROGRAM_SECRET_PREFIX = "multikueue-"


class ControllerConfig(Model):
    """Placement, size and image source of kueue-controller-manager: typed knobs the program
    lays over the verified release's Deployment (docs/kueue-manifest.md, the pod's fields).
    imageRegistry replaces registry.k8s.io in the image only (with registry.corp.example,
    v0.18.3 pulls registry.corp.example/kueue/kueue:v0.18.3): a value with a tag or digest
    (':' in the path, '@'), a scheme, '..', non-ASCII letters or no registry host (a '.', a
    port or localhost) is refused. priorityClassName must exist in the cluster; system-* is refused.
    imagePullSecrets are Secrets in kueue-system, at most 8, each once, never the release's
    kueue-webhook-server-cert nor the program's own multikueue-* Secrets (a pod naming a Secret
    lets its node read it)."""

    replicas: int | None = Field(default=None, ge=1, le=10)
    resources: ResourceRequirements | None = None
    node_selector: dict[QualifiedName, LabelValue] | None = None
    tolerations: list[Toleration] | None = None
    image_registry: ImageRegistry | None = Field(
        default=None,
        description="registry mirror (host[:port][/path]) the controller image is pulled from "
        "instead of registry.k8s.io; its path, tag and digest stay the release's",
    )
    priority_class_name: PriorityClassName | None = Field(
        default=None,
        description="PriorityClass of the controller pod (it must exist in the cluster; "
        "system-* classes are refused)",
    )
    image_pull_secrets: list[ObjectName] | None = Field(
        default=None,
        max_length=MAX_PULL_SECRETS,
        description="names of docker-registry Secrets in kueue-system the kubelet pulls the "
        "controller image with (created out of band; never the release's own Secret)",
    )

    @field_validator("image_pull_secrets")
    @classmethod
    def _pull_secrets(cls, value: list[str] | None) -> list[str] | None:
        names = value or []
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise PydanticCustomError(
                "image_pull_secrets",
                "imagePullSecrets names {names} twice",
                {"names": ", ".join(twice)},
            )
        if own := sorted(n for n in names if n.startswith(PROGRAM_SECRET_PREFIX)):
            raise PydanticCustomError(
                "image_pull_secrets",
                "imagePullSecrets may not name {names}: {prefix}* Secrets in kueue-system are "
                "the program's own (MultiKueue kubeconfigs and tokens), and a pod naming a "
                "Secret lets its node read it",
                {"names": ", ".join(own), "prefix": PROGRAM_SECRET_PREFIX},
            )
        if release := sorted(set(names) & RELEASE_SECRETS):
            raise PydanticCustomError(
                "image_pull_secrets",
                "imagePullSecrets may not name {names}: it is the release's webhook "
                "certificate, not a registry credential",
                {"names": ", ".join(release)},
            )
        return value


def _default_version() -> str:
    return kueue_version()


class KueueConfig(Model):
    version: Version = Field(
        default_factory=_default_version,
        description="Kueue release vX.Y.Z; default: toolchain/pins.env",
    )
    install: bool = Field(
        default=True, description="false: Kueue is preinstalled, only wait for it"
    )
    manifest: ManifestSource = Field(default_factory=ManifestSource)
    readiness_timeout_seconds: int = Field(
        default=300, ge=10, le=3600, description="how long to wait for Kueue's webhooks to serve"
    )
    controller: ControllerConfig = Field(default_factory=ControllerConfig)
    manager: ManagerConfig = Field(default_factory=ManagerConfig)
    metrics: MetricsConfig = Field(
        default_factory=MetricsConfig,
        description="what a cluster with the Prometheus Operator and Grafana's dashboard "
        "sidecar reads: a ServiceMonitor for Kueue's metrics and a dashboard (both off)",
    )

    @property
    def manifest_url(self) -> str:
        """Where the manifest comes from when no local path is set."""
        if self.manifest.url is not None:
            return self.manifest.url
        return (
            "https://github.com/kubernetes-sigs/kueue/releases/download/"
            f"{self.version}/manifests.yaml"
        )


# --- flavors, cohort, teams ---------------------------------------------------------------


class NodeShape(Model):
    """The flavor's hardware as identical nodes; labels and taints come from the flavor."""

    count: NodeCount = Field(description="how many nodes of this shape the cluster has")
    resources: dict[ResourceName, Quantity] = Field(
        min_length=1,
        description="what each node offers to pods (its allocatable), e.g. nvidia.com/gpu: 8, "
        "cpu: 96, memory: 1Ti",
    )
    topology: dict[LabelName, NodeCount] | None = Field(
        default=None,
        description="with the flavor's topologyName: how many domains of each level (by level "
        "name) each domain of the level above holds, e.g. {block: 2, rack: 4} is 2 blocks of 4 "
        "racks; count must divide evenly. The sandbox labels its nodes so "
        "(docs/topology.md); a real cluster's nodes carry the cloud's labels",
    )


class Flavor(Model):
    name: ObjectName
    node_labels: dict[QualifiedName, LabelValue] | None = Field(default=None, max_length=8)
    node_taints: list[Taint] | None = Field(default=None, max_length=8)
    tolerations: list[Toleration] | None = Field(default=None, max_length=8)
    topology_name: ObjectName | None = Field(
        default=None,
        description="a topology under topologies: the flavor's nodes are placed by it "
        "(topology-aware scheduling); needs nodeLabels",
    )
    nodes: NodeShape | None = Field(
        default=None,
        description="the hardware as identical nodes; capacity follows (count x resources)",
    )
    capacity: dict[ResourceName, Quantity] | None = Field(
        default=None,
        description="total capacity behind the flavor, for stacks that only know totals; "
        "with nodes, it must agree with them. Team quotas must fit in it",
    )

    def effective_capacity(self) -> dict[str, Fraction]:
        """Capacity per resource: count x per-node resources, else the declared totals."""
        return flavor_hardware(self.model_dump(by_alias=True, exclude_none=True)).capacity

    def node_list(self, levels: Sequence[tuple[str, str]] = ()) -> list[Node]:
        """One Node per declared node (one holding the whole capacity for totals only),
        labelled by the (level name, node label) `levels` of its topology."""
        return flavor_nodes(self.model_dump(by_alias=True, exclude_none=True), levels)


class PriorityClass(Model):
    """A Kueue WorkloadPriorityClass: jobs name it in their `kueue.x-k8s.io/priority-class`
    label (so its name fits a label value); a higher value is admitted first and may preempt
    lower ones where the team's `preemption` allows it."""

    name: WorkloadPriorityClassName
    value: int = Field(ge=-(2**31), le=2**31 - 1, description="priority (int32); higher goes first")
    description: str | None = Field(default=None, max_length=1024)


class SharedVolume(Model):
    """A claim bound to a static PersistentVolume (which binds to exactly one claim)."""

    volume_name: ObjectName = Field(description="the static PersistentVolume to bind")
    claim_name: ObjectName
    namespace: LabelName
    size: StorageSize
    storage_class: ObjectName
    access_mode: Literal["ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"] = (
        "ReadWriteMany"
    )
    allow_destroy: bool = Field(default=False, description="false: `pulumi destroy` refuses")


class StackConfig(Model):
    kubernetes: KubernetesConfig = Field(default_factory=KubernetesConfig)
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    flavors: list[Flavor] = Field(default_factory=list)
    cohort: Cohort | None = Field(
        default=None, description="one cohort every team may join (a one-node tree)"
    )
    cohorts: list[CohortNode] = Field(
        default_factory=list,
        description="a tree of cohorts (Kueue Cohorts with parentName), with their own quota "
        "and fair-sharing weights (docs/organisations.md)",
    )
    teams: list[Team] = Field(default_factory=list)
    shared_storage: list[SharedVolume] = Field(default_factory=list)
    multi_kueue: MultiKueue | None = None
    priority_classes: list[PriorityClass] = Field(
        default_factory=list,
        description="WorkloadPriorityClasses jobs may name (label kueue.x-k8s.io/priority-class)",
    )
    topologies: list[Topology] = Field(
        default_factory=list,
        description="Kueue Topologies flavors name in topologyName (topology-aware scheduling)",
    )

    provisioning: Provisioning | None = Field(
        default=None,
        description="capacity on demand: ProvisioningRequest admission checks that hold a "
        "workload until the cluster autoscaler has its nodes (docs/capacity-on-demand.md)",
    )

    def levels_of(self, flavor: Flavor) -> list[tuple[str, str]]:
        """(level name, node label) of the flavor's topology, widest first; [] without one."""
        for topology in self.topologies:
            if topology.name == flavor.topology_name:
                return [(level.name, level.node_label) for level in topology.levels]
        return []


# --- entry points -------------------------------------------------------------------------


def _shadowed(problem: Problem, by_models: list[Problem]) -> bool:
    """A cross-check problem at (or below) a key the models already refused says it twice."""
    return any(problem.loc[: len(m.loc)] == m.loc for m in by_models)


def load_config(raw: Mapping[str, Any]) -> StackConfig:
    """Validate the stack config (top-level keys without the project prefix).

    Raises ConfigError listing every problem; returns the typed config otherwise.
    """
    problems: list[Problem] = []
    config: StackConfig | None = None
    if not isinstance(raw, Mapping):
        raise ConfigError([Problem((), "the stack config must be a mapping of keys")])
    try:
        config = StackConfig.model_validate(dict(raw))
    except ValidationError as exc:
        problems.extend(problems_from_validation(StackConfig, exc))
    except (TypeError, ValueError, RecursionError) as exc:  # pragma: no cover - defensive
        problems.append(Problem((), f"cannot read the stack config: {type(exc).__name__}"))
    problems.extend(p for p in cross_check(raw) if not _shadowed(p, problems))
    if problems or config is None:
        raise ConfigError(problems or [Problem((), "invalid stack config")])
    return config


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def raw_from_pulumi_config() -> dict[str, Any]:
    """Every `gpu-queues:*` key of the running stack, JSON values decoded."""
    from pulumi.runtime import config as runtime_config

    merged: dict[str, Any] = {}
    merged.update(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    prefix = f"{keys.PROJECT}:"
    return {k[len(prefix) :]: _decode(v) for k, v in merged.items() if k.startswith(prefix)}
