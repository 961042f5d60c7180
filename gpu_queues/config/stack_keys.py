"""The stack config keys as TypedDicts (camelCase, as Pulumi.<stack>.yaml holds them).

Generated from the config models by `make schema` (gpu_queues/config/typeddicts.py);
do not edit. Hand a StackConfigKeys to GpuQueuesArgs.from_config."""

from typing import Literal, Required, TypedDict

__all__ = [
    "AdmissionFairSharingKeys",
    "AdmissionScopeKeys",
    "BorrowWithinCohortKeys",
    "CohortKeys",
    "CohortNodeKeys",
    "ControllerConfigKeys",
    "DashboardConfigKeys",
    "FairSharingKeys",
    "FairSharingWeightKeys",
    "FlavorFungibilityKeys",
    "FlavorKeys",
    "FlavorQuotasKeys",
    "IntegrationsKeys",
    "KubernetesConfigKeys",
    "KueueConfigKeys",
    "LabelSelectorKeys",
    "LabelSelectorRequirementKeys",
    "ManagerConfigKeys",
    "ManifestSourceKeys",
    "MetricsConfigKeys",
    "MultiKueueKeys",
    "MultiKueueManagerRoleKeys",
    "MultiKueueSettingsKeys",
    "MultiKueueTeamKeys",
    "MultiKueueWorkerKeys",
    "MultiKueueWorkerRoleKeys",
    "NodeSelectorUpdateKeys",
    "NodeShapeKeys",
    "PodSetUpdatesKeys",
    "PreemptionKeys",
    "PriorityClassKeys",
    "ProvisioningCheckKeys",
    "ProvisioningCheckUseKeys",
    "ProvisioningKeys",
    "ProvisioningRetryKeys",
    "ProvisioningTeamKeys",
    "RequeuingStrategyKeys",
    "ResourceGroupKeys",
    "ResourceQuotaKeys",
    "ResourceRequirementsKeys",
    "ServiceMonitorConfigKeys",
    "SharedVolumeKeys",
    "StackConfigKeys",
    "SubjectKeys",
    "TaintKeys",
    "TeamKeys",
    "TeamLocalQueueKeys",
    "TolerationKeys",
    "TopologyKeys",
    "TopologyLevelKeys",
    "WaitForPodsReadyKeys",
]


class AdmissionFairSharingKeys(TypedDict, total=False):
    """Kueue's `admissionFairSharing` of the Configuration: present means enabled. Teams with
    `admissionScope` order their LocalQueues' jobs by each queue's decayed recent usage."""

    usageHalfLifeTime: Required[str]
    """how fast a LocalQueue's past usage is forgotten (half of it per period)"""
    usageSamplingInterval: Required[str]
    """how often usage is sampled"""
    resourceWeights: dict[str, float] | None
    """weight of each resource in the usage (default 1 each)"""


class AdmissionScopeKeys(TypedDict, total=False):
    """The keys of AdmissionScope."""

    admissionMode: Required[Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]]


class BorrowWithinCohortKeys(TypedDict, total=False):
    """The keys of BorrowWithinCohort."""

    policy: Required[Literal["Never", "LowerPriority"]]
    maxPriorityThreshold: int | None


class CohortKeys(TypedDict, total=False):
    """The one-cohort form (`gpu-queues:cohort`): a root without quota of its own."""

    name: Required[str]


class DashboardConfigKeys(TypedDict, total=False):
    """A Grafana dashboard of the stack's queues, as JSON in a ConfigMap for Grafana's dashboard
    sidecar: per team, GPUs in use against nominal quota, pending workloads, admission wait
    percentiles, borrowed and lent GPUs, evictions. Its panels read the ClusterQueue resource
    metrics, so the program sets Kueue's `metrics.enableClusterQueueResources`; with kueue.install
    false, the preview checks that the installed Kueue sets it."""

    enabled: bool
    """true: install the dashboard ConfigMap"""
    namespace: str | None
    """where the ConfigMap goes (one the sidecar watches; it must exist); default: Kueue's
    namespace"""
    labels: dict[str, str]
    """the labels the sidecar looks for (its `label` and `labelValue`); given, they replace the
    default"""
    folder: str | None
    """the Grafana folder, written in folderAnnotation"""
    folderAnnotation: str
    """the annotation the sidecar reads the folder from (its folderAnnotation)"""
    title: str
    """the dashboard's title"""
    uid: str
    """the dashboard's uid in Grafana (links and the sidecar's updates keep to it)"""


