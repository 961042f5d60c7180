"""What a manifest's RBAC grants once Kubernetes has aggregated its ClusterRoles (issue 24,
item 3): a custom manifest's RBAC may be narrower than the release's, never wider.

A ClusterRole with an aggregationRule gets, from the cluster's aggregation controller, the
union of the rules of every ClusterRole whose labels one of its selectors matches, and an
aggregated role may itself aggregate others: the rights are resolved to a fixed point. Its own
`rules` count as well (the controller overwrites them, but only after they were applied, and
each apply writes them again). The built-in view, edit and admin roles aggregate
`rbac.authorization.k8s.io/aggregate-to-<role>` (view into edit, edit into admin), so they are
modelled too; what the cluster itself gives them is the same on both sides and left out.
Rules become atoms (group, resource, verb, resourceName; "" for any name, or a non-resource
URL and verb) so that "no wider" is a subset test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.release.catalogue import RBAC_GROUP, dig, group_of, strs
from gpu_queues.values import as_dict, as_list

Atom = tuple[str, str, str, str]
"""(API group, resource, verb, resource name or ""), or ("url:", path, verb, "")."""
Right = tuple[str, Atom]
"""(scope, atom): scope "*" is cluster-wide, else a namespace."""

AGGREGATE_TO: Final = "rbac.authorization.k8s.io/aggregate-to-"
# The built-in roles that aggregate others, with the labels they themselves carry.
_BUILTIN: Final = {
    "view": {f"{AGGREGATE_TO}edit": "true"},
    "edit": {f"{AGGREGATE_TO}admin": "true"},
    "admin": {},
}
BUILTIN_AGGREGATORS: Final = frozenset(_BUILTIN)


def atoms(rules: Any) -> frozenset[Atom]:
    out: set[Atom] = set()
    for raw in as_list(rules):
        rule = as_dict(raw)
        verbs = strs(rule.get("verbs"))
        names = strs(rule.get("resourceNames")) or [""]
        for group in strs(rule.get("apiGroups")):
            for resource in strs(rule.get("resources")):
                out.update((group, resource, v, n) for v in verbs for n in names)
        for url in strs(rule.get("nonResourceURLs")):
            out.update(("url:", url, v, "") for v in verbs)
    return frozenset(out)


def _covered(atom: Atom, have: frozenset[Atom] | set[Atom]) -> bool:
    return atom in have or (atom[3] != "" and (*atom[:3], "") in have)


def describe(atom: Atom) -> str:
    group, resource, verb, name = atom
    if group == "url:":
        return f"{verb} on {resource}"
    if group == "role:":
        return f"the Role {resource}"
    what = f"{resource}/{name}" if name else resource
    return f"{verb} on {what} ({group or 'core'})"


@dataclass(frozen=True)
class _ClusterRole:
    labels: Mapping[str, str]
    selectors: Sequence[Any] | None
    """None: not aggregating (its rules are its own)."""
    rules: frozenset[Atom]


def _text(value: Any) -> str:
    """A label value as a client that stringifies JSON would send it: YAML `true` is "true"
    (str() would say "True", which selects nothing, while the cluster may see "true")."""
    return value if isinstance(value, str) else json.dumps(value)


def _matches(term: Any, labels: Mapping[str, str]) -> bool:
    for key, value in as_dict(dig(term, "matchLabels")).items():
        if labels.get(str(key)) != _text(value):
            return False
    for raw in as_list(dig(term, "matchExpressions")):
        expr = as_dict(raw)
        key, op = str(expr.get("key")), expr.get("operator")
        values = [_text(v) for v in as_list(expr.get("values"))]
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(str(op), False)
        if not ok:
            return False
    return True


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): _text(v) for k, v in as_dict(dig(obj, "metadata", "labels")).items()}


def _is(obj: Mapping[str, Any], kind: str) -> bool:
    return group_of(str(obj.get("apiVersion"))) == RBAC_GROUP and obj.get("kind") == kind


def cluster_role_rights(objects: Iterable[Mapping[str, Any]]) -> dict[str, frozenset[Atom]]:
    """Each ClusterRole's rules after aggregation (and the built-in view, edit, admin)."""
    roles: dict[str, _ClusterRole] = {
        name: _ClusterRole(
            labels,
            [{"matchLabels": {f"{AGGREGATE_TO}{name}": "true"}}],
            frozenset(),
        )
        for name, labels in _BUILTIN.items()
    }
    for obj in objects:
        if _is(obj, "ClusterRole"):
            rule = obj.get("aggregationRule")
            selectors = as_list(dig(rule, "clusterRoleSelectors")) if rule is not None else None
            name = str(dig(obj, "metadata", "name"))
            roles[name] = _ClusterRole(_labels(obj), selectors, atoms(obj.get("rules")))
    # An aggregating role's own rules count too: they hold until the aggregation controller
    # overwrites them, and every apply of the program writes them back.
    rights = {n: r.rules for n, r in roles.items()}
    # who selects whom, matched once; then rights flow along it until nothing changes
    selected = {
        name: [
            other
            for other, candidate in roles.items()
            if other != name and any(_matches(t, candidate.labels) for t in role.selectors)
        ]
        for name, role in roles.items()
        if role.selectors is not None
    }
    selectors_of: dict[str, list[str]] = {}
    for name, others in selected.items():
        for other in others:
            selectors_of.setdefault(other, []).append(name)
    pending = list(selected)
    while pending:  # a role's rights only grow, each at most to the union of all: it ends
        name = pending.pop()
        union = set(rights[name]).union(*(rights[o] for o in selected[name]))
        if union != rights[name]:
            rights[name] = frozenset(union)
            pending.extend(selectors_of.get(name, []))
    return rights


