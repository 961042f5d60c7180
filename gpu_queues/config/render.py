"""The Kueue objects the program declares, as plain dicts: one render for every use.

The components register exactly what these functions return; the config check runs the
validation core (gpu_queues/kueue/) on the same output before anything is registered; tests feed it
to the policy pack. Each function takes a config entry in its stack-config form (camelCase
keys) or the typed model (dumped to that form), and never raises on malformed input: the
config check renders the raw config too, so that every problem is reported at once, and the
models report the malformed values themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from gpu_queues import keys
from gpu_queues.config.hardware import flavor_hardware
from gpu_queues.kueue.capacity import CAPACITY_ANNOTATION, encode_capacity
from gpu_queues.values import as_list

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Kueue's MultiKueue admission check controller (apis/kueue/v1beta2: MultiKueueControllerName).
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# Kueue's provisioning admission check controller (ProvisioningRequestControllerName).
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
KUEUE_GROUP = "kueue.x-k8s.io"
# Where Kueue reads a MultiKueueCluster's kubeconfig: this key of a Secret in its namespace.
KUBECONFIG_SECRET_KEY = "kubeconfig"

Entry = Mapping[str, Any] | BaseModel


def config_form(entry: Entry) -> Mapping[str, Any]:
    """A config entry as written in the stack file (camelCase keys, unset keys absent)."""
    if isinstance(entry, BaseModel):
        return entry.model_dump(by_alias=True, exclude_none=True)
    return entry if isinstance(entry, Mapping) else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _object(kind: str, metadata: dict[str, Any], spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": keys.KUEUE_API_VERSION, "kind": kind, "metadata": metadata}
    if spec is not None:
        obj["spec"] = spec
    return obj


def resource_flavor(entry: Entry) -> dict[str, Any]:
    """A ResourceFlavor; its spec is absent when the flavor sets nothing (as in the guide).

    The flavor's effective capacity goes into the CAPACITY_ANNOTATION, so the policy pack's
    quota-within-capacity rule checks the program's own output.
    """
    flavor = config_form(entry)
    metadata: dict[str, Any] = {
        "name": flavor.get("name"),
        "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT},
    }
    capacity = flavor_hardware(flavor).capacity
    if capacity:
        metadata["annotations"] = {CAPACITY_ANNOTATION: encode_capacity(capacity)}
    spec = {
        key: flavor[key]
        for key in ("nodeLabels", "nodeTaints", "tolerations", "topologyName")
        if flavor.get(key) not in (None, {}, [])
    }
    return _object("ResourceFlavor", metadata, spec or None)


# --- topology-aware scheduling (docs/topology.md) ------------------------------------------


def topology(entry: Entry) -> dict[str, Any]:
    """A Topology: its levels' node labels, widest first (the stack's level names stay in the
    stack: Kueue knows levels by label only)."""
    raw = config_form(entry)
    levels = [{"nodeLabel": _map(level).get("nodeLabel")} for level in as_list(raw.get("levels"))]
    metadata = {"name": raw.get("name"), "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}}
    return _object("Topology", metadata, {"levels": levels})


def cohort(entry: Entry) -> dict[str, Any]:
    """A Cohort: the one-cohort form has no spec fields (a root without quota); a node of the
    tree (`cohorts`) its parentName, own resourceGroups and fairSharing."""
    node = config_form(entry)
    spec: dict[str, Any] = {}
    if node.get("parent") is not None:
        spec["parentName"] = node["parent"]
    if node.get("resourceGroups") is not None:
        spec["resourceGroups"] = resource_groups(node.get("resourceGroups"))
    if node.get("fairSharing") is not None:
        spec["fairSharing"] = node["fairSharing"]
    metadata = {"name": node.get("name"), "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}}
    return _object("Cohort", metadata, spec)


def cohorts(config: Entry) -> list[dict[str, Any]]:
    """The stack's Cohorts: the one-cohort form, then the tree's nodes in config order."""
    raw = config_form(config)
    objects = (
        [cohort(raw[keys.KEY_COHORT])] if isinstance(raw.get(keys.KEY_COHORT), Mapping) else []
    )
    return objects + [cohort(_map(c)) for c in as_list(raw.get(keys.KEY_COHORTS))]


def team_labels(team: Mapping[str, Any]) -> dict[str, Any]:
    return {keys.LABEL_MANAGED_BY: keys.PROJECT, keys.LABEL_TEAM: team.get("name")}


def team_namespaces(team: Mapping[str, Any]) -> list[Any]:
    """Every namespace a team owns, its default first: `namespaces` (with `namespace`, which
    defaults to one of them), else its one `namespace`."""
    names = [team.get("namespace"), *as_list(team.get("namespaces"))]
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def team_local_queues(team: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A team's LocalQueues as {name, namespace[, fairSharing]}: `localQueues`, else its one
    `localQueue` in its namespace."""
    if team.get("localQueues") is not None:
        return [_map(q) for q in as_list(team.get("localQueues"))]
    return [{"name": team.get("localQueue"), "namespace": team.get("namespace")}]


