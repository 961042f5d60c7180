"""The stack config as the inputs of the multi-language GpuQueues component.

Generated from the config models by `make schema` (gpu_queues/config/typeddicts.py);
do not edit. The SDK's analyzer reads them into the component schema
(gpu_queues/components/hosted.py); the connection is the component's own kubeconfig and context
inputs."""

from typing import Any, Required, TypedDict

__all__ = [
    "AdmissionFairSharing",
    "AdmissionScope",
    "BorrowWithinCohort",
    "Cohort",
    "CohortNode",
    "ControllerConfig",
    "DashboardConfig",
    "FairSharing",
    "FairSharingWeight",
    "Flavor",
    "FlavorFungibility",
    "FlavorQuotas",
    "Integrations",
    "KueueConfig",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ManagerConfig",
    "ManifestSource",
    "MetricsConfig",
    "MultiKueue",
    "MultiKueueManagerRole",
    "MultiKueueSettings",
    "MultiKueueTeam",
    "MultiKueueWorker",
    "MultiKueueWorkerRole",
    "NodeSelectorUpdate",
    "NodeShape",
    "PodSetUpdates",
    "Preemption",
    "PriorityClass",
    "Provisioning",
    "ProvisioningCheck",
    "ProvisioningCheckUse",
    "ProvisioningRetry",
    "ProvisioningTeam",
    "RequeuingStrategy",
    "ResourceGroup",
    "ResourceQuota",
    "ResourceRequirements",
    "ServiceMonitorConfig",
    "SharedVolume",
    "StackConfig",
    "Subject",
    "Taint",
    "Team",
    "TeamLocalQueue",
    "Toleration",
    "Topology",
    "TopologyLevel",
    "WaitForPodsReady",
]


class AdmissionFairSharing(TypedDict, total=False):
    """Kueue's `admissionFairSharing` of the Configuration: present means enabled. Teams with `admissionScope` order their LocalQueues' jobs by each queue's decayed recent usage."""

    usageHalfLifeTime: Required[str]
    """how fast a LocalQueue's past usage is forgotten (half of it per period)"""
    usageSamplingInterval: Required[str]
    """how often usage is sampled"""
    resourceWeights: dict[str, float] | None
    """weight of each resource in the usage (default 1 each)"""


class AdmissionScope(TypedDict, total=False):
    """The keys of AdmissionScope."""

    admissionMode: Required[str]
    """One of "UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"."""


class BorrowWithinCohort(TypedDict, total=False):
    """The keys of BorrowWithinCohort."""

    policy: Required[str]
    """One of "Never", "LowerPriority"."""
    maxPriorityThreshold: int | None


class Cohort(TypedDict, total=False):
    """The one-cohort form (`gpu-queues:cohort`): a root without quota of its own."""

    name: Required[str]


class DashboardConfig(TypedDict, total=False):
    """A Grafana dashboard of the stack's queues, as JSON in a ConfigMap for Grafana's dashboard sidecar: per team, GPUs in use against nominal quota, pending workloads, admission wait percentiles, borrowed and lent GPUs, evictions. Its panels read the ClusterQueue resource metrics, so the program sets Kueue's `metrics.enableClusterQueueResources`; with kueue.install false, the preview checks that the installed Kueue sets it."""

    enabled: bool
    """true: install the dashboard ConfigMap"""
    namespace: str | None
    """where the ConfigMap goes (one the sidecar watches; it must exist); default: Kueue's namespace"""
    labels: dict[str, str]
    """the labels the sidecar looks for (its `label` and `labelValue`); given, they replace the default"""
    folder: str | None
    """the Grafana folder, written in folderAnnotation"""
    folderAnnotation: str
    """the annotation the sidecar reads the folder from (its folderAnnotation)"""
    title: str
    """the dashboard's title"""
    uid: str
    """the dashboard's uid in Grafana (links and the sidecar's updates keep to it)"""


