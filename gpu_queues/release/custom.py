"""A custom Kueue manifest, checked field by field against the release it claims to be (issue
24, item 3).

A manifest whose objects all match the digests of `kueue.version` is the release. Anything else
is refused unless the stack says `kueue.manifest.custom: true` with a reason; then it is
compared here with the genuine release (gpu_queues/release/reference.py), both prepared with
the stack's settings (gpu_queues/release/manifest.py prepare_manifest), so a field a typed
knob sets (replicas, the manager's resources, nodeSelector, tolerations, the manager
Configuration's keys) is the stack's on both sides and compares equal:

- every object of the release is present;
- every object of the release is equal to the release's, field by field, metadata included
  (the controller's pod and containers, webhooks, Services, APIServices, CRDs, the Namespace,
  the ServiceAccount, the Secret), except: the manager Configuration is compared as data (its
  comments and layout may differ), and RBAC objects are judged by what they grant
  (gpu_queues/release/rights.py): rules, aggregation rules, bindings' subjects and roleRef
  and the aggregation labels of ClusterRoles may differ when nothing, after aggregation to a
  fixed point, grants more than the release does;
- an object the release does not have is refused, unless it is a ConfigMap in kueue-system
  (nothing of the release mounts or reads one, the pod being the release's; not
  kube-root-ca.crt, which every pod trusts for the API server) or an RBAC object, judged as
  above (a new ClusterRole carrying only the aggregation labels the check models).

Each refusal names the object and the first differing field.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues import keys, yamlio
from gpu_queues.release import rights
from gpu_queues.release.catalogue import (
    CONTROLLER_DEPLOYMENT,
    KUEUE_NAMESPACE,
    MANAGER_CONFIG_KEY,
    MANAGER_CONFIGMAP,
    RBAC_GROUP,
)
from gpu_queues.release.data import step as _step
from gpu_queues.release.digests import object_key
from gpu_queues.release.order import unordered
from gpu_queues.values import as_dict


class _Absent:
    def __repr__(self) -> str:
        return "absent"


ABSENT: Final = _Absent()
KUEUE_RBAC_LABEL: Final = "rbac.kueue.x-k8s.io/"
# The ConfigMap the cluster publishes in every namespace with the API server's CA: every pod's
# ServiceAccount volume trusts it.
ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
# A custom manifest adds a few objects (a release has about 80), not a second release.
MAX_ADDED: Final = 50
_RBAC_KINDS: Final = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
_JUDGED_BY_RIGHTS: Final = {
    "ClusterRole": ("rules", "aggregationRule"),
    "Role": ("rules",),
    "RoleBinding": ("subjects", "roleRef"),
    "ClusterRoleBinding": ("subjects", "roleRef"),
}


@dataclass(frozen=True)
class Difference:
    path: str
    release: Any
    here: Any

    def __str__(self) -> str:
        return f"{self.path} (release: {_shown(self.release)}; here: {_shown(self.here)})"


def _shown(value: Any, limit: int = 100) -> str:
    """JSON of `value`, cut at `limit` characters without writing more of it than that (a
    value may be large, or share parts many times)."""
    if value is ABSENT:
        return "absent"
    parts: list[str] = []
    size = 0
    for chunk in json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str).iterencode(
        value
    ):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return "".join(parts)[: limit - 3] + "..."
    return "".join(parts)


def _item(path: str, index: int, item: Any) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return f"{path}[{name if isinstance(name, str) else index}]"


def _same_scalar(a: Any, b: Any) -> bool:
    # by type too: true is not 1, and 1 is not 1.0 (== says they are)
    return type(a) is type(b) and a == b


def differences(release: Any, here: Any, path: str = "") -> Iterator[Difference]:
    """Every field where `here` is not `release`, in the release's order, then added fields."""
    if isinstance(release, dict) and isinstance(here, dict):
        for key in [*release, *(k for k in here if k not in release)]:
            sub = _step(path, key)
            if key not in here:
                yield Difference(sub, release[key], ABSENT)
            elif key not in release:
                yield Difference(sub, ABSENT, here[key])
            else:
                yield from differences(release[key], here[key], sub)
    elif isinstance(release, list) and isinstance(here, list):
        if (theirs := _by_name(release)) is not None and (ours := _by_name(here)) is not None:
            yield from _named_differences(theirs, ours, path)
            return
        for i in range(max(len(release), len(here))):
            if i >= len(here):
                yield Difference(_item(path, i, release[i]), release[i], ABSENT)
            elif i >= len(release):
                yield Difference(_item(path, i, here[i]), ABSENT, here[i])
            else:
                yield from differences(release[i], here[i], _item(path, i, release[i]))
    elif isinstance(release, (dict, list)) or isinstance(here, (dict, list)):
        yield Difference(path or "(the object)", release, here)  # a mapping, list or scalar
    elif not _same_scalar(release, here):
        yield Difference(path or "(the object)", release, here)