class FairSharingKeys(TypedDict, total=False):
    """Present means enabled."""

    preemptionStrategies: Required[list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]]]
    """how a fair-sharing preemption is judged, in order: LessThanOrEqualToFinalShare;
    LessThanInitialShare; LessThanOrEqualToFinalShare, LessThanInitialShare (Kueue's manager refuses
    to start without it, or with another list)"""


class FairSharingWeightKeys(TypedDict, total=False):
    """Kueue's `fairSharing` of a ClusterQueue, Cohort or LocalQueue."""

    weight: Required[str | float]
    """share of unused quota relative to siblings (Kueue's default 1); 0: borrows only what no
    sibling with a weight wants"""


class FlavorFungibilityKeys(TypedDict, total=False):
    """The keys of FlavorFungibility."""

    whenCanBorrow: Literal["MayStopSearch", "TryNextFlavor"] | None
    whenCanPreempt: Literal["MayStopSearch", "TryNextFlavor"] | None


class IntegrationsKeys(TypedDict, total=False):
    """The keys of Integrations."""

    frameworks: list[str] | None
    """e.g. batch/job, pod, jobset.x-k8s.io/jobset; unset: the release default"""
    externalFrameworks: list[str] | None
    labelKeysToCopy: list[str] | None


class KubernetesConfigKeys(TypedDict, total=False):
    """How the explicit Kubernetes provider connects. Unset kubeconfig: the ambient KUBECONFIG."""

    kubeconfig: str | None
    """kubeconfig content (set it as a secret); unset: $KUBECONFIG"""
    context: str | None
    """kubeconfig context to use"""


class LabelSelectorRequirementKeys(TypedDict, total=False):
    """The keys of LabelSelectorRequirement."""

    key: Required[str]
    operator: Required[Literal["In", "NotIn", "Exists", "DoesNotExist"]]
    values: list[str] | None


class LabelSelectorKeys(TypedDict, total=False):
    """The keys of LabelSelector."""

    matchLabels: dict[str, str] | None
    matchExpressions: list[LabelSelectorRequirementKeys] | None


class ManifestSourceKeys(TypedDict, total=False):
    """The keys of ManifestSource."""

    url: str | None
    """mirror of manifests.yaml; default: the official release URL"""
    path: str | None
    """local manifests.yaml, relative to the project root (air-gapped)"""
    sha256: str | None
    """expected sha256 of the manifest; mismatch: nothing is applied"""
    custom: bool | None
    """true: the manifest is not the release of kueue.version object for object (unset or false
    refuses it); it is then checked field by field against that release as rendered by `make
    kueue-manifest` (docs/kueue-manifest.md) and needs a reason"""
    reason: str | None
    """why the stack installs a custom manifest; required with custom: true, shown in the preview"""


class MultiKueueSettingsKeys(TypedDict, total=False):
    """Kueue's `multiKueue` section of the Configuration; read only on a MultiKueue manager."""

    gcInterval: str | None
    """how often remote objects whose local workload is gone are deleted (Kueue's default 1m; 0s:
    never)"""
    origin: str | None
    """label value marking this manager's objects on the workers, for its garbage collector; default
    on a manager stack: gpu-queues-<stack>, so two managers sharing a worker never delete each
    other's work"""
    workerLostTimeout: str | None
    """how long a workload stays admitted while its worker is unreachable (Kueue's default 15m)"""
    dispatcherName: Literal["kueue.x-k8s.io/multikueue-dispatcher-all-at-once", "kueue.x-k8s.io/multikueue-dispatcher-incremental"] | None
    """how workers are nominated (Kueue's built-in dispatchers, config API
    MultiKueueDispatcherMode*): all at once (the default) or a few at a time"""


class MultiKueueTeamKeys(TypedDict, total=False):
    """A team of this stack whose ClusterQueue dispatches through MultiKueue."""

    name: Required[str]
    """a team under teams"""
    workers: list[str] | None
    """the workers it dispatches to; default: every worker"""