class FairSharing(TypedDict, total=False):
    """Present means enabled."""

    preemptionStrategies: Required[list[str]]
    """how a fair-sharing preemption is judged, in order: LessThanOrEqualToFinalShare; LessThanInitialShare; LessThanOrEqualToFinalShare, LessThanInitialShare (Kueue's manager refuses to start without it, or with another list) (one of "LessThanOrEqualToFinalShare", "LessThanInitialShare")"""


class FairSharingWeight(TypedDict, total=False):
    """Kueue's `fairSharing` of a ClusterQueue, Cohort or LocalQueue."""

    weight: Required[Any]
    """share of unused quota relative to siblings (Kueue's default 1); 0: borrows only what no sibling with a weight wants"""


class FlavorFungibility(TypedDict, total=False):
    """The keys of FlavorFungibility."""

    whenCanBorrow: str | None
    """One of "MayStopSearch", "TryNextFlavor"."""
    whenCanPreempt: str | None
    """One of "MayStopSearch", "TryNextFlavor"."""


class Integrations(TypedDict, total=False):
    """The keys of Integrations."""

    frameworks: list[str] | None
    """e.g. batch/job, pod, jobset.x-k8s.io/jobset; unset: the release default"""
    externalFrameworks: list[str] | None
    labelKeysToCopy: list[str] | None


class LabelSelectorRequirement(TypedDict, total=False):
    """The keys of LabelSelectorRequirement."""

    key: Required[str]
    operator: Required[str]
    """One of "In", "NotIn", "Exists", "DoesNotExist"."""
    values: list[str] | None


class LabelSelector(TypedDict, total=False):
    """The keys of LabelSelector."""

    matchLabels: dict[str, str] | None
    matchExpressions: list[LabelSelectorRequirement] | None


class ManifestSource(TypedDict, total=False):
    """The keys of ManifestSource."""

    url: str | None
    """mirror of manifests.yaml; default: the official release URL"""
    path: str | None
    """local manifests.yaml, relative to the project root (air-gapped)"""
    sha256: str | None
    """expected sha256 of the manifest; mismatch: nothing is applied"""
    custom: bool | None
    """true: the manifest is not the release of kueue.version object for object (unset or false refuses it); it is then checked field by field against that release as rendered by `make kueue-manifest` (docs/kueue-manifest.md) and needs a reason"""
    reason: str | None
    """why the stack installs a custom manifest; required with custom: true, shown in the preview"""


class MultiKueueSettings(TypedDict, total=False):
    """Kueue's `multiKueue` section of the Configuration; read only on a MultiKueue manager."""

    gcInterval: str | None
    """how often remote objects whose local workload is gone are deleted (Kueue's default 1m; 0s: never)"""
    origin: str | None
    """label value marking this manager's objects on the workers, for its garbage collector; default on a manager stack: gpu-queues-<stack>, so two managers sharing a worker never delete each other's work"""
    workerLostTimeout: str | None
    """how long a workload stays admitted while its worker is unreachable (Kueue's default 15m)"""
    dispatcherName: str | None
    """how workers are nominated (Kueue's built-in dispatchers, config API MultiKueueDispatcherMode*): all at once (the default) or a few at a time (one of "kueue.x-k8s.io/multikueue-dispatcher-all-at-once", "kueue.x-k8s.io/multikueue-dispatcher-incremental")"""


class MultiKueueTeam(TypedDict, total=False):
    """A team of this stack whose ClusterQueue dispatches through MultiKueue."""

    name: Required[str]
    """a team under teams"""
    workers: list[str] | None
    """the workers it dispatches to; default: every worker"""


class MultiKueueWorker(TypedDict, total=False):
    """A worker cluster of a MultiKueue manager; its kubeconfig comes from `kubeconfig`, else from the `stack` (the multiKueueKubeconfig output of a worker stack of this project)."""

    name: Required[str]
    """the MultiKueueCluster's name on the manager"""
    stack: str | None
    """the worker's stack (<stack>, or <org>/<project>/<stack>): its multiKueueKubeconfig output is read through a StackReference unless kubeconfig is set, and when its Pulumi.<stack>.yaml is in this repo the dispatching teams are checked against it"""
    kubeconfig: str | None
    """kubeconfig Kueue dials the worker with (set it with --secret; plain text is refused); wins over the stack's output"""


