"""A release's RBAC: rules that cannot grow themselves or reach beyond what Kueue needs, and
bindings only to roles the manifest defines and to its own ServiceAccount (plus the one
RoleBinding in kube-system every aggregated API server has). Part of the release allowlist
(gpu_queues/release/allowlist.py); the names are in catalogue.py.
"""

from __future__ import annotations

from gpu_queues.release.catalogue import (
    AUTH_READER_NAMESPACE,
    AUTH_READER_ROLE,
    KUEUE_NAMESPACE,
    RBAC_GROUP,
    Document,
    Inventory,
    dig,
    strs,
)
from gpu_queues.values import as_dict, as_list

_AGGREGATE_LABEL = "rbac.authorization.k8s.io/aggregate-to-"
_KUEUE_RBAC_LABEL_PREFIX = "rbac.kueue.x-k8s.io/"
_READ_VERBS = frozenset({"get", "list", "watch"})
_ESCALATING_VERBS = frozenset({"escalate", "bind", "impersonate"})
# Subresources that hand out more than the resource itself: a shell in a pod, a token for
# any ServiceAccount, the kubelet API, approval of certificates.
_POWERFUL_SUBRESOURCES = frozenset(
    {
        "pods/exec",
        "pods/attach",
        "pods/portforward",
        "pods/ephemeralcontainers",
        "nodes/proxy",
        "serviceaccounts/token",
        "certificatesigningrequests/approval",
        "signers",
    }
)
_BUILTIN_ROLES = frozenset({"cluster-admin", "admin", "edit", "view"})


def check_rules(doc: Document, cluster_wide: bool) -> list[str]:
    """RBAC rules must not be able to grow themselves or reach beyond Kueue's needs."""
    problems: list[str] = []
    aggregated = sorted(
        k[len(_AGGREGATE_LABEL) :]
        for k, v in as_dict(dig(doc.obj, "metadata", "labels")).items()
        if isinstance(k, str) and k.startswith(_AGGREGATE_LABEL) and str(v).lower() == "true"
    )
    for i, raw in enumerate(as_list(doc.obj.get("rules"))):
        rule = as_dict(raw)
        groups, resources = strs(rule.get("apiGroups")), strs(rule.get("resources"))
        verbs, urls = strs(rule.get("verbs")), strs(rule.get("nonResourceURLs"))
        where = f"rules[{i}]"
        wild = [
            field
            for field, values in (
                ("apiGroups", groups),
                ("resources", resources),
                ("verbs", verbs),
                ("nonResourceURLs", urls),
            )
            if any("*" in v for v in values)
        ]
        if wild:
            problems.append(f"{where} uses a wildcard in {', '.join(wild)}")
        if escalating := sorted(set(verbs) & _ESCALATING_VERBS):
            problems.append(f"{where} grants {', '.join(escalating)}, which lets it grant itself")
        if RBAC_GROUP in groups:
            problems.append(f"{where} grants access to RBAC objects")
        if powerful := sorted(set(resources) & _POWERFUL_SUBRESOURCES):
            problems.append(f"{where} grants {', '.join(powerful)}")
        if cluster_wide and "" in groups and "secrets" in resources:
            problems.append(
                f"{where} grants Secrets in every namespace (a release reads its certificate "
                f"through a Role in {KUEUE_NAMESPACE} only)"
            )
        if aggregated:
            if extra := sorted(set(verbs) - _READ_VERBS):
                problems.append(
                    f"{where} grants {', '.join(extra)} while the role is aggregated into the "
                    f"built-in {'/'.join(aggregated)} role(s); aggregated roles only read"
                )
            if "" in groups:
                problems.append(
                    f"{where} grants core resources ({', '.join(resources)}) while aggregated "
                    f"into the built-in {'/'.join(aggregated)} role(s)"
                )
    return problems


def check_cluster_role(doc: Document) -> list[str]:
    problems = check_rules(doc, cluster_wide=True)
    for term in as_list(dig(doc.obj, "aggregationRule", "clusterRoleSelectors")):
        keys = list(as_dict(dig(term, "matchLabels")))
        keys += [str(dig(e, "key")) for e in as_list(dig(term, "matchExpressions"))]
        foreign = sorted(k for k in keys if not str(k).startswith(_KUEUE_RBAC_LABEL_PREFIX))
        if foreign:
            problems.append(
                f"aggregationRule selects roles by {', '.join(foreign)}, not only by Kueue's "
                f"{_KUEUE_RBAC_LABEL_PREFIX}* labels, so it could collect other roles' rights"
            )
        if not keys:
            problems.append("aggregationRule has an empty selector, which collects every role")
    return problems


def _check_subjects(doc: Document, inv: Inventory) -> list[str]:
    subjects = as_list(doc.obj.get("subjects"))
    if not subjects:
        return ["has no subjects"]
    problems = []
    for i, raw in enumerate(subjects):
        subject = as_dict(raw)
        kind, name, ns = subject.get("kind"), subject.get("name"), subject.get("namespace")
        if kind != "ServiceAccount" or ns != KUEUE_NAMESPACE:
            shown = f"{kind} {ns + '/' if isinstance(ns, str) else ''}{name}"
            problems.append(
                f"subjects[{i}] is {shown}: a release binds roles only to its own "
                f"ServiceAccount in {KUEUE_NAMESPACE}"
            )
        elif name not in inv.service_accounts:
            problems.append(
                f"subjects[{i}] is ServiceAccount {KUEUE_NAMESPACE}/{name}, which this manifest "
                "does not define"
            )
    return problems


def _role_ref(doc: Document) -> tuple[str, str, str]:
    ref = as_dict(doc.obj.get("roleRef"))
    return str(ref.get("apiGroup")), str(ref.get("kind")), str(ref.get("name"))


def _builtin(name: str) -> bool:
    return name in _BUILTIN_ROLES or name.startswith("system:")


def check_cluster_role_binding(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    group, kind, name = _role_ref(doc)
    if group != RBAC_GROUP or kind != "ClusterRole":
        problems.append(f"roleRef is {kind} {name} of group {group!r}, not a ClusterRole")
    elif _builtin(name):
        problems.append(f"binds the built-in ClusterRole {name}")
    elif name not in inv.cluster_roles:
        problems.append(f"binds ClusterRole {name}, which this manifest does not define")
    return problems + _check_subjects(doc, inv)


def check_role_binding(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    group, kind, name = _role_ref(doc)
    if doc.namespace == AUTH_READER_NAMESPACE:
        if (group, kind, name) != (RBAC_GROUP, "Role", AUTH_READER_ROLE):
            problems.append(
                f"in {AUTH_READER_NAMESPACE} a release only binds Role {AUTH_READER_ROLE}, "
                f"not {kind} {name}"
            )
    elif group != RBAC_GROUP:
        problems.append(f"roleRef group {group!r} is not {RBAC_GROUP}")
    elif kind == "ClusterRole" and _builtin(name):
        problems.append(f"binds the built-in ClusterRole {name}")
    elif kind == "ClusterRole" and name not in inv.cluster_roles:
        problems.append(f"binds ClusterRole {name}, which this manifest does not define")
    elif kind == "Role" and name not in inv.roles:
        problems.append(f"binds Role {name}, which this manifest does not define")
    elif kind not in ("Role", "ClusterRole"):
        problems.append(f"roleRef kind {kind!r} is not Role or ClusterRole")
    return problems + _check_subjects(doc, inv)
