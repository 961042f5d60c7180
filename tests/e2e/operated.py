"""The objects of a kind an operator runs beside Kueue on the sandbox (JobSet, LeaderWorkerSet,
RayCluster and the rest: sandbox/operators.py), as the e2e tests of each drive them in `default`:
made and deleted through the API, their Workloads (Kueue's, owned by the object) and their pods
(by the label the operator puts on each), and a fixture's wipe of what they leave. A
TrainJob's are here too: the Trainer makes a JobSet of it, named after it, whose pods carry
that JobSet's label."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sandbox.walkthrough import KubeSession

NS = "default"


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    pod_label: str
    """The label the operator puts on each of the object's pods, valued with its name."""
    names: tuple[str, ...] = ()
    """Where other kinds' pods carry the same label (a TrainJob's pods carry its JobSet's, as
    every JobSet's do), the names its tests give: the kind's pods are those objects' only."""


class Operated:
    """The objects of one kind in `default`."""

    def __init__(self, k: KubeSession, kind: Kind) -> None:
        self.k, self.kind = k, kind
        self._api = (kind.group, kind.version, NS, kind.plural)

    def create(self, manifest: dict[str, Any]) -> None:
        self.k.custom.create_namespaced_custom_object(*self._api, manifest)

    def get(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.k.custom.get_namespaced_custom_object(*self._api, name)
        return got

    def suspended(self, name: str) -> bool:
        """Suspended, as the kind says it: `spec.suspend` (JobSet, RayCluster) or
        `spec.runPolicy.suspend` (the Kubeflow jobs)."""
        spec = self.get(name)["spec"]
        return bool(spec.get("suspend", (spec.get("runPolicy") or {}).get("suspend")))

    def delete(self, name: str) -> None:
        self.k.custom.delete_namespaced_custom_object(
            *self._api, name, propagation_policy="Background"
        )

    def names(self, plural: str | None = None) -> list[str]:
        """The objects' names (of another kind of the same API group and version: plural)."""
        group, version, ns, own = self._api
        items = self.k.custom.list_namespaced_custom_object(group, version, ns, plural or own)
        return [str(o["metadata"]["name"]) for o in items["items"]]

    def workloads(self, name: str | None = None) -> list[dict[str, Any]]:
        """Kueue's Workloads of the object `name` (of every object of the kind: None)."""
        return [
            wl
            for wl in self.k.workloads(NS)
            if any(
                o["kind"] == self.kind.kind and name in (None, o["name"])
                for o in wl["metadata"].get("ownerReferences", [])
            )
        ]

    def workload(self, name: str) -> dict[str, Any] | None:
        return next(iter(self.workloads(name)), None)

    def pods(self, name: str | None = None) -> list[Any]:
        """The object's pods (every object's of the kind: None)."""
        label, names = self.kind.pod_label, self.kind.names
        if name is not None:
            selector = f"{label}={name}"
        else:
            selector = f"{label} in ({','.join(names)})" if names else label
        items: list[Any] = self.k.core.list_namespaced_pod(NS, label_selector=selector).items
        return items

    def running(self, name: str) -> list[Any]:
        return [p for p in self.pods(name) if p.status.phase == "Running"]


def wiped(k: KubeSession, kind: Kind, also: tuple[str, ...] = ()) -> Iterator[Operated]:
    """A fixture's body: the kind's objects, none left before the test or after it (nor their
    Workloads or pods, nor any object of the kinds of the same API group `also` names, by
    plural: a TrainJob's runtimes; other modules' objects in `default` are theirs to clean)."""
    objects = Operated(k, kind)
    group, version, ns, _ = objects._api

    def wipe() -> None:
        for name in objects.names():
            objects.delete(name)
        for plural in also:
            for name in objects.names(plural):
                k.custom.delete_namespaced_custom_object(group, version, ns, plural, name)
        k.wait(
            f"no {kind.plural}, nor their workloads or pods, in {NS}",
            lambda: not (objects.names() or objects.workloads() or objects.pods()),
        )

    wipe()
    yield objects
    wipe()
