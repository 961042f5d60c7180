"""Checks across values of the stack config, on the raw config, all reported at once.

Two kinds. The Kueue rules (gpu_queues/kueue/, one module per object kind) run on the
objects the program is about to register (gpu_queues/config/render.py), and their problems are
mapped back to the stack config key the user wrote
(`spec.resourceGroups[0].flavors[1].resources[2]` of team 0's ClusterQueue is
`teams[0].resourceGroups[0].flavors[1].resources['nvidia.com/gpu']`). The stack's own
relations live here: unique names, declared cohort and flavors, namespaces and RBAC subjects a
team may take, hardware that adds up, shared storage, where the Kueue manifest comes from.

Everything works on the raw config and skips values of the wrong type (the models report
those), so one typo does not hide a quota that would never be admitted.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final
from urllib.parse import urlsplit

from gpu_queues import keys
from gpu_queues.config import multikueue as multikueue_checks
from gpu_queues.config import render
from gpu_queues.config.errors import Loc, Problem, format_loc
from gpu_queues.config.hardware import flavor_hardware
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.kueue.admissioncheck import (
    MULTIKUEUE_CONTROLLER,
    multikueue_check_placement,
    undeclared_admission_checks,
)
from gpu_queues.kueue.capacity import QuotaHolder, over_capacity, quota_totals
from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.errors import FieldError, child
from gpu_queues.kueue.fields import (
    ALWAYS_PRESENT_NAMESPACES,
    is_dns_subdomain,
    reserved_namespace,
    whole_number_problem,
)
from gpu_queues.kueue.quotas import LIMIT_WITHOUT_COHORT
from gpu_queues.kueue.resourceflavor import resource_flavor_errors
from gpu_queues.kueue.resourcegroups import (
    DEFAULT_REQUIRED_RESOURCES,
    FLAVOR_UNDECLARED,
    fractional_quotas,
    uncovered_resources,
    undeclared_flavors,
)
from gpu_queues.pins import kueue_version
from gpu_queues.values import as_dict, as_list, as_str

# Resources every ClusterQueue must cover (the pack's requiredResources default is the same).
REQUIRED_RESOURCES: Final = DEFAULT_REQUIRED_RESOURCES


def _key_path(loc: Loc) -> str:
    """A key path without the project prefix, for use inside a message."""
    return format_loc(loc).split(":", 1)[1]


def _duplicates(items: Iterable[tuple[Loc, Any]], what: str, problems: list[Problem]) -> None:
    first: dict[Any, Loc] = {}
    for loc, value in items:
        if value is None:
            continue
        if value in first:
            problems.append(
                Problem(
                    loc, f"duplicate {what} {value!r}: already used at {format_loc(first[value])}"
                )
            )
        else:
            first[value] = loc


# --- Kueue rules on the rendered objects, mapped back to config keys -----------------------


def _team_loc(base: Loc, cq: Mapping[str, Any], path: tuple[str | int, ...]) -> Loc:
    """Where a path of a team's rendered ClusterQueue comes from in the stack config."""
    if path[:2] == ("metadata", "name"):
        return (*base, "clusterQueue")
    if len(path) < 2 or path[0] != "spec":
        return base
    key, tail = path[1], path[2:]
    if key == "cohortName":
        return (*base, "cohort")
    if key in ("namespaceSelector", "queueingStrategy"):
        return (*base, key)
    if key == "admissionChecksStrategy":
        # The program writes a team's admission check from its multiKueue.manager entry.
        return (keys.KEY_MULTI_KUEUE, "manager", "teams")
    if key == "preemption":
        return (*base, key, *tail)
    if key != "resourceGroups":
        return base
    if len(tail) >= 5 and tail[1] == "flavors" and tail[3] == "resources":
        g, _, f, _, r = tail[:5]
        quota = child(cq, "spec", "resourceGroups")[g]["flavors"][f]["resources"][r]
        return (*base, "resourceGroups", g, "flavors", f, "resources", quota["name"], *tail[5:])
    return (*base, "resourceGroups", *tail)


def _flavor_loc(base: Loc, path: tuple[str | int, ...]) -> Loc:
    if path[:2] == ("metadata", "name"):
        return (*base, "name")
    if path and path[0] == "spec":
        return (*base, *path[1:])
    return base