def subject_rights(
    objects: Sequence[Mapping[str, Any]], roles: Mapping[str, frozenset[Atom]]
) -> dict[str, set[Right]]:
    """What each subject of a binding may do, by scope. A Role the manifest does not define
    (the kube-system authentication reader) counts as one right of its own."""
    namespaced = {
        (str(dig(o, "metadata", "namespace")), str(dig(o, "metadata", "name"))): atoms(
            o.get("rules")
        )
        for o in objects
        if _is(o, "Role")
    }
    out: dict[str, set[Right]] = {}
    for obj in objects:
        cluster = _is(obj, "ClusterRoleBinding")
        if not (cluster or _is(obj, "RoleBinding")):
            continue
        scope = "*" if cluster else str(dig(obj, "metadata", "namespace"))
        ref = as_dict(obj.get("roleRef"))
        kind, name = str(ref.get("kind")), str(ref.get("name"))
        if kind == "ClusterRole":
            granted = roles.get(name, frozenset())
        elif (scope, name) in namespaced:
            granted = namespaced[scope, name]
        else:
            granted = frozenset({("role:", f"{scope}/{name}", "bound", "")})
        for raw in as_list(obj.get("subjects")):
            subject = as_dict(raw)
            key = f"{subject.get('kind')} {subject.get('namespace') or '-'}/{subject.get('name')}"
            out.setdefault(key, set()).update((scope, a) for a in granted)
    return out


def wider(release: Sequence[Mapping[str, Any]], manifest: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every way the manifest's RBAC grants more than the release's, after aggregation."""
    problems: list[str] = []
    old_roles, new_roles = cluster_role_rights(release), cluster_role_rights(manifest)
    for name in sorted(new_roles.keys() & old_roles.keys()):
        gained = sorted(a for a in new_roles[name] if not _covered(a, old_roles[name]))
        if gained:
            which = "the built-in ClusterRole" if name in BUILTIN_AGGREGATORS else "ClusterRole"
            problems.append(
                f"{which} {name} would grant {_listed(gained)} after aggregation; the release's "
                "grants none of that"
            )
    old_subjects = subject_rights(release, old_roles)
    for subject, rights in sorted(subject_rights(manifest, new_roles).items()):
        had = old_subjects.get(subject, set())
        cluster_wide = {a for s, a in had if s == "*"}
        gained_rights = sorted(
            (scope, a)
            for scope, a in rights
            if not _covered(a, cluster_wide) and not _covered(a, {b for s, b in had if s == scope})
        )
        if gained_rights:
            shown = [
                f"{describe(a)} {'cluster-wide' if s == '*' else 'in ' + s}"
                for s, a in gained_rights
            ]
            problems.append(
                f"{subject} would be granted {_listed(shown)}, which the release does not grant it"
            )
    return problems


def _listed(items: Sequence[Any], limit: int = 4) -> str:
    shown = [describe(i) if isinstance(i, tuple) else str(i) for i in items[:limit]]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(shown) + more
