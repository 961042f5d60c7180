"""The Kueue objects the program declares, as plain dicts: one render for every use.

The components register exactly what these functions return; the config check runs the
validation core (kueue_rules) on the same output before anything is registered; tests feed it
to the policy pack. Each function takes a config entry in its stack-config form (camelCase
keys) or the typed model (dumped to that form), and never raises on malformed input: the
config check renders the raw config too, so that every problem is reported at once, and the
models report the malformed values themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from components import keys
from components.capacity import CAPACITY_ANNOTATION, encode_capacity
from components.hardware import flavor_hardware

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

Entry = Mapping[str, Any] | BaseModel


def config_form(entry: Entry) -> Mapping[str, Any]:
    """A config entry as written in the stack file (camelCase keys, unset keys absent)."""
    if isinstance(entry, BaseModel):
        return entry.model_dump(by_alias=True, exclude_none=True)
    return entry if isinstance(entry, Mapping) else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


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
        for key in ("nodeLabels", "nodeTaints", "tolerations")
        if flavor.get(key) not in (None, {}, [])
    }
    return _object("ResourceFlavor", metadata, spec or None)


def cohort(entry: Entry) -> dict[str, Any]:
    """The Cohort teams borrow from and lend to (no quota of its own)."""
    name = config_form(entry).get("name")
    return _object("Cohort", {"name": name, "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}}, {})


def team_labels(team: Mapping[str, Any]) -> dict[str, Any]:
    return {keys.LABEL_MANAGED_BY: keys.PROJECT, keys.LABEL_TEAM: team.get("name")}


def namespace_selector(team: Mapping[str, Any]) -> dict[str, Any]:
    """Only the team's namespace, or `{}` (all namespaces) when config asks for it by name.

    Never null: a null selector admits from no namespace at all.
    """
    if team.get("namespaceSelector") == "all":
        return {}
    return {"matchLabels": {NAMESPACE_NAME_LABEL: team.get("namespace")}}


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


def cluster_queue_spec(entry: Entry) -> dict[str, Any]:
    team = config_form(entry)
    spec: dict[str, Any] = {}
    if team.get("cohort") is not None:
        spec["cohortName"] = team["cohort"]
    spec["namespaceSelector"] = namespace_selector(team)
    groups = []
    for raw_group in _list(team.get("resourceGroups")):
        group = _map(raw_group)
        covered = _list(group.get("coveredResources"))
        flavors = []
        for raw_flavor in _list(group.get("flavors")):
            flavor = _map(raw_flavor)
            flavors.append(
                {"name": flavor.get("name"), "resources": _quotas(covered, flavor.get("resources"))}
            )
        groups.append({"coveredResources": list(covered), "flavors": flavors})
    spec["resourceGroups"] = groups
    if team.get("preemption") is not None:
        spec["preemption"] = team["preemption"]
    if team.get("queueingStrategy") is not None:
        spec["queueingStrategy"] = team["queueingStrategy"]
    return spec


def cluster_queue(entry: Entry) -> dict[str, Any]:
    """A team's ClusterQueue."""
    team = config_form(entry)
    metadata = {"name": team.get("clusterQueue"), "labels": team_labels(team)}
    return _object("ClusterQueue", metadata, cluster_queue_spec(team))


def local_queue(entry: Entry) -> dict[str, Any]:
    """A team's LocalQueue, in the team namespace, pointing at its ClusterQueue."""
    team = config_form(entry)
    metadata = {
        "name": team.get("localQueue"),
        "namespace": team.get("namespace"),
        "labels": team_labels(team),
    }
    return _object("LocalQueue", metadata, {"clusterQueue": team.get("clusterQueue")})


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


def kueue_objects(config: Entry) -> list[dict[str, Any]]:
    """Every Kueue object of a stack config: flavors, cohort, priority classes, then per team
    CQ and LQ."""
    raw = config_form(config)
    objects = [resource_flavor(_map(f)) for f in _list(raw.get(keys.KEY_FLAVORS))]
    if isinstance(raw.get(keys.KEY_COHORT), Mapping):
        objects.append(cohort(raw[keys.KEY_COHORT]))
    objects += [workload_priority_class(_map(p)) for p in _list(raw.get(keys.KEY_PRIORITY_CLASSES))]
    for team in _list(raw.get(keys.KEY_TEAMS)):
        objects += [cluster_queue(_map(team)), local_queue(_map(team))]
    return objects