class MultiKueueManagerRole(TypedDict, total=False):
    """This stack's cluster is a MultiKueue manager: teams submit here, jobs run on workers."""

    workers: Required[list[MultiKueueWorker]]
    teams: Required[list[MultiKueueTeam]]


class MultiKueueWorkerRole(TypedDict, total=False):
    """This stack's cluster is a MultiKueue worker: a service account with what a manager needs, and its kubeconfig as the secret output multiKueueKubeconfig."""

    server: str | None
    """the API server address managers dial; default: the server of this stack's own kubeconfig"""


class MultiKueue(TypedDict, total=False):
    """The keys of MultiKueue."""

    manager: MultiKueueManagerRole | None
    worker: MultiKueueWorkerRole | None


class NodeSelectorUpdate(TypedDict, total=False):
    """A node selector Kueue adds to the workload's pods once provisioned, its value read from the request's status.provisioningClassDetails."""

    key: Required[str]
    valueFromProvisioningClassDetail: Required[str]


class NodeShape(TypedDict, total=False):
    """The flavor's hardware as identical nodes; labels and taints come from the flavor."""

    count: Required[int]
    """how many nodes of this shape the cluster has"""
    resources: Required[dict[str, Any]]
    """what each node offers to pods (its allocatable), e.g. nvidia.com/gpu: 8, cpu: 96, memory: 1Ti"""
    topology: dict[str, int] | None
    """with the flavor's topologyName: how many domains of each level (by level name) each domain of the level above holds, e.g. {block: 2, rack: 4} is 2 blocks of 4 racks; count must divide evenly. The sandbox labels its nodes so (docs/topology.md); a real cluster's nodes carry the cloud's labels"""


class PodSetUpdates(TypedDict, total=False):
    """The keys of PodSetUpdates."""

    nodeSelector: Required[list[NodeSelectorUpdate]]


class Preemption(TypedDict, total=False):
    """The keys of Preemption."""

    reclaimWithinCohort: str | None
    """One of "Never", "LowerPriority", "Any"."""
    withinClusterQueue: str | None
    """One of "Never", "LowerPriority", "LowerOrNewerEqualPriority"."""
    borrowWithinCohort: BorrowWithinCohort | None


class PriorityClass(TypedDict, total=False):
    """A Kueue WorkloadPriorityClass: jobs name it in their `kueue.x-k8s.io/priority-class` label (so its name fits a label value); a higher value is admitted first and may preempt lower ones where the team's `preemption` allows it."""

    name: Required[str]
    value: Required[int]
    """priority (int32); higher goes first"""
    description: str | None


class ProvisioningCheckUse(TypedDict, total=False):
    """The keys of ProvisioningCheckUse."""

    name: Required[str]
    """a check under provisioning.checks"""
    onFlavors: list[str] | None
    """the flavors of the team's quota it runs for; unset: every flavor"""


class ProvisioningRetry(TypedDict, total=False):
    """How Kueue retries a failed ProvisioningRequest (unset: Kueue's defaults, 3 retries 60 s apart doubling up to 1800 s). Past the limit the workload is deactivated."""

    backoffLimitCount: int | None
    """retries after a failed request (0: none); default 3"""
    backoffBaseSeconds: int | None
    """the first wait before a retry, doubled each time; default 60"""
    backoffMaxSeconds: int | None
    """the longest wait; default 1800"""


class ProvisioningCheck(TypedDict, total=False):
    """An AdmissionCheck answered by the cluster autoscaler: Kueue creates a ProvisioningRequest for each workload that reserved quota and admits it once the request is Provisioned."""

    name: Required[str]
    """the AdmissionCheck's name, and its ProvisioningRequestConfig's"""
    provisioningClassName: Required[str]
    """the autoscaler's provisioning class, e.g. check-capacity.autoscaling.x-k8s.io or best-effort-atomic-scale-up.autoscaling.x-k8s.io"""
    parameters: dict[str, str] | None
    """what the class reads from the request"""
    managedResources: list[str] | None
    """only pod sets asking for one of these get a request (unset: every pod set); a workload asking for none passes the check at once"""
    retryStrategy: ProvisioningRetry | None
    podSetUpdates: PodSetUpdates | None
    podSetMergePolicy: str | None
    """how Kueue merges pod sets before asking the autoscaler (one of "IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")"""


