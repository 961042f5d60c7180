"""Which lists of a release's objects are sets (issue 24, item 2): a copy of the release with
such a list reordered is still the release; a list whose order carries meaning stays as it
is, and a reorder there is a difference. `unordered` gives the one spelling of an object the
digests (gpu_queues/release/digests.py) and the custom-manifest comparison
(gpu_queues/release/custom.py) are taken on.

Decided per field from what Kubernetes does with it:

- sets (any order means the same): a pod's `volumes` (a map by name), a container's
  `volumeMounts` (by mount path; the runtime orders nested mounts itself) and `ports` (by
  port and protocol), `capabilities.add`/`drop`, `tolerations` (each one tolerates on its
  own); label selectors' `matchExpressions` (ANDed) and their `values`; a Role's or
  ClusterRole's `rules` (their union is the grant) and each rule's `apiGroups`, `resources`,
  `verbs`, `resourceNames`, `nonResourceURLs`; `aggregationRule.clusterRoleSelectors` (a
  union); bindings' `subjects`; a ValidatingWebhookConfiguration's `webhooks` (called in
  parallel); any webhook's `rules` (a request matches any one) and each rule's `apiGroups`,
  `apiVersions`, `operations`, `resources`; a Service's `ports`.
- order carries meaning, kept: `command` and `args` (a later flag overrides an earlier one),
  `env` (a value's `$(VAR)` expands only variables listed before it), `containers` and
  `initContainers` (init containers run in order; the first container is the default one),
  `imagePullSecrets`, a MutatingWebhookConfiguration's `webhooks` (called in order, each
  seeing the previous one's patch), `admissionReviewVersions` (the API server uses the first
  it supports), and everything in a CRD (versions, schemas, printer columns): none of these
  is reordered, so a reorder there is a difference.

A set that holds one item twice keeps both: a duplicate is a difference too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

_Path = tuple[str, ...]
_SELECTOR: Final[tuple[_Path, ...]] = (("matchExpressions", "*", "values"), ("matchExpressions",))
_CONTAINER: Final[tuple[_Path, ...]] = (
    ("volumeMounts",),
    ("ports",),
    ("securityContext", "capabilities", "add"),
    ("securityContext", "capabilities", "drop"),
)
_POD: Final[tuple[_Path, ...]] = (
    ("volumes",),
    ("tolerations",),
    *(("containers", "*", *p) for p in _CONTAINER),
    *(("initContainers", "*", *p) for p in _CONTAINER),
)
_RULE: Final = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")
_ROLE: Final[tuple[_Path, ...]] = (
    *(("rules", "*", f) for f in _RULE),
    ("rules",),
    *(("aggregationRule", "clusterRoleSelectors", "*", *p) for p in _SELECTOR),
    ("aggregationRule", "clusterRoleSelectors"),
)
_WEBHOOK: Final[tuple[_Path, ...]] = (
    *(("webhooks", "*", "rules", "*", f) for f in ("apiGroups", "apiVersions", "operations")),
    ("webhooks", "*", "rules", "*", "resources"),
    ("webhooks", "*", "rules"),
    *(("webhooks", "*", s, *p) for s in ("namespaceSelector", "objectSelector") for p in _SELECTOR),
)
_WORKLOADS: Final = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})
SETS: Final[dict[str, tuple[_Path, ...]]] = {
    **{
        kind: (
            *(("spec", "template", "spec", *p) for p in _POD),
            *(("spec", "selector", *p) for p in _SELECTOR),
        )
        for kind in _WORKLOADS
    },
    "Pod": tuple(("spec", *p) for p in _POD),
    "Role": _ROLE,
    "ClusterRole": _ROLE,
    "RoleBinding": (("subjects",),),
    "ClusterRoleBinding": (("subjects",),),
    "ValidatingWebhookConfiguration": (*_WEBHOOK, ("webhooks",)),
    "MutatingWebhookConfiguration": _WEBHOOK,
    "Service": (("spec", "ports"),),
}


_SPELL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _key(value: Any) -> tuple[str, Any, str]:
    """A sort key that orders any JSON values: scalars by type then value (no str/int
    comparison), mappings by their name (volumes, mounts, ports) then spelling, lists by
    their spelling."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return (type(value).__name__, value, "")
    name = value.get("name") if isinstance(value, dict) else None
    return ("~", name if isinstance(name, str) else "", _SPELL(value))


def _tree(paths: tuple[_Path, ...]) -> dict[str, Any]:
    """The paths as one tree: a key descends into a mapping's field, "*" into every item of a
    list, "" marks the list there as a set."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for part in path:
            node = node.setdefault(part, {})
        node[""] = True
    return root


_TREES: Final = {kind: _tree(paths) for kind, paths in SETS.items()}


def _apply(node: Any, tree: dict[str, Any]) -> Any:
    """`node` with the sets `tree` marks in one order, each list's items done before the list
    is sorted. Only what changes is copied (shallowly); `node` itself is never changed."""
    if isinstance(node, list):
        items = [_apply(item, tree["*"]) for item in node] if "*" in tree else node
        return sorted(items, key=_key) if tree.get("") and len(items) > 1 else items
    if not isinstance(node, dict):
        return node
    out = node
    for key, sub in tree.items():
        if key not in ("", "*") and key in node:
            value = _apply(node[key], sub)
            if value is not node[key]:
                out = dict(out) if out is node else out
                out[key] = value
    return out


def unordered(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with each list that is a set (SETS, by kind) in one order. The result shares
    what it does not reorder with `obj`: copy it before changing it."""
    tree = _TREES.get(str(obj.get("kind")))
    out: Any = _apply(obj, tree) if tree else obj
    return dict(out) if out is obj else out
