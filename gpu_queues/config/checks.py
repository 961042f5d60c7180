"""Checks across values of the stack config, on the raw config, all reported at once.

Two kinds. The Kueue rules (gpu_queues/kueue/, one module per object kind) run on the
objects the program is about to register, their problems mapped back to the stack config key
the user wrote (gpu_queues/config/rendered.py). The stack's own relations: unique names,
declared cohort and flavors, the namespaces and RBAC subjects a team may take
(gpu_queues/config/subjects.py), hardware that adds up, shared storage, where the Kueue
manifest comes from.

Everything works on the raw config and skips values of the wrong type (the models report
those), so one typo does not hide a quota that would never be admitted.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from gpu_queues import keys
from gpu_queues.config import multikueue_checks, provisioning_checks
from gpu_queues.config.errors import Loc, Problem, format_loc
from gpu_queues.config.monitoring import metrics_problems
from gpu_queues.config.rendered import kueue_rule_problems
from gpu_queues.config.subjects import (
    check_subjects,
    owned_namespaces,
    reserved_namespace_problems,
)
from gpu_queues.config.topology_checks import topology_problems
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.kueue.fields import (
    ALWAYS_PRESENT_NAMESPACES,
    reserved_namespace,
    whole_number_problem,
)
from gpu_queues.pins import kueue_version
from gpu_queues.values import as_dict, as_list, as_str


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


def cohort_names(raw: Mapping[str, Any]) -> list[str]:
    """Every cohort a team may join: the one-cohort form's, then the tree's."""
    names = [as_str(as_dict(raw.get(keys.KEY_COHORT)).get("name"))]
    names += [as_str(as_dict(c).get("name")) for c in as_list(raw.get(keys.KEY_COHORTS))]
    return [n for n in names if n is not None]


def _cohorts(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    """Cohort names are unique across `cohort` and `cohorts` (the tree's rules on the rendered
    Cohorts are in gpu_queues/kueue/cohort.py, run by rendered.py)."""
    items: list[tuple[Loc, Any]] = [
        ((keys.KEY_COHORT, "name"), as_str(as_dict(raw.get(keys.KEY_COHORT)).get("name")))
    ]
    items += [
        ((keys.KEY_COHORTS, i, "name"), as_str(as_dict(c).get("name")))
        for i, c in enumerate(as_list(raw.get(keys.KEY_COHORTS)))
    ]
    _duplicates(items, "cohort name", problems)


def _team_queues(
    base: Loc, team: Mapping[str, Any], owner: Mapping[str, Loc], problems: list[Problem]
) -> None:
    """The default namespace is one of `namespaces`; one queue form at a time; each LocalQueue
    in a namespace the team owns (`owner`: namespace -> where a team declares it)."""
    names = as_list(team.get("namespaces"))
    namespace = as_str(team.get("namespace"))
    if team.get("namespaces") is not None and namespace is not None and namespace not in names:
        problems.append(
            Problem(
                (*base, "namespace"),
                f"namespace {namespace!r} is not one of namespaces; the default namespace is "
                "one of them (or leave namespace unset)",
            )
        )
    if team.get("localQueues") is not None and team.get("localQueue") is not None:
        problems.append(
            Problem(
                (*base, "localQueue"),
                "set localQueue (one queue) or localQueues, not both (the first of localQueues "
                "is the team's default)",
            )
        )
    mine = {n for _, n in owned_namespaces(base, team)}
    for j, raw_queue in enumerate(as_list(team.get("localQueues"))):
        queue_ns = as_str(as_dict(raw_queue).get("namespace"))
        if queue_ns is None or queue_ns in mine:
            continue
        where = (
            f"it belongs to the team at {format_loc(owner[queue_ns][:2])}"
            if queue_ns in owner
            else "no team owns it"
        )
        problems.append(
            Problem(
                (*base, "localQueues", j, "namespace"),
                f"namespace {queue_ns!r} is not one of the team's namespaces "
                f"({', '.join(sorted(mine)) or 'none'}); {where}. Add it to the team's "
                "namespaces, or put the queue in one of them",
            )
        )


def _admission_scope(raw: Mapping[str, Any], base: Loc, team: Mapping[str, Any]) -> list[Problem]:
    """admissionScope orders a team's LocalQueues only where Kueue's admission fair sharing is
    on: the manager's admissionFairSharing set and its feature gate not off (Kueue's
    afs.Enabled); otherwise Kueue ignores it without a word."""
    mode = as_dict(team.get("admissionScope")).get("admissionMode")
    if mode != "UsageBasedAdmissionFairSharing":
        return []
    manager = as_dict(as_dict(raw.get(keys.KEY_KUEUE)).get("manager"))
    loc: Loc = (*base, "admissionScope")
    if as_dict(manager.get("featureGates")).get("AdmissionFairSharing") is False:
        return [
            Problem(
                loc,
                "admission fair sharing is switched off (kueue.manager.featureGates."
                "AdmissionFairSharing: false), so Kueue would ignore admissionScope",
            )
        ]
    if manager.get("admissionFairSharing") is None:
        return [
            Problem(
                loc,
                "admissionScope needs kueue.manager.admissionFairSharing (usageHalfLifeTime, "
                "usageSamplingInterval): without it Kueue ignores the team's admissionScope",
            )
        ]
    return []


def _teams(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    teams = as_list(raw.get(keys.KEY_TEAMS))
    declared = cohort_names(raw)
    owner: dict[str, Loc] = {}
    owned: list[tuple[Loc, str]] = []
    for i, t in enumerate(teams):
        for loc, ns in owned_namespaces((keys.KEY_TEAMS, i), as_dict(t)):
            owner.setdefault(ns, loc)
            owned.append((loc, ns))
    # A team's `namespace` may repeat one of its own `namespaces`; any other repeat is a
    # namespace two teams (or one team twice) claim.
    repeats = [
        (loc, ns)
        for loc, ns in owned
        if not (isinstance(loc[-1], int) and as_dict(teams[int(loc[1])]).get("namespace") == ns)
    ]
    names = {
        field: [
            ((keys.KEY_TEAMS, i, field), as_str(as_dict(t).get(field))) for i, t in enumerate(teams)
        ]
        for field in ("name", "clusterQueue")
    }
    _duplicates(names["name"], "team name", problems)
    _duplicates(repeats, "team namespace (each team has its own)", problems)
    _duplicates(names["clusterQueue"], "ClusterQueue name", problems)
    _duplicates(
        (
            (
                (keys.KEY_TEAMS, i, "localQueues", j, "name"),
                (as_str(q.get("namespace")), as_str(q.get("name"))),
            )
            for i, t in enumerate(teams)
            for j, q in enumerate(as_dict(x) for x in as_list(as_dict(t).get("localQueues")))
        ),
        "LocalQueue (namespace, name)",
        problems,
    )
    for i, raw_team in enumerate(teams):
        team = as_dict(raw_team)
        base: Loc = (keys.KEY_TEAMS, i)
        team_cohort = as_str(team.get("cohort"))
        if team_cohort is not None and team_cohort not in declared:
            allowed = (
                f"the declared cohorts are {', '.join(declared)}"
                if len(declared) > 1
                else f"the declared cohort is {declared[0]!r}"
                if declared
                else "no cohort is declared"
            )
            problems.append(
                Problem((*base, "cohort"), f"cohort {team_cohort!r} is not declared; {allowed}")
            )
        present = [
            n
            for _, n in owned_namespaces(base, team)
            if n in ALWAYS_PRESENT_NAMESPACES and not reserved_namespace(n)
        ]  # reserved ones: reported by reserved_namespace_problems
        if present and team.get("adoptNamespace") is not True:
            problems.append(
                Problem(
                    (*base, "adoptNamespace"),
                    f"namespace {present[0]!r} always exists: set adoptNamespace: true to use it",
                )
            )
        _team_queues(base, team, owner, problems)
        problems.extend(_admission_scope(raw, base, team))
        others = {n: loc[:2] for n, loc in owner.items() if loc[:2] != base}
        check_subjects(base, team, others, problems)


def _storage(raw: Mapping[str, Any], problems: list[Problem]) -> None:
    team_namespaces: set[str | None] = {
        n
        for i, t in enumerate(as_list(raw.get(keys.KEY_TEAMS)))
        for _, n in owned_namespaces((keys.KEY_TEAMS, i), as_dict(t))
    }
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
    _duplicates(
        (
            ((keys.KEY_TOPOLOGIES, i, "name"), as_str(as_dict(t).get("name")))
            for i, t in enumerate(as_list(raw.get(keys.KEY_TOPOLOGIES)))
        ),
        "topology name",
        problems,
    )
    _cohorts(raw, problems)
    _teams(raw, problems)
    problems += reserved_namespace_problems(raw)
    kueue_rule_problems(raw, problems)
    _storage(raw, problems)
    _kueue(raw, problems)
    problems += multikueue_checks.config_problems(raw)
    problems += provisioning_checks.config_problems(raw)
    problems += metrics_problems(raw)
    problems += topology_problems(raw)
    return problems
