"""The promotion rules: what each key under `gpu-queues:kueue` does when a stack is promoted
to the next (the table in docs/promotion.md states the same; a test keeps them equal).

  version                       travels, unset included (unset: both follow toolchain/pins.env)
  manifest.path/.url, .sha256   travel together when FROM and TO read their version's manifest
                                from the same place; otherwise TO keeps its own
  manager.integrations, .waitForPodsReady, .fairSharing, .admissionFairSharing,
  .featureGates, .multiKueue
  (but its origin)              travel when FROM sets them
  manifest.custom, .reason      stay: each environment decides for itself
  metrics                       stays: each cluster's own Prometheus and Grafana
  everything else               stays: the environment's own

A key no rule covers (a model field added since) is refused by the planning
(gpu_queues/tools/promotion_plan.py) until it has one here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

KeyPath = tuple[str, ...]


class Rule(enum.Enum):
    VERSION = "travels, unset included"
    CHECKSUM = "travels with the manifest it verifies"
    LOCATION = "stays, unless it is FROM's place for another version"
    TRAVELS = "travels when FROM sets it"
    STAYS = "stays: the environment's own"


@dataclass(frozen=True)
class KeyRule:
    path: KeyPath  # under gpu-queues:kueue
    rule: Rule
    why: str

    @property
    def dotted(self) -> str:
        return ".".join(("kueue", *self.path))


RULES: tuple[KeyRule, ...] = (
    KeyRule(
        ("version",),
        Rule.VERSION,
        "the release FROM deployed and tested; unset means toolchain/pins.env in both",
    ),
    KeyRule(
        ("manifest", "sha256"),
        Rule.CHECKSUM,
        "a property of the manifest bytes: copied when FROM and TO read their version's "
        "manifest from the same place",
    ),
    KeyRule(
        ("manifest", "url"),
        Rule.LOCATION,
        "an environment's mirror; a url that differs from FROM's only by the version follows it",
    ),
    KeyRule(
        ("manifest", "path"),
        Rule.LOCATION,
        "where an environment keeps its copy; .kueue/<version>/manifests.yaml follows the version",
    ),
    KeyRule(
        ("manifest", "custom"),
        Rule.STAYS,
        "each environment decides for itself to install a custom manifest (a promoted "
        "custom manifest without it is refused there)",
    ),
    KeyRule(("manifest", "reason"), Rule.STAYS, "why that environment installs a custom manifest"),
    KeyRule(("install",), Rule.STAYS, "whether that cluster's Kueue is preinstalled"),
    KeyRule(("readinessTimeoutSeconds",), Rule.STAYS, "how long that cluster takes"),
    KeyRule(("controller",), Rule.STAYS, "replicas, resources and placement on its nodes"),
    KeyRule(
        ("metrics",),
        Rule.STAYS,
        "that cluster's Prometheus and Grafana: whether it has them, their namespaces, "
        "selectors and folders",
    ),
    KeyRule(("manager", "integrations"), Rule.TRAVELS, "which job kinds Kueue manages"),
    KeyRule(("manager", "waitForPodsReady"), Rule.TRAVELS, "admission behaviour"),
    KeyRule(("manager", "fairSharing"), Rule.TRAVELS, "preemption behaviour"),
    KeyRule(
        ("manager", "admissionFairSharing"),
        Rule.TRAVELS,
        "the order of a team's LocalQueues (with admissionScope)",
    ),
    KeyRule(("manager", "featureGates"), Rule.TRAVELS, "Kueue features"),
    KeyRule(("manager", "multiKueue", "gcInterval"), Rule.TRAVELS, "MultiKueue's cleanup"),
    KeyRule(
        ("manager", "multiKueue", "workerLostTimeout"),
        Rule.TRAVELS,
        "how long work survives a lost worker",
    ),
    KeyRule(("manager", "multiKueue", "dispatcherName"), Rule.TRAVELS, "how workers are nominated"),
    KeyRule(
        ("manager", "multiKueue", "origin"),
        Rule.STAYS,
        "each manager's own mark on its workers' objects (docs/multikueue.md)",
    ),
    KeyRule(
        ("manager", "managedJobsNamespaceSelector"),
        Rule.STAYS,
        "lists that environment's team namespaces",
    ),
    KeyRule(
        ("manager", "manageJobsWithoutQueueName"),
        Rule.STAYS,
        "whether Kueue suspends that cluster's jobs without a queue (inside the selector "
        "above): depends on who else runs jobs there",
    ),
)


def rule_for(path: KeyPath) -> KeyRule | None:
    """The rule of a key under gpu-queues:kueue (a rule on a mapping covers its keys)."""
    return next((r for r in RULES if path[: len(r.path)] == r.path), None)


def unruled(kueue: Any, prefix: KeyPath = ()) -> Iterator[KeyPath]:
    """Keys under gpu-queues:kueue that no rule covers (a model field added since)."""
    if not isinstance(kueue, Mapping):
        return
    for key, value in kueue.items():
        path = (*prefix, str(key))
        if rule_for(path) is not None:
            continue
        if any(r.path[: len(path)] == path for r in RULES) and isinstance(value, Mapping):
            yield from unruled(value, path)
        else:
            yield path