class MultiKueueWorkerKeys(TypedDict, total=False):
    """A worker cluster of a MultiKueue manager; its kubeconfig comes from `kubeconfig`, else from
    the `stack` (the multiKueueKubeconfig output of a worker stack of this project)."""

    name: Required[str]
    """the MultiKueueCluster's name on the manager"""
    stack: str | None
    """the worker's stack (<stack>, or <org>/<project>/<stack>): its multiKueueKubeconfig output is
    read through a StackReference unless kubeconfig is set, and when its Pulumi.<stack>.yaml is in
    this repo the dispatching teams are checked against it"""
    kubeconfig: str | None
    """kubeconfig Kueue dials the worker with (set it with --secret; plain text is refused); wins
    over the stack's output"""


class MultiKueueManagerRoleKeys(TypedDict, total=False):
    """This stack's cluster is a MultiKueue manager: teams submit here, jobs run on workers."""

    workers: Required[list[MultiKueueWorkerKeys]]
    teams: Required[list[MultiKueueTeamKeys]]


class MultiKueueWorkerRoleKeys(TypedDict, total=False):
    """This stack's cluster is a MultiKueue worker: a service account with what a manager needs, and
    its kubeconfig as the secret output multiKueueKubeconfig."""

    server: str | None
    """the API server address managers dial; default: the server of this stack's own kubeconfig"""


class MultiKueueKeys(TypedDict, total=False):
    """The keys of MultiKueue."""

    manager: MultiKueueManagerRoleKeys | None
    worker: MultiKueueWorkerRoleKeys | None


class NodeSelectorUpdateKeys(TypedDict, total=False):
    """A node selector Kueue adds to the workload's pods once provisioned, its value read from the
    request's status.provisioningClassDetails."""

    key: Required[str]
    valueFromProvisioningClassDetail: Required[str]


class NodeShapeKeys(TypedDict, total=False):
    """The flavor's hardware as identical nodes; labels and taints come from the flavor."""

    count: Required[int]
    """how many nodes of this shape the cluster has"""
    resources: Required[dict[str, str | float]]
    """what each node offers to pods (its allocatable), e.g. nvidia.com/gpu: 8, cpu: 96, memory:
    1Ti"""
    topology: dict[str, int] | None
    """with the flavor's topologyName: how many domains of each level (by level name) each domain of
    the level above holds, e.g. {block: 2, rack: 4} is 2 blocks of 4 racks; count must divide
    evenly. The sandbox labels its nodes so (docs/topology.md); a real cluster's nodes carry the
    cloud's labels"""


class PodSetUpdatesKeys(TypedDict, total=False):
    """The keys of PodSetUpdates."""

    nodeSelector: Required[list[NodeSelectorUpdateKeys]]


class PreemptionKeys(TypedDict, total=False):
    """The keys of Preemption."""

    reclaimWithinCohort: Literal["Never", "LowerPriority", "Any"] | None
    withinClusterQueue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None
    borrowWithinCohort: BorrowWithinCohortKeys | None


class PriorityClassKeys(TypedDict, total=False):
    """A Kueue WorkloadPriorityClass: jobs name it in their `kueue.x-k8s.io/priority-class` label
    (so its name fits a label value); a higher value is admitted first and may preempt lower ones
    where the team's `preemption` allows it."""

    name: Required[str]
    value: Required[int]
    """priority (int32); higher goes first"""
    description: str | None


class ProvisioningCheckUseKeys(TypedDict, total=False):
    """The keys of ProvisioningCheckUse."""

    name: Required[str]
    """a check under provisioning.checks"""
    onFlavors: list[str] | None
    """the flavors of the team's quota it runs for; unset: every flavor"""


class ProvisioningRetryKeys(TypedDict, total=False):
    """How Kueue retries a failed ProvisioningRequest (unset: Kueue's defaults, 3 retries 60 s apart
    doubling up to 1800 s). Past the limit the workload is deactivated."""

    backoffLimitCount: int | None
    """retries after a failed request (0: none); default 3"""
    backoffBaseSeconds: int | None
    """the first wait before a retry, doubled each time; default 60"""
    backoffMaxSeconds: int | None
    """the longest wait; default 1800"""


