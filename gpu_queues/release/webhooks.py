"""What the API server sends to Kueue: webhook configurations, a CRD's conversion webhook,
the visibility APIService, and the Services they point at. Each must point at a ClusterIP
Service of the manifest in kueue-system and intercept only what a release intercepts. Part of
the release allowlist (gpu_queues/release/allowlist.py); the names are in catalogue.py.
"""

from __future__ import annotations

from typing import Any

from gpu_queues.release.catalogue import (
    AUTH_READER_NAMESPACE,
    KUEUE_GROUP,
    KUEUE_NAMESPACE,
    RBAC_GROUP,
    Document,
    Inventory,
    dig,
    is_kueue_group,
    strs,
)
from gpu_queues.values import as_dict, as_list

# Webhooks on these groups would put Kueue in the path of the cluster's own machinery.
_PROTECTED_WEBHOOK_GROUPS = frozenset(
    {
        RBAC_GROUP,
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "flowcontrol.apiserver.k8s.io",
    }
)


def _check_service_ref(ref: Any, inv: Inventory, where: str) -> list[str]:
    service = as_dict(ref)
    ns, name = service.get("namespace"), service.get("name")
    if ns != KUEUE_NAMESPACE or name not in inv.services:
        return [
            f"{where} points at Service {ns}/{name}; it must be a Service of this manifest in "
            f"{KUEUE_NAMESPACE}"
        ]
    return []


def _check_client_config(config: Any, inv: Inventory, where: str) -> list[str]:
    if dig(config, "url") is not None:
        return [f"{where} sends requests to a URL ({dig(config, 'url')}), not to Kueue's Service"]
    return _check_service_ref(dig(config, "service"), inv, f"{where}.service")


def _excludes_kube_system(selector: Any) -> bool:
    for expr in as_list(dig(selector, "matchExpressions")):
        if (
            dig(expr, "key") == "kubernetes.io/metadata.name"
            and dig(expr, "operator") == "NotIn"
            and AUTH_READER_NAMESPACE in strs(dig(expr, "values"))
        ):
            return True
    return False


def check_webhooks(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    webhooks = as_list(doc.obj.get("webhooks"))
    for i, raw in enumerate(webhooks):
        hook = as_dict(raw)
        where = f"webhooks[{i}] ({hook.get('name')})"
        problems += _check_client_config(hook.get("clientConfig"), inv, f"{where}.clientConfig")
        foreign = False
        for j, rule in enumerate(as_list(hook.get("rules"))):
            groups, resources = strs(dig(rule, "apiGroups")), strs(dig(rule, "resources"))
            if any("*" in v for v in groups + resources):
                problems.append(f"{where}.rules[{j}] uses a wildcard: it would see every object")
            if protected := sorted(set(groups) & _PROTECTED_WEBHOOK_GROUPS):
                problems.append(f"{where}.rules[{j}] intercepts {', '.join(protected)}")
            if "" in groups and (core := sorted(set(resources) - {"pods"})):
                problems.append(
                    f"{where}.rules[{j}] intercepts core {', '.join(core)} (a release only "
                    "intercepts pods among the core resources)"
                )
            foreign = foreign or any(not is_kueue_group(g) for g in groups)
        if foreign and not _excludes_kube_system(hook.get("namespaceSelector")):
            problems.append(
                f"{where} intercepts objects outside Kueue's API without a namespaceSelector "
                f"excluding {AUTH_READER_NAMESPACE} (every release webhook of that kind has one)"
            )
    return problems


def check_crd(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    spec = as_dict(doc.obj.get("spec"))
    group = str(spec.get("group"))
    plural = dig(spec, "names", "plural")
    if not is_kueue_group(group):
        problems.append(f"defines API group {group!r}, not Kueue's ({KUEUE_GROUP})")
    if doc.name != f"{plural}.{group}":
        problems.append(f"name is not <plural>.<group> ({plural}.{group})")
    conversion = as_dict(spec.get("conversion"))
    if conversion.get("strategy") == "Webhook":
        problems += _check_client_config(
            dig(conversion, "webhook", "clientConfig"), inv, "spec.conversion.webhook.clientConfig"
        )
    return problems


def check_api_service(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    spec = as_dict(doc.obj.get("spec"))
    group, version = str(spec.get("group")), str(spec.get("version"))
    if not is_kueue_group(group):
        problems.append(f"serves API group {group!r}, not one of Kueue's (*.{KUEUE_GROUP})")
    if doc.name != f"{version}.{group}":
        problems.append(f"name is not <version>.<group> ({version}.{group})")
    problems += _check_service_ref(spec.get("service"), inv, "spec.service")
    return problems


def check_service(doc: Document) -> list[str]:
    spec = as_dict(doc.obj.get("spec"))
    problems = []
    if spec.get("type", "ClusterIP") != "ClusterIP":
        problems.append(f"is of type {spec.get('type')}: a release exposes nothing outside")
    if spec.get("externalIPs") or spec.get("externalName"):
        problems.append("sets externalIPs or externalName, which can capture other traffic")
    return problems