def namespace_selector(team: Mapping[str, Any]) -> dict[str, Any]:
    """Exactly the team's namespaces, or `{}` (all namespaces) when config asks for it by name.

    Never null: a null selector admits from no namespace at all.
    """
    if team.get("namespaceSelector") == "all":
        return {}
    names = team_namespaces(team)
    if len(names) <= 1:
        return {"matchLabels": {NAMESPACE_NAME_LABEL: team.get("namespace")}}
    expression = {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": names}
    return {"matchExpressions": [expression]}


def _quotas(covered: list[Any], resources: Any) -> list[dict[str, Any]]:
    """Kueue wants one quota per covered resource, in coveredResources order; quotas of
    resources that are not covered follow, so the validation core can name them."""
    quotas = _map(resources)
    names = [c for c in covered if isinstance(c, str) and c in quotas]
    names += [str(n) for n in quotas if n not in names]
    out = []
    for name in names:
        quota = _map(quotas.get(name))
        entry: dict[str, Any] = {"name": name}
        for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
            if quota.get(key) is not None:
                entry[key] = quota[key]
        out.append(entry)
    return out


def resource_groups(raw_groups: Any) -> list[dict[str, Any]]:
    """Resource groups as Kueue has them (a ClusterQueue's or a Cohort's)."""
    groups = []
    for raw_group in as_list(raw_groups):
        group = _map(raw_group)
        covered = as_list(group.get("coveredResources"))
        flavors = []
        for raw_flavor in as_list(group.get("flavors")):
            flavor = _map(raw_flavor)
            flavors.append(
                {"name": flavor.get("name"), "resources": _quotas(covered, flavor.get("resources"))}
            )
        groups.append({"coveredResources": list(covered), "flavors": flavors})
    return groups


# Team keys copied into its ClusterQueue's spec as written, after queueingStrategy.
QUEUE_FIELDS = ("flavorFungibility", "fairSharing", "stopPolicy", "admissionScope")


def cluster_queue_spec(entry: Entry) -> dict[str, Any]:
    team = config_form(entry)
    spec: dict[str, Any] = {}
    if team.get("cohort") is not None:
        spec["cohortName"] = team["cohort"]
    spec["namespaceSelector"] = namespace_selector(team)
    spec["resourceGroups"] = resource_groups(team.get("resourceGroups"))
    if team.get("preemption") is not None:
        spec["preemption"] = team["preemption"]
    if team.get("queueingStrategy") is not None:
        spec["queueingStrategy"] = team["queueingStrategy"]
    for key in QUEUE_FIELDS:
        if team.get(key) is not None:
            spec[key] = team[key]
    return spec


CheckRule = str | Mapping[str, Any]
"""An admission check of a ClusterQueue: its name (for all flavors), or a rule as Kueue's
admissionChecksStrategy holds it ({name, onFlavors})."""


def cluster_queue(
    entry: Entry, admission_checks: Sequence[CheckRule] | None = None
) -> dict[str, Any]:
    """A team's ClusterQueue; `admission_checks` (admission_checks_of) go in its
    admissionChecksStrategy, which is absent without them."""
    team = config_form(entry)
    metadata = {"name": team.get("clusterQueue"), "labels": team_labels(team)}
    spec = cluster_queue_spec(team)
    if admission_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [
                {"name": rule} if isinstance(rule, str) else dict(rule) for rule in admission_checks
            ]
        }
    return _object("ClusterQueue", metadata, spec)


