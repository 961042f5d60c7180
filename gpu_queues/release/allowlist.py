"""What a Kueue release manifest may contain; everything else is refused before it is applied.

The manifest is another project's output, fetched from a URL or a file that an attacker may
control (a mirror, a path in a checkout), with or without a configured sha256. So its objects
are checked against what a Kueue release ships, derived from the release manifest of the
pinned version (rendered from config/default of the Kueue module; v0.18.3 and v0.19.2 ship
the same inventory): one namespace, kueue-system, holding the controller Deployment, its
ServiceAccount, Roles, RoleBindings, Services, the manager ConfigMap and an empty certificate
Secret; cluster-wide only Kueue's CRDs, `kueue-` ClusterRoles and ClusterRoleBindings to
its own ServiceAccount, `kueue-` webhook configurations and the visibility APIServices,
all pointing at Services in kueue-system; one RoleBinding in kube-system that lets the
visibility server read the API server's client CA (the pattern every aggregated API server
uses). Kinds are matched by API group, namespaces and names exactly, so nothing passes on a
look-alike. The checks are pure functions over parsed objects and return every refusal at
once, each naming the document, the object and the reason.

Here: each object's kind, fields, namespace and name, then its kind's own checks, and the whole
manifest (duplicates, the program's own keys, what every release has). The names and kinds a
release ships are in catalogue.py; the checks per concern in rbac.py (roles and bindings),
webhooks.py (webhooks, CRD conversion, APIService, Services) and controller.py (the
Deployment, its manager Configuration, its certificate Secret).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from gpu_queues.release.catalogue import (
    AUTH_READER_NAMESPACE,
    CONTROLLER_DEPLOYMENT,
    KUEUE_NAMESPACE,
    MANAGER_CONFIGMAP,
    NAME_PREFIX,
    OWN_KEY_PREFIXES,
    RELEASE_KINDS,
    Document,
    Inventory,
    Refusal,
    group_of,
    is_kueue_group,
    own_keys,
)
from gpu_queues.release.controller import check_deployment, check_manager_config, check_secret
from gpu_queues.release.rbac import (
    check_cluster_role,
    check_cluster_role_binding,
    check_role_binding,
    check_rules,
)
from gpu_queues.release.webhooks import check_api_service, check_crd, check_service, check_webhooks
from gpu_queues.values import as_dict

# --- one object -----------------------------------------------------------------------------


def _check_one(doc: Document, inv: Inventory, version: str) -> list[str]:
    """Why one object is not what a release ships: its kind and fields, where it lives, its
    name, then what its kind's own checks find."""
    return (
        _kind_problems(doc)
        or _namespace_problems(doc)
        or _name_problems(doc)
        or _by_kind(doc, inv, version)
    )


def _kind_problems(doc: Document) -> list[str]:
    """A kind a release ships, at the API version it ships it, with its top-level fields."""
    kind = RELEASE_KINDS.get((doc.api_version, doc.kind))
    if kind is None:
        if is_kueue_group(doc.group):
            return [
                f"{doc.kind} is a Kueue API object, not part of a release: queues, flavors and "
                "cohorts come from the stack config"
            ]
        known = any(k.kind == doc.kind for k in RELEASE_KINDS.values())
        if known:
            return [f"apiVersion {doc.api_version} is not the one a Kueue release uses"]
        return [f"kind {doc.kind} ({doc.api_version}) is not something a Kueue release ships"]
    unknown = sorted(set(doc.obj) - kind.fields - {"apiVersion", "kind", "metadata", "status"})
    if unknown:
        return [f"has top-level field(s) {', '.join(map(str, unknown))}, unknown to a {doc.kind}"]
    return []


def _namespace_problems(doc: Document) -> list[str]:
    """Namespaced objects in kueue-system (a RoleBinding also in kube-system), others in none."""
    if RELEASE_KINDS[doc.api_version, doc.kind].namespaced:
        if doc.namespace is None:
            return [
                "has no namespace, so it would land in whatever namespace the provider defaults "
                f"to; a release puts it in {KUEUE_NAMESPACE}"
            ]
        allowed = {KUEUE_NAMESPACE}
        if doc.kind == "RoleBinding":
            allowed.add(AUTH_READER_NAMESPACE)
        if doc.namespace not in allowed:
            return [f"is in namespace {doc.namespace}; a release keeps it in {KUEUE_NAMESPACE}"]
    elif doc.namespace is not None:
        return [f"is cluster-scoped but names namespace {doc.namespace}"]
    return []