def _by_name(items: list[Any]) -> dict[str, Any] | None:
    """A list of items each with its own name (volumes, mounts, ports, containers), by name;
    None for any other list."""
    named = {item.get("name"): item for item in items if isinstance(item, dict)}
    if not items or len(named) < len(items) or not all(isinstance(n, str) for n in named):
        return None
    return {str(name): item for name, item in named.items()}


def _named_differences(
    release: dict[str, Any], here: dict[str, Any], path: str
) -> Iterator[Difference]:
    """Named items compared name by name, so one item added or removed does not shift the
    rest; then their order, which is the release's in a list where order counts (a set's
    items are in one order on both sides already, gpu_queues/release/order.py)."""
    for name, item in release.items():
        sub = f"{path}[{name}]"
        if name not in here:
            yield Difference(sub, item, ABSENT)
        else:
            yield from differences(item, here[name], sub)
    for name, item in here.items():
        if name not in release:
            yield Difference(f"{path}[{name}]", ABSENT, item)
    theirs = [n for n in release if n in here]
    ours = [n for n in here if n in release]
    if theirs != ours:
        yield Difference(f"{path} (order)", theirs, ours)


def _label(obj: Mapping[str, Any]) -> str:
    meta = as_dict(obj.get("metadata"))
    where = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
    return f"{obj.get('kind')} {where}"


def _rbac_kind(obj: Mapping[str, Any]) -> str | None:
    group = str(obj.get("apiVersion")).rpartition("/")[0]
    kind = obj.get("kind")
    return kind if group == RBAC_GROUP and kind in _RBAC_KINDS else None


def _modelled_label(key: str) -> bool:
    """Labels whose effect the RBAC check resolves: Kueue's aggregation labels and the
    built-in view/edit/admin ones."""
    return key.startswith(KUEUE_RBAC_LABEL) or any(
        key == f"{rights.AGGREGATE_TO}{role}" for role in rights.BUILTIN_AGGREGATORS
    )


def normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as compared: the program's own records left out, the manager
    Configuration as data, RBAC objects without what the rights check judges."""
    # a set's order means nothing (gpu_queues/release/order.py); what follows changes the copy
    out = copy.deepcopy(unordered(obj))
    meta = as_dict(out.get("metadata"))
    name, namespace, kind = meta.get("name"), meta.get("namespace"), out.get("kind")
    if kind == "Deployment" and (namespace, name) == (KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT):
        as_dict(meta.get("annotations")).pop(keys.ANNOTATION_MANIFEST_SHA256, None)
        template = as_dict(as_dict(out.get("spec")).get("template"))
        annotations = as_dict(as_dict(template.get("metadata")).get("annotations"))
        annotations.pop(keys.ANNOTATION_CONFIG_HASH, None)
    if kind == "ConfigMap" and (namespace, name) == (KUEUE_NAMESPACE, MANAGER_CONFIGMAP):
        data = as_dict(out.get("data"))
        if isinstance(data.get(MANAGER_CONFIG_KEY), str):
            data[MANAGER_CONFIG_KEY] = yamlio.load(
                data[MANAGER_CONFIG_KEY], f"{MANAGER_CONFIG_KEY} of the manager ConfigMap"
            )
    rbac = _rbac_kind(out)
    if rbac is not None:
        for field in _JUDGED_BY_RIGHTS[rbac]:
            out.pop(field, None)
        if rbac == "ClusterRole" and isinstance(meta.get("labels"), dict):
            meta["labels"] = {k: v for k, v in meta["labels"].items() if not _modelled_label(k)}
    return out


def _extra_problem(obj: Mapping[str, Any], version: str) -> str | None:
    """Why an object the release does not have may not be added; None when it may."""
    meta = as_dict(obj.get("metadata"))
    kind, api_version = obj.get("kind"), str(obj.get("apiVersion"))
    if kind == "ConfigMap" and api_version == "v1":
        if meta.get("name") == ROOT_CA_CONFIGMAP:
            return (
                f"would replace {ROOT_CA_CONFIGMAP}, the CA every pod of {KUEUE_NAMESPACE} "
                "trusts for the API server"
            )
        return None
    rbac = _rbac_kind(obj)
    if rbac == "ClusterRole":
        unmodelled = sorted(str(k) for k in as_dict(meta.get("labels")) if not _modelled_label(k))
        if unmodelled:
            return (
                f"is a ClusterRole the release {version} does not have, labelled "
                f"{', '.join(unmodelled)}: a ClusterRole elsewhere in the cluster may aggregate "
                "it by that label"
            )
        return None
    if rbac is not None:
        return None
    if kind in (
        "APIService",
        "Service",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ):
        return (
            f"the release {version} declares no such {kind}: a custom manifest adds no "
            "APIService, Service or webhook"
        )
    return (
        f"the release {version} has no such object: a custom manifest adds only ConfigMaps "
        "and RBAC no wider than the release's"
    )


def check(
    manifest: Sequence[Mapping[str, Any]], release: Sequence[Mapping[str, Any]], version: str
) -> list[str]:
    """Every way the (prepared) manifest is more than the (prepared) release allows; empty
    when it may be installed as a custom manifest of `version`."""
    problems: list[str] = []
    ours = {object_key(o): o for o in manifest}
    theirs = {object_key(o): o for o in release}
    added = len(ours.keys() - theirs.keys())
    if added > MAX_ADDED:
        # before resolving anything: aggregation over thousands of roles would stall the preview
        return [
            f"the manifest adds {added} objects the release {version} does not have; a custom "
            f"manifest adds at most {MAX_ADDED}"
        ]
    for key, obj in theirs.items():
        if key not in ours:
            problems.append(
                f"{_label(obj)}: missing; a custom manifest keeps every object of the release "
                f"{version}"
            )
    for key, obj in ours.items():
        if key not in theirs:
            if (why := _extra_problem(obj, version)) is not None:
                problems.append(f"{_label(obj)}: {why}")
            continue
        found = list(differences(normalized(theirs[key]), normalized(obj)))
        if found:
            shown = "; ".join(map(str, found[:4]))
            more = f"; and {len(found) - 4} more field(s)" if len(found) > 4 else ""
            problems.append(
                f"{_label(obj)} differs from the release {version} at {shown}{more}. Only the "
                "typed knobs of gpu-queues:kueue.controller and kueue.manager may change it"
            )
    problems += rights.wider(release, manifest)
    return problems


def first_difference(
    manifest: Sequence[Mapping[str, Any]], release: Sequence[Mapping[str, Any]]
) -> str | None:
    """The first object (and field) where the raw manifest is not the release, in the
    manifest's order, then the first missing object."""
    theirs = {object_key(o): o for o in release}
    seen = set()
    for obj in manifest:
        key = object_key(obj)
        seen.add(key)
        if key not in theirs:
            return f"{_label(obj)} is not in the release"
        found = next(differences(unordered(theirs[key]), unordered(obj)), None)
        if found is not None:
            return f"{_label(obj)}: {found}"
    for key, obj in theirs.items():
        if key not in seen:
            return f"{_label(obj)} is missing"
    return None


def changes(
    manifest: Sequence[Mapping[str, Any]], release: Sequence[Mapping[str, Any]], limit: int = 3
) -> list[str]:
    """What a custom manifest changes from the release, for the preview: each changed object
    with its first fields, each added object."""
    theirs = {object_key(o): o for o in release}
    out = []
    for obj in manifest:
        key = object_key(obj)
        if key not in theirs:
            out.append(f"{_label(obj)} (added)")
            continue
        paths = [d.path for d in differences(unordered(theirs[key]), unordered(obj))]
        if paths:
            more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
            out.append(f"{_label(obj)} ({', '.join(paths[:limit])}{more})")
    return out