class ProvisioningCheckKeys(TypedDict, total=False):
    """An AdmissionCheck answered by the cluster autoscaler: Kueue creates a ProvisioningRequest for
    each workload that reserved quota and admits it once the request is Provisioned."""

    name: Required[str]
    """the AdmissionCheck's name, and its ProvisioningRequestConfig's"""
    provisioningClassName: Required[str]
    """the autoscaler's provisioning class, e.g. check-capacity.autoscaling.x-k8s.io or
    best-effort-atomic-scale-up.autoscaling.x-k8s.io"""
    parameters: dict[str, str] | None
    """what the class reads from the request"""
    managedResources: list[str] | None
    """only pod sets asking for one of these get a request (unset: every pod set); a workload asking
    for none passes the check at once"""
    retryStrategy: ProvisioningRetryKeys | None
    podSetUpdates: PodSetUpdatesKeys | None
    podSetMergePolicy: Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    """how Kueue merges pod sets before asking the autoscaler"""


class ProvisioningTeamKeys(TypedDict, total=False):
    """A team whose ClusterQueue runs provisioning checks."""

    name: Required[str]
    """a team under teams"""
    checks: Required[list[ProvisioningCheckUseKeys]]


class ProvisioningKeys(TypedDict, total=False):
    """The keys of Provisioning."""

    checks: Required[list[ProvisioningCheckKeys]]
    teams: list[ProvisioningTeamKeys]
    """which team queues use which check"""


class RequeuingStrategyKeys(TypedDict, total=False):
    """The keys of RequeuingStrategy."""

    timestamp: Literal["Eviction", "Creation"] | None
    backoffLimitCount: int | None
    backoffBaseSeconds: int | None
    backoffMaxSeconds: int | None


class ResourceQuotaKeys(TypedDict, total=False):
    """The keys of ResourceQuota."""

    nominalQuota: Required[str | float]
    """a Kubernetes quantity such as 64, 500m, 512Gi or 1e3"""
    borrowingLimit: str | float | None
    lendingLimit: str | float | None


class FlavorQuotasKeys(TypedDict, total=False):
    """The keys of FlavorQuotas."""

    name: Required[str]
    """a flavor declared under flavors"""
    resources: Required[dict[str, ResourceQuotaKeys]]
    """one entry per covered resource of the group"""


class ResourceGroupKeys(TypedDict, total=False):
    """The keys of ResourceGroup."""

    coveredResources: Required[list[str]]
    flavors: Required[list[FlavorQuotasKeys]]


class CohortNodeKeys(TypedDict, total=False):
    """A Cohort of the tree (`gpu-queues:cohorts`), rendered as Kueue's Cohort object."""

    name: Required[str]
    parent: str | None
    """another cohort of the list (spec.parentName); unset: a root"""
    resourceGroups: list[ResourceGroupKeys] | None
    """quota that belongs to the cohort itself, shared by its subtree (limits need a parent)"""
    fairSharing: FairSharingWeightKeys | None


class ResourceRequirementsKeys(TypedDict, total=False):
    """The keys of ResourceRequirements."""

    requests: dict[str, str | float] | None
    limits: dict[str, str | float] | None


class ServiceMonitorConfigKeys(TypedDict, total=False):
    """A Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1) for Kueue's metrics Service.
    Kueue serves /metrics over HTTPS and lets in only callers allowed `get` on it
    (controller-runtime's authentication and authorization filter, the release's
    kueue-metrics-reader ClusterRole): the stack adds a ServiceAccount bound to that role and a
    token Secret for it, which the ServiceMonitor presents as a bearer token. The preview fails when
    the cluster has no ServiceMonitor CRD."""

    enabled: bool
    """true: install the ServiceMonitor"""
    namespace: str | None
    """where the ServiceMonitor and its scraper's ServiceAccount and token live (a namespace your
    Prometheus watches; it must exist); default: Kueue's namespace"""
    labels: dict[str, str] | None
    """labels your Prometheus' serviceMonitorSelector picks, e.g. release: kube-prometheus-stack"""
    interval: str
    """how often to scrape"""
    scrapeTimeout: str | None
    """at most interval; default: Prometheus' own"""


class MetricsConfigKeys(TypedDict, total=False):
    """The keys of MetricsConfig."""

    serviceMonitor: ServiceMonitorConfigKeys
    dashboard: DashboardConfigKeys


class SharedVolumeKeys(TypedDict, total=False):
    """A claim bound to a static PersistentVolume (which binds to exactly one claim)."""

    volumeName: Required[str]
    """the static PersistentVolume to bind"""
    claimName: Required[str]
    namespace: Required[str]
    size: Required[str | float]
    """size above zero, e.g. 100Gi or 1Ti"""
    storageClass: Required[str]
    accessMode: Literal["ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"]
    allowDestroy: bool
    """false: `pulumi destroy` refuses"""