class ProvisioningTeam(TypedDict, total=False):
    """A team whose ClusterQueue runs provisioning checks."""

    name: Required[str]
    """a team under teams"""
    checks: Required[list[ProvisioningCheckUse]]


class Provisioning(TypedDict, total=False):
    """The keys of Provisioning."""

    checks: Required[list[ProvisioningCheck]]
    teams: list[ProvisioningTeam]
    """which team queues use which check"""


class RequeuingStrategy(TypedDict, total=False):
    """The keys of RequeuingStrategy."""

    timestamp: str | None
    """One of "Eviction", "Creation"."""
    backoffLimitCount: int | None
    backoffBaseSeconds: int | None
    backoffMaxSeconds: int | None


class ResourceQuota(TypedDict, total=False):
    """The keys of ResourceQuota."""

    nominalQuota: Required[Any]
    """a Kubernetes quantity such as 64, 500m, 512Gi or 1e3"""
    borrowingLimit: Any | None
    lendingLimit: Any | None


class FlavorQuotas(TypedDict, total=False):
    """The keys of FlavorQuotas."""

    name: Required[str]
    """a flavor declared under flavors"""
    resources: Required[dict[str, ResourceQuota]]
    """one entry per covered resource of the group"""


class ResourceGroup(TypedDict, total=False):
    """The keys of ResourceGroup."""

    coveredResources: Required[list[str]]
    flavors: Required[list[FlavorQuotas]]


class CohortNode(TypedDict, total=False):
    """A Cohort of the tree (`gpu-queues:cohorts`), rendered as Kueue's Cohort object."""

    name: Required[str]
    parent: str | None
    """another cohort of the list (spec.parentName); unset: a root"""
    resourceGroups: list[ResourceGroup] | None
    """quota that belongs to the cohort itself, shared by its subtree (limits need a parent)"""
    fairSharing: FairSharingWeight | None


class ResourceRequirements(TypedDict, total=False):
    """The keys of ResourceRequirements."""

    requests: dict[str, Any] | None
    limits: dict[str, Any] | None


class ServiceMonitorConfig(TypedDict, total=False):
    """A Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1) for Kueue's metrics Service. Kueue serves /metrics over HTTPS and lets in only callers allowed `get` on it (controller-runtime's authentication and authorization filter, the release's kueue-metrics-reader ClusterRole): the stack adds a ServiceAccount bound to that role and a token Secret for it, which the ServiceMonitor presents as a bearer token. The preview fails when the cluster has no ServiceMonitor CRD."""

    enabled: bool
    """true: install the ServiceMonitor"""
    namespace: str | None
    """where the ServiceMonitor and its scraper's ServiceAccount and token live (a namespace your Prometheus watches; it must exist); default: Kueue's namespace"""
    labels: dict[str, str] | None
    """labels your Prometheus' serviceMonitorSelector picks, e.g. release: kube-prometheus-stack"""
    interval: str
    """how often to scrape"""
    scrapeTimeout: str | None
    """at most interval; default: Prometheus' own"""


class MetricsConfig(TypedDict, total=False):
    """The keys of MetricsConfig."""

    serviceMonitor: ServiceMonitorConfig
    dashboard: DashboardConfig


class SharedVolume(TypedDict, total=False):
    """A claim bound to a static PersistentVolume (which binds to exactly one claim)."""

    volumeName: Required[str]
    """the static PersistentVolume to bind"""
    claimName: Required[str]
    namespace: Required[str]
    size: Required[Any]
    """size above zero, e.g. 100Gi or 1Ti"""
    storageClass: Required[str]
    accessMode: str
    """One of "ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"."""
    allowDestroy: bool
    """false: `pulumi destroy` refuses"""


