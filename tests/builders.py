"""Small chainable builders for the objects tests would otherwise write out as dict literals,
in the style of Kueue's own test wrappers (`MakeClusterQueue("cq").Cohort("c")...Obj()`).

Two families, each written by hand after its reference, never produced by the code under test:

* Kueue objects as the API server takes them (kueue.x-k8s.io/v1beta2): `ClusterQueue`,
  `Cohort`, `ResourceFlavor`, `LocalQueue`, and `FlavorQuotas` for a flavor's quotas inside a
  resource group. `.obj()` gives the object.
* The stack config `load_config` takes (the `gpu-queues:*` keys of a Pulumi.<stack>.yaml,
  without the prefix; docs/config-reference.md): `Stack`, `Team`, `Flavor`. `.raw()` gives
  the dict, `Stack.config()` the keys with their prefix, `Stack.yaml()` the stack file.

Every method changes the builder and returns it; `.obj()` / `.raw()` return a fresh deep copy,
so one builder can hand out several objects and a test may change what it gets.

Resources are keyword arguments: `gpu` is nvidia.com/gpu, any other keyword is the resource's
own name (cpu, memory); a name that is not an identifier goes through `FlavorQuotas.resource`
or a mapping (`.quota("h100", **{"example.com/nic": 1})`). Quotas keep the order they are
written in, as coveredResources does: Kueue wants each flavor's resources in that order.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Self

import yaml

GPU = "nvidia.com/gpu"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def resource_name(key: str) -> str:
    """The resource a keyword names: `gpu` is nvidia.com/gpu, the rest are as written."""
    return GPU if key == "gpu" else key


def _resources(given: Mapping[str, Any]) -> dict[str, Any]:
    return {resource_name(k): v for k, v in given.items()}


def _group_for(groups: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """The last resource group if it covers exactly `names`, else a new one (appended)."""
    if groups and groups[-1]["coveredResources"] == names:
        return groups[-1]
    group: dict[str, Any] = {"coveredResources": list(names), "flavors": []}
    groups.append(group)
    return group


def _flavor_in(groups: list[dict[str, Any]], flavor: str) -> dict[str, Any]:
    for group in groups:
        entries: list[dict[str, Any]] = group["flavors"]
        for entry in entries:
            if entry["name"] == flavor:
                return entry
    raise KeyError(f"no quota for flavor {flavor!r} yet: call quota({flavor!r}, ...) first")


# --- Kueue objects ---------------------------------------------------------------------------


class FlavorQuotas:
    """One entry of a resource group's `flavors`: `{"name", "resources": [{"name",
    "nominalQuota", "borrowingLimit"?, "lendingLimit"?}]}`."""

    def __init__(self, name: str) -> None:
        self._obj: dict[str, Any] = {"name": name, "resources": []}

    def resource(
        self, name: str, nominal: Any, *, borrowing: Any = None, lending: Any = None
    ) -> Self:
        quota: dict[str, Any] = {"name": name, "nominalQuota": nominal}
        if borrowing is not None:
            quota["borrowingLimit"] = borrowing
        if lending is not None:
            quota["lendingLimit"] = lending
        self._obj["resources"].append(quota)
        return self

    def entry(self, quota: Mapping[str, Any]) -> Self:
        """A resources entry as written: for the ones Kueue refuses (no nominalQuota, say)."""
        self._obj["resources"].append(copy.deepcopy(dict(quota)))
        return self

    def quotas(self, **nominal: Any) -> Self:
        for name, value in _resources(nominal).items():
            self.resource(name, value)
        return self

    def names(self) -> list[str]:
        return [r["name"] for r in self._obj["resources"]]

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


class _KueueObject:
    kind = ""

    def __init__(self, name: str, spec: dict[str, Any] | None = None) -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": KUEUE_API,
            "kind": self.kind,
            "metadata": {"name": name},
        }
        if spec is not None:
            self._obj["spec"] = spec

    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj.setdefault("spec", {})
        return spec

    def spec(self, **fields: Any) -> Self:
        """Spec fields as written (preemption, stopPolicy, ...), after the ones set so far."""
        self._spec().update(copy.deepcopy(fields))
        return self

    def annotations(self, given: Mapping[str, str]) -> Self:
        self._obj["metadata"].setdefault("annotations", {}).update(given)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


class _WithQuotas(_KueueObject):
    """`spec.resourceGroups`, as ClusterQueue and Cohort share it."""

    def _groups(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = self._spec().setdefault("resourceGroups", [])
        return groups

    def resource_group(self, *flavors: FlavorQuotas, covered: Iterable[str] | None = None) -> Self:
        """A resource group of these flavors; coveredResources are the first flavor's
        resources unless given (as Kueue's wrapper does)."""
        names = list(covered) if covered is not None else (flavors[0].names() if flavors else [])
        self._groups().append({"coveredResources": names, "flavors": [f.obj() for f in flavors]})
        return self

    def quota(self, flavor: str, **nominal: Any) -> Self:
        """The flavor's nominal quotas: in the last resource group if that covers the same
        resources, else in a new group covering them."""
        quotas = FlavorQuotas(flavor).quotas(**nominal)
        _group_for(self._groups(), quotas.names())["flavors"].append(quotas.obj())
        return self

    def _limit(self, field: str, flavor: str, limits: Mapping[str, Any]) -> Self:
        resources = {r["name"]: r for r in _flavor_in(self._groups(), flavor)["resources"]}
        for name, value in _resources(limits).items():
            resources[name][field] = value
        return self

    def borrowing(self, flavor: str, **limits: Any) -> Self:
        return self._limit("borrowingLimit", flavor, limits)

    def lending(self, flavor: str, **limits: Any) -> Self:
        return self._limit("lendingLimit", flavor, limits)


class ClusterQueue(_WithQuotas):
    """A ClusterQueue; like Kueue's MakeClusterQueue it starts with the empty
    namespaceSelector (every namespace), and with no resource group."""

    kind = "ClusterQueue"

    def __init__(self, name: str) -> None:
        super().__init__(name, {"namespaceSelector": {}, "resourceGroups": []})

    def cohort(self, name: Any) -> Self:
        self._spec()["cohortName"] = name
        return self

    def namespace_selector(self, selector: Any) -> Self:
        self._spec()["namespaceSelector"] = copy.deepcopy(selector)
        return self

    def preemption(self, **policy: Any) -> Self:
        self._spec()["preemption"] = copy.deepcopy(policy)
        return self


class Cohort(_WithQuotas):
    kind = "Cohort"

    def __init__(self, name: str) -> None:
        super().__init__(name, {})

    def parent(self, name: str) -> Self:
        self._spec()["parentName"] = name
        return self


class ResourceFlavor(_KueueObject):
    """A ResourceFlavor; it has no spec until something is set in one."""

    kind = "ResourceFlavor"

    def labels(self, given: Mapping[str, str]) -> Self:
        self._spec().setdefault("nodeLabels", {}).update(given)
        return self

    def taint(self, key: str, effect: str, value: str | None = None) -> Self:
        taint = {"key": key, "value": value, "effect": effect}
        self._spec().setdefault("nodeTaints", []).append(
            {k: v for k, v in taint.items() if v is not None}
        )
        return self

    def toleration(self, **fields: Any) -> Self:
        self._spec().setdefault("tolerations", []).append(dict(fields))
        return self

    def topology(self, name: str) -> Self:
        self._spec()["topologyName"] = name
        return self


class LocalQueue(_KueueObject):
    kind = "LocalQueue"

    def __init__(self, name: str, namespace: str, cluster_queue: Any) -> None:
        super().__init__(name, {"clusterQueue": cluster_queue})
        self._obj["metadata"]["namespace"] = namespace


# --- The stack config ------------------------------------------------------------------------


class Team:
    """A team of the stack config: by default namespace team-<name>, ClusterQueue <name>-cq
    and LocalQueue gpu-queue; quotas are `resources: {<resource>: {nominalQuota, ...}}`."""

    def __init__(self, name: str) -> None:
        self._raw: dict[str, Any] = {
            "name": name,
            "namespace": f"team-{name}",
            "clusterQueue": f"{name}-cq",
            "localQueue": "gpu-queue",
            "resourceGroups": [],
        }

    def namespace(self, name: str, *, adopt: bool = False) -> Self:
        self._raw["namespace"] = name
        if adopt:
            self._raw["adoptNamespace"] = True
        return self

    def cluster_queue(self, name: str) -> Self:
        self._raw["clusterQueue"] = name
        return self

    def local_queue(self, name: str) -> Self:
        self._raw["localQueue"] = name
        return self

    def cohort(self, name: str) -> Self:
        self._raw["cohort"] = name
        return self

    def set(self, **fields: Any) -> Self:
        """Other team keys as written (preemption, queueingStrategy, namespaceSelector...)."""
        self._raw.update(copy.deepcopy(fields))
        return self

    def quota(self, flavor: str, **nominal: Any) -> Self:
        """The flavor's nominal quotas: in the last resource group if that covers the same
        resources, else in a new group covering them."""
        resources = {name: {"nominalQuota": v} for name, v in _resources(nominal).items()}
        group = _group_for(self._raw["resourceGroups"], list(resources))
        group["flavors"].append({"name": flavor, "resources": resources})
        return self

    def _limit(self, field: str, flavor: str, limits: Mapping[str, Any]) -> Self:
        resources = _flavor_in(self._raw["resourceGroups"], flavor)["resources"]
        for name, value in _resources(limits).items():
            resources[name][field] = value
        return self

    def borrowing(self, flavor: str, **limits: Any) -> Self:
        return self._limit("borrowingLimit", flavor, limits)

    def lending(self, flavor: str, **limits: Any) -> Self:
        return self._limit("lendingLimit", flavor, limits)

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._raw)


class Flavor:
    """A flavor of the stack config: the ResourceFlavor's fields and the hardware behind it
    (nodes: count x resources, or a total capacity)."""

    def __init__(self, name: str) -> None:
        self._raw: dict[str, Any] = {"name": name}

    def labels(self, given: Mapping[str, str]) -> Self:
        self._raw.setdefault("nodeLabels", {}).update(given)
        return self

    def taint(self, key: str, effect: str, value: str | None = None) -> Self:
        taint = {"key": key, "value": value, "effect": effect}
        self._raw.setdefault("nodeTaints", []).append(
            {k: v for k, v in taint.items() if v is not None}
        )
        return self

    def toleration(self, **fields: Any) -> Self:
        self._raw.setdefault("tolerations", []).append(dict(fields))
        return self

    def nodes(self, count: int, **resources: Any) -> Self:
        self._raw["nodes"] = {"count": count, "resources": _resources(resources)}
        return self

    def capacity(self, **resources: Any) -> Self:
        self._raw["capacity"] = _resources(resources)
        return self

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._raw)


class Stack:
    """The stack config: `raw()` is what load_config takes, `yaml()` the Pulumi.<stack>.yaml."""

    def __init__(self) -> None:
        self._raw: dict[str, Any] = {}

    def kueue(self, **fields: Any) -> Self:
        self._raw.setdefault("kueue", {}).update(copy.deepcopy(fields))
        return self

    def flavor(self, *flavors: Flavor | str) -> Self:
        for f in flavors:
            self._raw.setdefault("flavors", []).append(
                (Flavor(f) if isinstance(f, str) else f).raw()
            )
        return self

    def cohort(self, name: str) -> Self:
        self._raw["cohort"] = {"name": name}
        return self

    def team(self, *teams: Team) -> Self:
        self._raw.setdefault("teams", []).extend(t.raw() for t in teams)
        return self

    def storage(self, **volume: Any) -> Self:
        self._raw.setdefault("sharedStorage", []).append(copy.deepcopy(volume))
        return self

    def set(self, key: str, value: Any) -> Self:
        """Another top-level key (kubernetes, multiKueue, priorityClasses...) as written."""
        self._raw[key] = copy.deepcopy(value)
        return self

    def raw(self) -> dict[str, Any]:
        return copy.deepcopy(self._raw)

    def config(self) -> dict[str, Any]:
        """The keys as a stack file's `config:` holds them, with the gpu-queues: prefix."""
        return {f"gpu-queues:{key}": value for key, value in self.raw().items()}

    def yaml(self) -> str:
        return yaml.safe_dump({"config": self.config()}, sort_keys=False)


# --- Shorthands for the tools' tests -----------------------------------------------------------


def gpu_flavor(name: str, gpus: int) -> Flavor:
    """A flavor of `gpus` GPUs in all, beside 256 cpu and 2Ti of memory."""
    return Flavor(name).capacity(cpu=256, memory="2Ti", gpu=gpus)


def gpu_team(name: str, gpus: Mapping[str, Mapping[str, Any]], cohort: str | None = "pool") -> Team:
    """A team with 8 cpu, 64Gi of memory and a GPU quota in each flavor of `gpus`, which maps
    a flavor to {"gpu": nominal, "borrow": borrowingLimit, "lend": lendingLimit} (limits
    optional); in `cohort` unless that is None."""
    team = Team(name)
    for flavor, quota in gpus.items():
        team.quota(flavor, cpu=8, memory="64Gi", gpu=quota["gpu"])
        if "borrow" in quota:
            team.borrowing(flavor, gpu=quota["borrow"])
        if "lend" in quota:
            team.lending(flavor, gpu=quota["lend"])
    if cohort:
        team.cohort(cohort)
    return team