class SubjectKeys(TypedDict, total=False):
    """The keys of Subject."""

    kind: Required[Literal["User", "Group", "ServiceAccount"]]
    name: Required[str]
    namespace: str | None
    """ServiceAccount only; default: the team namespace"""


class TaintKeys(TypedDict, total=False):
    """The keys of Taint."""

    key: Required[str]
    value: str | None
    effect: Required[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]]


class TeamLocalQueueKeys(TypedDict, total=False):
    """One of a team's LocalQueues (`localQueues`), pointing at the team's ClusterQueue."""

    name: Required[str]
    namespace: Required[str]
    """one of the team's namespaces"""
    fairSharing: FairSharingWeightKeys | None
    """the queue's weight in admission fair sharing (the team's admissionScope)"""


class TeamKeys(TypedDict, total=False):
    """A team: its namespaces, one ClusterQueue and its LocalQueues. `namespace` and `localQueue`
    are the one-namespace, one-queue form; with `namespaces` or `localQueues` they default to the
    first namespace and queue (the team's default, which tools that name one queue per team use)."""

    name: Required[str]
    namespace: str
    """the team's (default) namespace; with namespaces: one of them (default the first LocalQueue's,
    else the first)"""
    namespaces: list[str] | None
    """every namespace the team owns (its ClusterQueue selects exactly these)"""
    adoptNamespace: bool
    """true: the namespaces already exist; adopt them, never delete them"""
    clusterQueue: Required[str]
    localQueue: str
    """the team's (default) LocalQueue; with localQueues: the first of them"""
    localQueues: list[TeamLocalQueueKeys] | None
    """several LocalQueues in the team's namespaces"""
    namespaceSelector: Literal["team", "all"]
    """team: only the team's namespaces; all: {} (every namespace)"""
    cohort: str | None
    """the cohort the team's ClusterQueue joins (a leaf or any node)"""
    resourceGroups: Required[list[ResourceGroupKeys]]
    preemption: PreemptionKeys | None
    queueingStrategy: Literal["BestEffortFIFO", "StrictFIFO"] | None
    fairSharing: FairSharingWeightKeys | None
    """the ClusterQueue's fair-sharing weight among its siblings"""
    flavorFungibility: FlavorFungibilityKeys | None
    stopPolicy: Literal["None", "Hold", "HoldAndDrain"] | None
    """Hold: admit nothing new; HoldAndDrain: also evict what runs; None: admit"""
    admissionScope: AdmissionScopeKeys | None
    """admission fair sharing among the team's LocalQueues (needs
    kueue.manager.admissionFairSharing)"""
    submitters: list[SubjectKeys]


class TolerationKeys(TypedDict, total=False):
    """The keys of Toleration."""

    key: str | None
    operator: Literal["Exists", "Equal"] | None
    value: str | None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None
    tolerationSeconds: int | None


class ControllerConfigKeys(TypedDict, total=False):
    """Placement, size and image source of kueue-controller-manager: typed knobs the program lays
    over the verified release's Deployment (docs/kueue-manifest.md, the pod's fields). imageRegistry
    replaces registry.k8s.io in the image only (with registry.corp.example, v0.18.3 pulls
    registry.corp.example/kueue/kueue:v0.18.3): a value with a tag or digest (':' in the path, '@'),
    a scheme, '..', non-ASCII letters or no registry host (a '.', a port or localhost) is refused.
    priorityClassName must exist in the cluster; system-* is refused. imagePullSecrets are Secrets
    in kueue-system, at most 8, each once, never the release's kueue-webhook-server-cert nor the
    program's own multikueue-* Secrets (a pod naming a Secret lets its node read it)."""

    replicas: int | None
    resources: ResourceRequirementsKeys | None
    nodeSelector: dict[str, str] | None
    tolerations: list[TolerationKeys] | None
    imageRegistry: str | None
    """registry mirror (host[:port][/path]) the controller image is pulled from instead of
    registry.k8s.io; its path, tag and digest stay the release's"""
    priorityClassName: str | None
    """PriorityClass of the controller pod (it must exist in the cluster; system-* classes are
    refused)"""
    imagePullSecrets: list[str] | None
    """names of docker-registry Secrets in kueue-system the kubelet pulls the controller image with
    (created out of band; never the release's own Secret)"""