class Subject(TypedDict, total=False):
    """The keys of Subject."""

    kind: Required[str]
    """One of "User", "Group", "ServiceAccount"."""
    name: Required[str]
    namespace: str | None
    """ServiceAccount only; default: the team namespace"""


class Taint(TypedDict, total=False):
    """The keys of Taint."""

    key: Required[str]
    value: str | None
    effect: Required[str]
    """One of "NoSchedule", "PreferNoSchedule", "NoExecute"."""


class TeamLocalQueue(TypedDict, total=False):
    """One of a team's LocalQueues (`localQueues`), pointing at the team's ClusterQueue."""

    name: Required[str]
    namespace: Required[str]
    """one of the team's namespaces"""
    fairSharing: FairSharingWeight | None
    """the queue's weight in admission fair sharing (the team's admissionScope)"""


class Team(TypedDict, total=False):
    """A team: its namespaces, one ClusterQueue and its LocalQueues. `namespace` and `localQueue` are the one-namespace, one-queue form; with `namespaces` or `localQueues` they default to the first namespace and queue (the team's default, which tools that name one queue per team use)."""

    name: Required[str]
    namespace: str
    """the team's (default) namespace; with namespaces: one of them (default the first LocalQueue's, else the first)"""
    namespaces: list[str] | None
    """every namespace the team owns (its ClusterQueue selects exactly these)"""
    adoptNamespace: bool
    """true: the namespaces already exist; adopt them, never delete them"""
    clusterQueue: Required[str]
    localQueue: str
    """the team's (default) LocalQueue; with localQueues: the first of them"""
    localQueues: list[TeamLocalQueue] | None
    """several LocalQueues in the team's namespaces"""
    namespaceSelector: str
    """team: only the team's namespaces; all: {} (every namespace) (one of "team", "all")"""
    cohort: str | None
    """the cohort the team's ClusterQueue joins (a leaf or any node)"""
    resourceGroups: Required[list[ResourceGroup]]
    preemption: Preemption | None
    queueingStrategy: str | None
    """One of "BestEffortFIFO", "StrictFIFO"."""
    fairSharing: FairSharingWeight | None
    """the ClusterQueue's fair-sharing weight among its siblings"""
    flavorFungibility: FlavorFungibility | None
    stopPolicy: str | None
    """Hold: admit nothing new; HoldAndDrain: also evict what runs; None: admit (one of "None", "Hold", "HoldAndDrain")"""
    admissionScope: AdmissionScope | None
    """admission fair sharing among the team's LocalQueues (needs kueue.manager.admissionFairSharing)"""
    submitters: list[Subject]


class Toleration(TypedDict, total=False):
    """The keys of Toleration."""

    key: str | None
    operator: str | None
    """One of "Exists", "Equal"."""
    value: str | None
    effect: str | None
    """One of "NoSchedule", "PreferNoSchedule", "NoExecute"."""
    tolerationSeconds: int | None


class ControllerConfig(TypedDict, total=False):
    """Placement, size and image source of kueue-controller-manager: typed knobs the program lays over the verified release's Deployment (docs/kueue-manifest.md, the pod's fields). imageRegistry replaces registry.k8s.io in the image only (with registry.corp.example, v0.18.3 pulls registry.corp.example/kueue/kueue:v0.18.3): a value with a tag or digest (':' in the path, '@'), a scheme, '..', non-ASCII letters or no registry host (a '.', a port or localhost) is refused. priorityClassName must exist in the cluster; system-* is refused. imagePullSecrets are Secrets in kueue-system, at most 8, each once, never the release's kueue-webhook-server-cert nor the program's own multikueue-* Secrets (a pod naming a Secret lets its node read it)."""

    replicas: int | None
    resources: ResourceRequirements | None
    nodeSelector: dict[str, str] | None
    tolerations: list[Toleration] | None
    imageRegistry: str | None
    """registry mirror (host[:port][/path]) the controller image is pulled from instead of registry.k8s.io; its path, tag and digest stay the release's"""
    priorityClassName: str | None
    """PriorityClass of the controller pod (it must exist in the cluster; system-* classes are refused)"""
    imagePullSecrets: list[str] | None
    """names of docker-registry Secrets in kueue-system the kubelet pulls the controller image with (created out of band; never the release's own Secret)"""