_PREFIXED: Final = frozenset(
    {
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
)


def _name_problems(doc: Document) -> list[str]:
    """The one namespace a release creates; `kueue-` names for what is cluster-wide or outside
    kueue-system."""
    if doc.kind == "Namespace" and doc.name != KUEUE_NAMESPACE:
        return [f"a release creates only namespace {KUEUE_NAMESPACE}"]
    if doc.kind in _PREFIXED and not doc.name.startswith(NAME_PREFIX):
        return [f"cluster-wide {doc.kind} names of a release start with {NAME_PREFIX!r}"]
    if (
        doc.kind == "RoleBinding"
        and doc.namespace != KUEUE_NAMESPACE
        and not doc.name.startswith(NAME_PREFIX)
    ):
        return [f"a release's RoleBinding in {doc.namespace} starts with {NAME_PREFIX!r}"]
    return []


def _by_kind(doc: Document, inv: Inventory, version: str) -> list[str]:
    """What the checks of the object's kind find (rbac, webhooks, controller)."""
    match doc.kind:
        case "ClusterRole":
            return check_cluster_role(doc)
        case "Role":
            return check_rules(doc, cluster_wide=False)
        case "ClusterRoleBinding":
            return check_cluster_role_binding(doc, inv)
        case "RoleBinding":
            return check_role_binding(doc, inv)
        case "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration":
            return check_webhooks(doc, inv)
        case "CustomResourceDefinition":
            return check_crd(doc, inv)
        case "APIService":
            return check_api_service(doc, inv)
        case "Service":
            return check_service(doc)
        case "Secret":
            return check_secret(doc)
        case "ConfigMap" if doc.name == MANAGER_CONFIGMAP:
            return check_manager_config(doc)
        case "Deployment":
            return check_deployment(doc, inv, version)
    return []


# --- the whole manifest ---------------------------------------------------------------------


REQUIRED: Final = (
    ("", "Namespace", None, KUEUE_NAMESPACE),
    ("apps", "Deployment", KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT),
    ("", "ConfigMap", KUEUE_NAMESPACE, MANAGER_CONFIGMAP),
)


def check_release(docs: Sequence[Document], version: str) -> list[Refusal]:
    """Every reason the manifest is not a Kueue `version` release; empty when it is one."""
    refusals: list[Refusal] = []
    inv = Inventory.of(docs)
    seen: dict[tuple[str, str, str | None, str], int] = {}
    for doc in docs:
        for path in own_keys(doc.obj):
            refusals.append(
                doc.refuse(
                    f"carries {path}: {' and '.join(p + '*' for p in OWN_KEY_PREFIXES)} keys are "
                    "written by this program only (the manifest checksum is recorded only after "
                    "the program verified it)"
                )
            )
        if doc.key() in seen:
            refusals.append(
                doc.refuse(f"duplicate of document {seen[doc.key()]}: each object appears once")
            )
            continue
        seen[doc.key()] = doc.index
        refusals += [doc.refuse(reason) for reason in _check_one(doc, inv, version)]
    for group, kind, namespace, name in REQUIRED:
        if (group, kind, namespace, name) not in seen:
            where = f"{namespace}/{name}" if namespace else name
            refusals.append(
                Refusal(
                    None, kind, namespace, name, f"missing: every Kueue release has {kind} {where}"
                )
            )
    return refusals


def created_namespaces(docs: Iterable[Document]) -> frozenset[str]:
    return frozenset(d.name for d in docs if d.group == "" and d.kind == "Namespace")


def find(
    objects: Sequence[dict[str, Any]], group: str, kind: str, namespace: str | None, name: str
) -> dict[str, Any] | None:
    """The one object with this API group, kind, namespace and name (never a look-alike)."""
    for obj in objects:
        meta = as_dict(obj.get("metadata"))
        if (
            group_of(str(obj.get("apiVersion"))) == group
            and obj.get("kind") == kind
            and (meta.get("namespace") or None) == namespace
            and meta.get("name") == name
        ):
            return obj
    return None