def local_queue(entry: Entry, queue: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A team's LocalQueue pointing at its ClusterQueue: `queue` (one of team_local_queues),
    else the team's default one in its namespace."""
    team = config_form(entry)
    queue = queue if queue is not None else team_local_queues(team)[0]
    metadata = {
        "name": queue.get("name"),
        "namespace": queue.get("namespace"),
        "labels": team_labels(team),
    }
    spec: dict[str, Any] = {"clusterQueue": team.get("clusterQueue")}
    if queue.get("fairSharing") is not None:
        spec["fairSharing"] = queue["fairSharing"]
    return _object("LocalQueue", metadata, spec)


def local_queues(entry: Entry) -> list[dict[str, Any]]:
    """Every LocalQueue of a team, in config order."""
    team = config_form(entry)
    return [local_queue(team, q) for q in team_local_queues(team)]


def workload_priority_class(entry: Entry) -> dict[str, Any]:
    """A WorkloadPriorityClass: `value` and `description` are top-level fields (no spec)."""
    pc = config_form(entry)
    obj = _object(
        "WorkloadPriorityClass",
        {"name": pc.get("name"), "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}},
        None,
    )
    obj["value"] = pc.get("value")
    if pc.get("description") is not None:
        obj["description"] = pc["description"]
    return obj


# --- MultiKueue (a manager's objects) ---------------------------------------------------


def multikueue_manager(config: Entry) -> Mapping[str, Any]:
    """The stack's `multiKueue.manager` entry, {} when the stack is no manager."""
    return _map(_map(config_form(config).get(keys.KEY_MULTI_KUEUE)).get("manager"))


def multikueue_check_name(team_name: object) -> str:
    """The AdmissionCheck (and its MultiKueueConfig) of a dispatching team."""
    return f"multikueue-{team_name}"


def kubeconfig_secret_name(worker_name: object) -> str:
    """The Secret in Kueue's namespace holding a worker's kubeconfig."""
    return f"multikueue-{worker_name}"


def dispatch_workers(manager: Mapping[str, Any], team: Mapping[str, Any]) -> list[Any]:
    """The workers a dispatching team's jobs go to: its own list, else every worker."""
    if team.get("workers") is not None:
        return as_list(team.get("workers"))
    return [_map(w).get("name") for w in as_list(manager.get("workers"))]


def admission_checks_of(config: Entry, team_name: object) -> list[CheckRule]:
    """The admission checks of a team's ClusterQueue: its MultiKueue check, if it dispatches,
    then its provisioning checks (provisioning_rules_of)."""
    teams = as_list(multikueue_manager(config).get("teams"))
    rules: list[CheckRule] = [
        multikueue_check_name(team_name) for t in teams if _map(t).get("name") == team_name
    ]
    return rules + provisioning_rules_of(config, team_name)


def _mk_metadata(name: str) -> dict[str, Any]:
    return {"name": name, "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}}


def multikueue_cluster(worker: Entry) -> dict[str, Any]:
    """A worker as the manager's Kueue knows it: a kubeconfig in a Secret of its namespace."""
    name = config_form(worker).get("name")
    source = {"location": kubeconfig_secret_name(name), "locationType": "Secret"}
    return _object(
        "MultiKueueCluster", _mk_metadata(str(name)), {"clusterSource": {"kubeConfig": source}}
    )


def multikueue_config(team: Entry, workers: list[Any]) -> dict[str, Any]:
    """The workers a team's admission check dispatches to."""
    name = multikueue_check_name(config_form(team).get("name"))
    return _object("MultiKueueConfig", _mk_metadata(name), {"clusters": list(workers)})


def admission_check(team: Entry) -> dict[str, Any]:
    """A team's MultiKueue admission check, parameterised by its MultiKueueConfig."""
    name = multikueue_check_name(config_form(team).get("name"))
    spec = {
        "controllerName": MULTIKUEUE_CONTROLLER,
        "parameters": {"apiGroup": KUEUE_GROUP, "kind": "MultiKueueConfig", "name": name},
    }
    return _object("AdmissionCheck", _mk_metadata(name), spec)


def multikueue_objects(config: Entry) -> list[dict[str, Any]]:
    """A manager's MultiKueue objects: a MultiKueueCluster per worker, then per dispatching team
    its MultiKueueConfig and AdmissionCheck. None for a stack that is no manager."""
    manager = multikueue_manager(config)
    objects = [multikueue_cluster(_map(w)) for w in as_list(manager.get("workers"))]
    for raw_team in as_list(manager.get("teams")):
        team = _map(raw_team)
        objects += [multikueue_config(team, dispatch_workers(manager, team)), admission_check(team)]
    return objects


def kueue_objects(config: Entry) -> list[dict[str, Any]]:
    """Every Kueue object of a stack config: topologies, flavors, cohorts, priority classes, per
    team CQ and LQs, then a MultiKueue manager's objects and the provisioning checks."""
    raw = config_form(config)
    objects = [topology(_map(t)) for t in as_list(raw.get(keys.KEY_TOPOLOGIES))]
    objects += [resource_flavor(_map(f)) for f in as_list(raw.get(keys.KEY_FLAVORS))]
    objects += cohorts(raw)
    objects += [
        workload_priority_class(_map(p)) for p in as_list(raw.get(keys.KEY_PRIORITY_CLASSES))
    ]
    for team in as_list(raw.get(keys.KEY_TEAMS)):
        checks = admission_checks_of(raw, _map(team).get("name"))
        objects += [cluster_queue(_map(team), checks), *local_queues(_map(team))]
    return objects + multikueue_objects(raw) + provisioning_objects(raw)


# --- capacity on demand (ProvisioningRequest admission checks) ---------------------------


def provisioning(config: Entry) -> Mapping[str, Any]:
    """The stack's `provisioning` entry, {} when it has none."""
    return _map(config_form(config).get(keys.KEY_PROVISIONING))


def provisioning_rules_of(config: Entry, team_name: object) -> list[CheckRule]:
    """A team's provisioning checks as admissionChecksStrategy rules, in config order: the
    check's name, with onFlavors when the team limits it to some flavors."""
    rules: list[CheckRule] = []
    for raw_team in as_list(provisioning(config).get("teams")):
        team = _map(raw_team)
        if team.get("name") != team_name:
            continue
        for raw_use in as_list(team.get("checks")):
            use = _map(raw_use)
            rule: dict[str, Any] = {"name": use.get("name")}
            if use.get("onFlavors") is not None:
                rule["onFlavors"] = list(as_list(use.get("onFlavors")))
            rules.append(rule)
    return rules


def provisioning_request_config(check: Entry) -> dict[str, Any]:
    """A check's ProvisioningRequestConfig: what Kueue puts in each ProvisioningRequest."""
    entry = config_form(check)
    spec = {
        key: entry[key]
        for key in (
            "provisioningClassName",
            "parameters",
            "managedResources",
            "retryStrategy",
            "podSetUpdates",
            "podSetMergePolicy",
        )
        if entry.get(key) is not None
    }
    return _object("ProvisioningRequestConfig", _mk_metadata(str(entry.get("name"))), spec)


def provisioning_admission_check(check: Entry) -> dict[str, Any]:
    """A check's AdmissionCheck, answered by Kueue's provisioning controller and
    parameterised by the ProvisioningRequestConfig of the same name."""
    name = str(config_form(check).get("name"))
    spec = {
        "controllerName": PROVISIONING_CONTROLLER,
        "parameters": {"apiGroup": KUEUE_GROUP, "kind": "ProvisioningRequestConfig", "name": name},
    }
    return _object("AdmissionCheck", _mk_metadata(name), spec)


def provisioning_objects(config: Entry) -> list[dict[str, Any]]:
    """Per provisioning check its ProvisioningRequestConfig, then its AdmissionCheck."""
    objects = []
    for raw_check in as_list(provisioning(config).get("checks")):
        check = _map(raw_check)
        if isinstance(check.get("name"), str):  # the models report a check without a name
            objects += [provisioning_request_config(check), provisioning_admission_check(check)]
    return objects