class Flavor(TypedDict, total=False):
    """The keys of Flavor."""

    name: Required[str]
    nodeLabels: dict[str, str] | None
    nodeTaints: list[Taint] | None
    tolerations: list[Toleration] | None
    topologyName: str | None
    """a topology under topologies: the flavor's nodes are placed by it (topology-aware scheduling); needs nodeLabels"""
    nodes: NodeShape | None
    """the hardware as identical nodes; capacity follows (count x resources)"""
    capacity: dict[str, Any] | None
    """total capacity behind the flavor, for stacks that only know totals; with nodes, it must agree with them. Team quotas must fit in it"""


class TopologyLevel(TypedDict, total=False):
    """One level of a Topology: the node label whose value names a node's domain there."""

    name: Required[str]
    """what the stack calls the level (nodes.topology keys, the sandbox's label values <name>-<index>)"""
    nodeLabel: Required[str]
    """the node label holding the domain, e.g. cloud.example.com/topology-rack, or kubernetes.io/hostname (lowest level only)"""


class Topology(TypedDict, total=False):
    """A Kueue Topology: levels from the widest (e.g. block) to the narrowest (e.g. host)."""

    name: Required[str]
    levels: Required[list[TopologyLevel]]


class WaitForPodsReady(TypedDict, total=False):
    """Present means enabled (Kueue v1beta2 has no `enable` field)."""

    timeout: Required[str]
    blockAdmission: bool | None
    recoveryTimeout: str | None
    requeuingStrategy: RequeuingStrategy | None


class ManagerConfig(TypedDict, total=False):
    """Fields rendered into Kueue's manager Configuration (ConfigMap kueue-manager-config)."""

    integrations: Integrations | None
    waitForPodsReady: WaitForPodsReady | None
    fairSharing: FairSharing | None
    admissionFairSharing: AdmissionFairSharing | None
    """admission fair sharing among a ClusterQueue's LocalQueues, for teams with admissionScope (docs/organisations.md)"""
    managedJobsNamespaceSelector: LabelSelector | None
    manageJobsWithoutQueueName: bool | None
    featureGates: dict[str, bool] | None
    multiKueue: MultiKueueSettings | None


class KueueConfig(TypedDict, total=False):
    """The keys of KueueConfig."""

    version: str
    """Kueue release vX.Y.Z; default: toolchain/pins.env"""
    install: bool
    """false: Kueue is preinstalled, only wait for it"""
    manifest: ManifestSource
    readinessTimeoutSeconds: int
    """how long to wait for Kueue's webhooks to serve"""
    controller: ControllerConfig
    manager: ManagerConfig
    metrics: MetricsConfig
    """what a cluster with the Prometheus Operator and Grafana's dashboard sidecar reads: a ServiceMonitor for Kueue's metrics and a dashboard (both off)"""


class StackConfig(TypedDict, total=False):
    """The whole stack config: the keys under `gpu-queues:`."""

    kueue: KueueConfig
    flavors: list[Flavor]
    cohort: Cohort | None
    """one cohort every team may join (a one-node tree)"""
    cohorts: list[CohortNode]
    """a tree of cohorts (Kueue Cohorts with parentName), with their own quota and fair-sharing weights (docs/organisations.md)"""
    teams: list[Team]
    sharedStorage: list[SharedVolume]
    multiKueue: MultiKueue | None
    priorityClasses: list[PriorityClass]
    """WorkloadPriorityClasses jobs may name (label kueue.x-k8s.io/priority-class)"""
    topologies: list[Topology]
    """Kueue Topologies flavors name in topologyName (topology-aware scheduling)"""
    provisioning: Provisioning | None
    """capacity on demand: ProvisioningRequest admission checks that hold a workload until the cluster autoscaler has its nodes (docs/capacity-on-demand.md)"""
