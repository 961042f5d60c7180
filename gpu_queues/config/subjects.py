"""Who a team lets submit, and which namespaces a team may take: RBAC subjects that are not
system identities or look-alikes, service accounts from the team's own namespace (not another
team's, not one everyone shares), and no namespace of the cluster's or Kueue's. Run by
gpu_queues/config/checks.py's cross_check; reserved_namespace_problems again once the Kueue
manifest is read.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Final

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.errors import Loc, Problem, key_path
from gpu_queues.kueue.fields import (
    ALWAYS_PRESENT_NAMESPACES,
    is_dns_subdomain,
    reserved_namespace,
)
from gpu_queues.values import as_dict, as_list, as_str

_WHO: Final = {
    "system:masters": "Kubernetes' superuser group (cluster-admin everywhere)",
    "system:authenticated": "every authenticated user of the cluster",
    "system:unauthenticated": "every anonymous request",
    "system:anonymous": "every anonymous request",
    "system:serviceaccounts": "every service account of the cluster",
    "system:nodes": "every node's kubelet",
    "system:monitoring": "the cluster's monitoring",
}


def _system_subject(kind: str, name: str, team_namespace: str | None) -> str | None:
    """Who a `system:` user or group stands for, unless it stays inside the team."""
    if not name.startswith("system:"):
        return None
    if kind == "Group" and name == f"system:serviceaccounts:{team_namespace}":
        return None  # every service account of the team's own namespace: still the team
    if name in _WHO:
        return _WHO[name]
    if name.startswith("system:serviceaccounts:"):
        return f"every service account of namespace {name.split(':', 2)[2]!r}"
    if name.startswith("system:serviceaccount:"):
        return "a service account written as a user (use kind: ServiceAccount, with namespace)"
    if name.startswith("system:node:"):
        return "a node's kubelet"
    if name.startswith("system:kube-"):
        return "a Kubernetes control-plane component"
    return "a name the 'system:' prefix reserves for Kubernetes' own users and groups"


def _odd_characters(name: str) -> bool:
    return name != name.strip() or any(unicodedata.category(c).startswith("C") for c in name)


def owned_namespaces(base: Loc, team: Mapping[str, Any]) -> list[tuple[Loc, str]]:
    """(key, namespace) of every namespace a raw team entry owns: `namespace`, then each of
    `namespaces` (render.team_namespaces is the same list without the keys)."""
    found = [((*base, "namespace"), as_str(team.get("namespace")))]
    found += [
        ((*base, "namespaces", j), as_str(n)) for j, n in enumerate(as_list(team.get("namespaces")))
    ]
    return [(loc, n) for loc, n in found if n is not None]


def check_subjects(
    base: Loc, team: Mapping[str, Any], team_namespaces: Mapping[str, Loc], out: list[Problem]
) -> None:
    own = as_str(team.get("namespace"))
    mine = {n for _, n in owned_namespaces(base, team)}
    team_namespaces = {n: loc for n, loc in team_namespaces.items() if n not in mine}
    for k, raw_subject in enumerate(as_list(team.get("submitters"))):
        subject = as_dict(raw_subject)
        loc: Loc = (*base, "submitters", k)
        kind = subject.get("kind")
        if kind in ("User", "Group"):
            _user_or_group(str(kind), subject, own, loc, out)
        elif kind == "ServiceAccount":
            _service_account(subject, own, team_namespaces, loc, out)


def _user_or_group(
    kind: str, subject: Mapping[str, Any], own: str | None, loc: Loc, out: list[Problem]
) -> None:
    """No namespace (it would be dropped); not a system identity; a name as written."""
    name = as_str(subject.get("name"))
    if subject.get("namespace") is not None:
        out.append(
            Problem(
                (*loc, "namespace"),
                f"namespace applies only to ServiceAccount subjects; a {kind} is "
                "cluster-wide and the namespace would be silently dropped. Remove it "
                "(the binding already only grants access in the team namespace)",
            )
        )
    if name is None:
        return
    who = _system_subject(kind, name, own)
    if who:
        out.append(
            Problem(
                (*loc, "name"),
                f"{kind} {name!r} is {who}: binding it would let them submit jobs to "
                "this team's queue. Name the team's own users, groups or service "
                "accounts",
            )
        )
    elif _odd_characters(name):
        out.append(
            Problem(
                (*loc, "name"),
                f"{kind} name {name!r} has surrounding whitespace or control "
                "characters, so it names nobody (or a look-alike); write the name as "
                "the cluster's authenticator reports it",
            )
        )


def _service_account(
    subject: Mapping[str, Any],
    own: str | None,
    team_namespaces: Mapping[str, Loc],
    loc: Loc,
    out: list[Problem],
) -> None:
    """A valid name, from the team's namespace or one no one else's workloads share."""
    name, namespace = as_str(subject.get("name")), as_str(subject.get("namespace"))
    if name is not None and not is_dns_subdomain(name):
        out.append(
            Problem(
                (*loc, "name"),
                f"{name!r} is not a valid ServiceAccount name: the API server wants a "
                "DNS subdomain (lowercase letters, digits, '-' and '.')",
            )
        )
    if namespace is None or namespace == own or reserved_namespace(namespace):
        return  # reserved namespaces: reserved_namespace_problems
    reason = None
    if namespace in ALWAYS_PRESENT_NAMESPACES:
        reason = f"namespace {namespace!r} is shared by everyone who can run pods there"
    elif namespace in team_namespaces:
        reason = (
            f"namespace {namespace!r} belongs to the team at "
            f"{key_path(team_namespaces[namespace])}, whose workloads could then "
            "spend this team's quota (share quota through the cohort instead)"
        )
    if reason:
        out.append(Problem((*loc, "namespace"), _sa_refusal(reason)))


def _sa_refusal(reason: str) -> str:
    return (
        f"{reason}: a service account from there may not submit to this team's queue. Use a "
        "service account in the team namespace"
    )


def reserved_namespace_problems(config: render.Entry, extra: Iterable[str] = ()) -> list[Problem]:
    """Team namespaces, and namespaces of submitter service accounts, that belong to the
    cluster or to Kueue (k8s_types.reserved_namespace), adopted or not.

    `extra`: the namespaces the Kueue release manifest creates. load_config runs this without
    them; the manifest check calls it with them (on the raw config or the typed StackConfig)
    once the manifest is read, still before any resource is registered.
    """
    extra = tuple(extra)
    raw = render.config_form(config)
    problems: list[Problem] = []
    for i, raw_team in enumerate(as_list(raw.get(keys.KEY_TEAMS))):
        team = as_dict(raw_team)
        base: Loc = (keys.KEY_TEAMS, i)
        owned = owned_namespaces(base, team)
        for ns_loc, owned_ns in owned:
            reason = reserved_namespace(owned_ns, extra)
            if reason and not (ns_loc[-1] != "namespace" and owned_ns == team.get("namespace")):
                problems.append(
                    Problem(
                        ns_loc,
                        f"{reason}, not a team's to take (adopted or not); give the team a "
                        "namespace of its own",
                    )
                )
        mine = {n for _, n in owned}
        for k, raw_subject in enumerate(as_list(team.get("submitters"))):
            subject = as_dict(raw_subject)
            namespace = as_str(subject.get("namespace"))
            if subject.get("kind") != "ServiceAccount" or not namespace or namespace in mine:
                continue
            reason = reserved_namespace(namespace, extra)
            if reason:
                loc: Loc = (*base, "submitters", k, "namespace")
                problems.append(Problem(loc, _sa_refusal(reason)))
    return problems