class FlavorKeys(TypedDict, total=False):
    """The keys of Flavor."""

    name: Required[str]
    nodeLabels: dict[str, str] | None
    nodeTaints: list[TaintKeys] | None
    tolerations: list[TolerationKeys] | None
    topologyName: str | None
    """a topology under topologies: the flavor's nodes are placed by it (topology-aware scheduling);
    needs nodeLabels"""
    nodes: NodeShapeKeys | None
    """the hardware as identical nodes; capacity follows (count x resources)"""
    capacity: dict[str, str | float] | None
    """total capacity behind the flavor, for stacks that only know totals; with nodes, it must agree
    with them. Team quotas must fit in it"""


class TopologyLevelKeys(TypedDict, total=False):
    """One level of a Topology: the node label whose value names a node's domain there."""

    name: Required[str]
    """what the stack calls the level (nodes.topology keys, the sandbox's label values
    <name>-<index>)"""
    nodeLabel: Required[str]
    """the node label holding the domain, e.g. cloud.example.com/topology-rack, or
    kubernetes.io/hostname (lowest level only)"""


class TopologyKeys(TypedDict, total=False):
    """A Kueue Topology: levels from the widest (e.g. block) to the narrowest (e.g. host)."""

    name: Required[str]
    levels: Required[list[TopologyLevelKeys]]


class WaitForPodsReadyKeys(TypedDict, total=False):
    """Present means enabled (Kueue v1beta2 has no `enable` field)."""

    timeout: Required[str]
    blockAdmission: bool | None
    recoveryTimeout: str | None
    requeuingStrategy: RequeuingStrategyKeys | None


class ManagerConfigKeys(TypedDict, total=False):
    """Fields rendered into Kueue's manager Configuration (ConfigMap kueue-manager-config)."""

    integrations: IntegrationsKeys | None
    waitForPodsReady: WaitForPodsReadyKeys | None
    fairSharing: FairSharingKeys | None
    admissionFairSharing: AdmissionFairSharingKeys | None
    """admission fair sharing among a ClusterQueue's LocalQueues, for teams with admissionScope
    (docs/organisations.md)"""
    managedJobsNamespaceSelector: LabelSelectorKeys | None
    manageJobsWithoutQueueName: bool | None
    featureGates: dict[str, bool] | None
    multiKueue: MultiKueueSettingsKeys | None


class KueueConfigKeys(TypedDict, total=False):
    """The keys of KueueConfig."""

    version: str
    """Kueue release vX.Y.Z; default: toolchain/pins.env"""
    install: bool
    """false: Kueue is preinstalled, only wait for it"""
    manifest: ManifestSourceKeys
    readinessTimeoutSeconds: int
    """how long to wait for Kueue's webhooks to serve"""
    controller: ControllerConfigKeys
    manager: ManagerConfigKeys
    metrics: MetricsConfigKeys
    """what a cluster with the Prometheus Operator and Grafana's dashboard sidecar reads: a
    ServiceMonitor for Kueue's metrics and a dashboard (both off)"""


class StackConfigKeys(TypedDict, total=False):
    """The whole stack config: the keys under `gpu-queues:`."""

    kubernetes: KubernetesConfigKeys
    kueue: KueueConfigKeys
    flavors: list[FlavorKeys]
    cohort: CohortKeys | None
    """one cohort every team may join (a one-node tree)"""
    cohorts: list[CohortNodeKeys]
    """a tree of cohorts (Kueue Cohorts with parentName), with their own quota and fair-sharing
    weights (docs/organisations.md)"""
    teams: list[TeamKeys]
    sharedStorage: list[SharedVolumeKeys]
    multiKueue: MultiKueueKeys | None
    priorityClasses: list[PriorityClassKeys]
    """WorkloadPriorityClasses jobs may name (label kueue.x-k8s.io/priority-class)"""
    topologies: list[TopologyKeys]
    """Kueue Topologies flavors name in topologyName (topology-aware scheduling)"""
    provisioning: ProvisioningKeys | None
    """capacity on demand: ProvisioningRequest admission checks that hold a workload until the
    cluster autoscaler has its nodes (docs/capacity-on-demand.md)"""