def _config_fix(error: FieldError, loc: Loc) -> str:
    """The fix in stack config terms, where Kueue's terms would mislead."""
    if error.code == LIMIT_WITHOUT_COHORT:
        return f"set {_key_path((*loc[:2], 'cohort'))} or remove the limit"
    if error.code == FLAVOR_UNDECLARED:
        return f"declare it under {keys.KEY_FLAVORS}, or fix the name"
    return error.fix


def _mapped(errors: Iterable[FieldError], to_loc: Any) -> list[Problem]:
    problems = []
    for error in errors:
        loc = to_loc(error.path)
        message = error.message
        if error.code == LIMIT_WITHOUT_COHORT:
            message = message.replace("the queue has no cohortName", "the team has no cohort")
        problems.append(Problem(loc, f"{message}; {_config_fix(error, loc)}"))
    return problems


def _kueue_rules(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    flavors = as_list(raw.get(keys.KEY_FLAVORS))
    teams = as_list(raw.get(keys.KEY_TEAMS))
    declared = {n for n in (as_str(as_dict(f).get("name")) for f in flavors) if n}

    capacity: dict[tuple[str, str], Fraction] = {}
    capacity_at: dict[tuple[str, str], tuple[Loc, str]] = {}
    for j, raw_flavor in enumerate(flavors):
        flavor = as_dict(raw_flavor)
        base: Loc = (keys.KEY_FLAVORS, j)
        rf = render.resource_flavor(flavor)
        problems += _mapped(resource_flavor_errors(rf), lambda p, b=base: _flavor_loc(b, p))
        hardware = flavor_hardware(flavor)
        problems += [Problem((*base, *loc), message) for loc, message in hardware.problems]
        name = as_str(flavor.get("name"))
        for resource, amount in hardware.capacity.items():
            if name and (name, resource) not in capacity:
                capacity[name, resource] = amount
                detail = hardware.detail.get(resource)
                capacity_at[name, resource] = (
                    (*base, *hardware.source[resource]),
                    f" ({detail})" if detail else "",
                )

    queues = []
    team_of: dict[str, str] = {}
    mk_objects = render.multikueue_objects(raw)
    checks = {o["metadata"]["name"] for o in mk_objects if o["kind"] == "AdmissionCheck"}
    multikueue = {
        o["metadata"]["name"]
        for o in mk_objects
        if o["kind"] == "AdmissionCheck" and o["spec"]["controllerName"] == MULTIKUEUE_CONTROLLER
    }
    for i, raw_team in enumerate(teams):
        team = as_dict(raw_team)
        base = (keys.KEY_TEAMS, i)
        cq = render.cluster_queue(team, render.admission_checks_of(raw, team.get("name")))
        queues.append(cq)
        cq_name, team_name = as_str(team.get("clusterQueue")), as_str(team.get("name"))
        if cq_name and team_name:
            team_of.setdefault(cq_name, team_name)
        errors = [
            *cluster_queue_errors(cq),
            *uncovered_resources(cq, REQUIRED_RESOURCES),
            *fractional_quotas(cq),
            *undeclared_flavors(cq, declared),
            *undeclared_admission_checks(cq, checks),
            *multikueue_check_placement(cq, multikueue),
        ]
        problems += _mapped(errors, lambda p, b=base, q=cq: _team_loc(b, q, p))

    def label(holder: QuotaHolder) -> str:
        return team_of.get(holder.name, f"{holder.kind} {holder.name}")

    totals = quota_totals(queues)
    for overrun in over_capacity(totals, capacity):
        loc, detail = capacity_at[overrun.flavor, overrun.resource]
        problems.append(Problem(loc, overrun.describe(label) + detail))


# --- the stack's own relations --------------------------------------------------------------

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


def _subjects(
    base: Loc, team: Mapping[str, Any], team_namespaces: Mapping[str, Loc], out: list[Problem]
) -> None:
    own = as_str(team.get("namespace"))
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
            f"{_key_path(team_namespaces[namespace])}, whose workloads could then "
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
        own = as_str(team.get("namespace"))
        reason = reserved_namespace(own, extra) if own else None
        if reason:
            problems.append(
                Problem(
                    (*base, "namespace"),
                    f"{reason}, not a team's to take (adopted or not); give the team a "
                    "namespace of its own",
                )
            )
        for k, raw_subject in enumerate(as_list(team.get("submitters"))):
            subject = as_dict(raw_subject)
            namespace = as_str(subject.get("namespace"))
            if subject.get("kind") != "ServiceAccount" or not namespace or namespace == own:
                continue
            reason = reserved_namespace(namespace, extra)
            if reason:
                loc: Loc = (*base, "submitters", k, "namespace")
                problems.append(Problem(loc, _sa_refusal(reason)))
    return problems


def _teams(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    teams = as_list(raw.get(keys.KEY_TEAMS))
    cohort_name = as_str(as_dict(raw.get(keys.KEY_COHORT)).get("name"))
    namespaces: dict[str, Loc] = {}
    for i, t in enumerate(teams):
        ns = as_str(as_dict(t).get("namespace"))
        if ns is not None:
            namespaces.setdefault(ns, (keys.KEY_TEAMS, i))
    for field, what in (
        ("name", "team name"),
        ("namespace", "team namespace (each team has its own)"),
        ("clusterQueue", "ClusterQueue name"),
    ):
        _duplicates(
            (
                ((keys.KEY_TEAMS, i, field), as_str(as_dict(t).get(field)))
                for i, t in enumerate(teams)
            ),
            what,
            problems,
        )
    for i, raw_team in enumerate(teams):
        team = as_dict(raw_team)
        base: Loc = (keys.KEY_TEAMS, i)
        team_cohort = as_str(team.get("cohort"))
        if team_cohort is not None and team_cohort != cohort_name:
            allowed = (
                f"the declared cohort is {cohort_name!r}"
                if cohort_name
                else "no cohort is declared"
            )
            problems.append(
                Problem((*base, "cohort"), f"cohort {team_cohort!r} is not declared; {allowed}")
            )
        namespace = as_str(team.get("namespace"))
        if namespace and reserved_namespace(namespace):
            pass  # reported by reserved_namespace_problems
        elif namespace in ALWAYS_PRESENT_NAMESPACES and team.get("adoptNamespace") is not True:
            problems.append(
                Problem(
                    (*base, "adoptNamespace"),
                    f"namespace {namespace!r} always exists: set adoptNamespace: true to use it",
                )
            )
        others = {n: loc for n, loc in namespaces.items() if loc != base}
        _subjects(base, team, others, problems)


def _storage(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    team_namespaces = {
        as_str(as_dict(t).get("namespace")) for t in as_list(raw.get(keys.KEY_TEAMS))
    }
    team_namespaces.discard(None)
    volumes = as_list(raw.get(keys.KEY_SHARED_STORAGE))
    seen_volume: dict[str, str] = {}
    for v, raw_volume in enumerate(volumes):
        volume = as_dict(raw_volume)
        vloc: Loc = (keys.KEY_SHARED_STORAGE, v)
        vname = as_str(volume.get("volumeName"))
        claim = f"{volume.get('namespace')}/{volume.get('claimName')}"
        if vname is not None:
            if vname in seen_volume:
                problems.append(
                    Problem(
                        (*vloc, "volumeName"),
                        f"PersistentVolume {vname!r} is already claimed by {seen_volume[vname]}; "
                        "a PersistentVolume binds to exactly one claim. For another namespace, "
                        "have the platform create a second static volume on the same storage and "
                        "add it here with its own volumeName",
                    )
                )
            else:
                seen_volume[vname] = claim
        ns = as_str(volume.get("namespace"))
        if ns is not None and ns not in team_namespaces:
            allowed = ", ".join(sorted(n for n in team_namespaces if n)) or "none"
            problems.append(
                Problem(
                    (*vloc, "namespace"),
                    f"namespace {ns!r} is not a team namespace; claims go into a team "
                    f"namespace: {allowed}",
                )
            )
    _duplicates(
        (
            (
                (keys.KEY_SHARED_STORAGE, v, "claimName"),
                (as_str(as_dict(x).get("namespace")), as_str(as_dict(x).get("claimName"))),
            )
            for v, x in enumerate(volumes)
        ),
        "claim (namespace, name)",
        problems,
    )


def manifest_url_problem(url: str, sha256: object) -> str | None:
    """Why the Kueue manifest may not be fetched from `url` (None when it may).

    The manifest holds cluster-wide RBAC, CRDs and webhooks: whatever is fetched is applied
    with the stack's credentials, so its bytes must be authenticated (TLS or a sha256) and the
    URL must not leak secrets into the stack file and logs.
    """
    if any(c.isspace() or unicodedata.category(c).startswith("C") for c in url):
        return "the URL contains whitespace or control characters"
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if parts.username is not None or parts.password is not None:
        return (
            "the URL carries credentials (user:password@), which would sit in the stack file "
            "and in logs; use a mirror that needs none, or download the file and set path"
        )
    if scheme in ("http", "https") and not parts.hostname:
        return "the URL has no host"
    if scheme == "http" and not sha256:
        return (
            "an http:// URL is fetched without TLS, so anyone on the way can change the "
            "manifest, and no kueue.manifest.sha256 is set to catch it; use https://, or pin "
            "the manifest's sha256"
        )
    if scheme == "file" and parts.netloc not in ("", "localhost"):
        return (
            f"file:// URLs name a file on this machine, but this one names host "
            f"{parts.netloc!r}; write file:///absolute/path, or use path"
        )
    return None


def _integrations(kueue: Mapping[str, Any], problems: list[Problem]) -> None:
    """Integrations and feature gates the stack's Kueue version knows: Kueue refuses to start
    with any other, which the stack would only see as a readiness timeout. The facts per
    version live in gpu_queues/kueue/releases.json (gpu_queues.kueue.versions); a version
    without facts is not installable (the manifest check says so) and is not judged here."""
    manager = as_dict(kueue.get("manager"))
    integrations = as_dict(manager.get("integrations"))
    loc: Loc = (keys.KEY_KUEUE, "manager", "integrations")
    rel = kueue_versions.release(as_str(kueue.get("version")) or kueue_version())
    frameworks = as_list(integrations.get("frameworks"))
    unknown = dict(kueue_versions.framework_problems(frameworks, rel)) if rel else {}
    seen: set[str] = set()
    for i, name in enumerate(frameworks):
        if not isinstance(name, str):
            continue
        if i in unknown:
            problems.append(Problem((*loc, "frameworks", i), unknown[i]))
        elif name in seen:
            problems.append(Problem((*loc, "frameworks", i), f"{name!r} is listed twice"))
        seen.add(name)
    gates = as_dict(manager.get("featureGates"))
    for gate, why in kueue_versions.gate_problems(gates, rel) if rel else []:
        problems.append(Problem((keys.KEY_KUEUE, "manager", "featureGates", gate), why))
    for i, name in enumerate(as_list(integrations.get("externalFrameworks"))):
        if isinstance(name, str) and (name.count(".") < 2 or not all(name.split(".", 2))):
            problems.append(
                Problem(
                    (*loc, "externalFrameworks", i),
                    f"{name!r} must have the form Kind.version.group (e.g. "
                    "MyJob.v1.example.com), as Kueue reads it",
                )
            )


def _kueue(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    kueue = as_dict(raw.get(keys.KEY_KUEUE))
    _integrations(kueue, problems)
    manifest = as_dict(kueue.get("manifest"))
    url = as_str(manifest.get("url"))
    if url is not None:
        reason = manifest_url_problem(url, manifest.get("sha256"))
        if reason:
            problems.append(Problem((keys.KEY_KUEUE, "manifest", "url"), reason))
    resources = as_dict(as_dict(kueue.get("controller")).get("resources"))
    for part in ("requests", "limits"):
        for name, value in as_dict(resources.get(part)).items():
            reason = whole_number_problem(str(name), value)
            if reason:
                loc: Loc = (keys.KEY_KUEUE, "controller", "resources", part, str(name))
                problems.append(Problem(loc, reason))


def cross_check(raw: Mapping[str, Any]) -> list[Problem]:
    """Relations between values. Works on the raw config and skips values of the wrong type
    (the models report those), so it runs even when other parts are invalid."""
    problems: list[Problem] = []
    _duplicates(
        (
            ((keys.KEY_FLAVORS, i, "name"), as_str(as_dict(f).get("name")))
            for i, f in enumerate(as_list(raw.get(keys.KEY_FLAVORS)))
        ),
        "flavor name",
        problems,
    )
    _duplicates(
        (
            ((keys.KEY_PRIORITY_CLASSES, i, "name"), as_str(as_dict(p).get("name")))
            for i, p in enumerate(as_list(raw.get(keys.KEY_PRIORITY_CLASSES)))
        ),
        "priority class name",
        problems,
    )
    _teams(raw, problems)
    problems += reserved_namespace_problems(raw)
    _kueue_rules(raw, problems)
    _storage(raw, problems)
    _kueue(raw, problems)
    problems += multikueue_checks.config_problems(raw)
    return problems
