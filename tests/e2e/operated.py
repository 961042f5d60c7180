"""The objects of a kind an operator runs beside Kueue on the sandbox (JobSet, LeaderWorkerSet,
RayCluster and the rest: sandbox/operators.py), as the e2e tests of each drive them in `default`:
made and deleted through the API, their Workloads (Kueue's, owned by the object) and their pods
(by the label the operator puts on each), and a fixture's wipe of what they leave."""

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

    def names(self) -> list[str]:
        items = self.k.custom.list_namespaced_custom_object(*self._api)["items"]
        return [str(o["metadata"]["name"]) for o in items]

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
        label = self.kind.pod_label
        selector = label if name is None else f"{label}={name}"
        items: list[Any] = self.k.core.list_namespaced_pod(NS, label_selector=selector).items
        return items

    def running(self, name: str) -> list[Any]:
        return [p for p in self.pods(name) if p.status.phase == "Running"]


def wiped(k: KubeSession, kind: Kind) -> Iterator[Operated]:
    """A fixture's body: the kind's objects, none left before the test or after it (nor their
    Workloads or pods; other modules' objects in `default` are theirs to clean)."""
    objects = Operated(k, kind)

    def wipe() -> None:
        for name in objects.names():
            objects.delete(name)
        k.wait(
            f"no {kind.plural}, nor their workloads or pods, in {NS}",
            lambda: not (objects.names() or objects.workloads() or objects.pods()),
        )

    wipe()
    yield objects
    wipe()
