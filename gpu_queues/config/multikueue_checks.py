"""MultiKueue in the stack config: what is checked before anything is registered.

Three layers, like the rest of the config check:
- `config_problems` (run by config_checks.cross_check on the raw config): a cluster is a
  manager or a worker, not both; worker and team names are unique and declared; Kueue's own
  rules (gpu_queues/kueue/admissioncheck.py, multikueue.py) on the MultiKueue objects the
  program renders, mapped back to the keys the user wrote; the manager does not switch the
  MultiKueue feature gate off.
- `inline_kubeconfig_problems` (the program's validation phase, where secrets are known): an
  inline worker kubeconfig passes what Kueue's MultiKueue refuses (`kubeconfig_problems`).
- `stack_file_problems`: the running stack's own Pulumi.<stack>.yaml holds every worker
  kubeconfig as a `secure:` value, never plain text.
- `worker_stack_problems`: a worker named by its `stack`, when Pulumi.<stack>.yaml is in the
  project, has each dispatching team with the same namespace and queue names, and exports a
  kubeconfig when the manager takes it from there.

Messages never show a kubeconfig's content, only which rule it breaks.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

import yaml

from gpu_queues import keys, yamlio
from gpu_queues.config import render
from gpu_queues.config.errors import Loc, Problem, format_loc, key_path
from gpu_queues.kueue.admissioncheck import admission_check_errors, missing_multikueue_config
from gpu_queues.kueue.errors import child
from gpu_queues.kueue.fields import api_server_url_problem
from gpu_queues.kueue.multikueue import (
    missing_kubeconfig_secret,
    missing_multikueue_clusters,
    multikueue_cluster_errors,
    multikueue_config_errors,
)
from gpu_queues.values import as_dict, as_list, as_str

MK: Final = keys.KEY_MULTI_KUEUE
MANAGER: Final = (MK, "manager")
WORKERS: Final = (*MANAGER, "workers")
TEAMS: Final = (*MANAGER, "teams")
# The integration MultiKueue dispatches by default: Jobs. Kueue's release enables more
# (jobset, kubeflow, ray, ...), and MultiKueue watches every enabled kind on each worker: one
# whose CRD a worker lacks keeps that worker from connecting ("no matches for kind").
DEFAULT_FRAMEWORKS: Final = ("batch/job",)
# A team's fields that must be the same on its workers, and why.
_JOB_COPY: Final = "MultiKueue creates the job on the worker in the same namespace, queued to "
SAME_ON_WORKERS: Final = {
    "namespace": _JOB_COPY + "the same LocalQueue, so they must match",
    "localQueue": _JOB_COPY + "the same LocalQueue, so they must match",
    "clusterQueue": "a team's quota has one ClusterQueue name on every cluster of the set, so "
    "what the manager and its workers say about it lines up (docs/multikueue.md)",
}


# --- Kueue's rules for a MultiKueue kubeconfig ---------------------------------------------


def kubeconfig_problems(text: str) -> list[str]:
    """What Kueue's MultiKueue refuses in a worker kubeconfig (v0.18.3 multikueuecluster.go:
    validateKubeconfig, validateRestConfig), plus files it cannot read: Kueue reads the
    kubeconfig inside its own pod, where no file of this machine exists. Every cluster and
    user of the file counts, as in Kueue. Empty when it would connect."""
    try:
        doc = yamlio.load(text, "the kubeconfig")
    except yamlio.YamlRefused as exc:
        return [str(exc)]
    except yaml.YAMLError:
        return ["it is not valid YAML"]
    if not isinstance(doc, dict):
        return ["it is not a kubeconfig (a mapping with clusters, users and contexts)"]
    problems: list[str] = []
    for entry in as_list(doc.get("clusters")):
        name = as_dict(entry).get("name")
        cluster = as_dict(as_dict(entry).get("cluster"))
        if cluster.get("insecure-skip-tls-verify"):
            problems.append(f"cluster {name!r} skips TLS verification, which Kueue refuses")
        if cluster.get("certificate-authority"):
            problems.append(
                f"cluster {name!r} names its CA by file path; Kueue wants "
                "certificate-authority-data"
            )
        server = as_str(cluster.get("server"))
        if not server:
            problems.append(f"cluster {name!r} has no server URL")
        else:
            reason = api_server_url_problem(server)
            if reason:
                problems.append(f"cluster {name!r}: its server URL is refused: {reason}")
        data = cluster.get("certificate-authority-data")
        if data is not None and not _is_base64(data):
            problems.append(f"cluster {name!r}: certificate-authority-data is not base64")
    for entry in as_list(doc.get("users")):
        name = as_dict(entry).get("name")
        user = as_dict(as_dict(entry).get("user"))
        for key, why in (
            ("tokenFile", "a token file"),
            ("username", "basic auth"),
            ("password", "basic auth"),
            ("exec", "an exec credential plugin"),
            ("auth-provider", "an auth provider"),
            ("client-certificate", "a client certificate file"),
            ("client-key", "a client key file"),
        ):
            if user.get(key):
                problems.append(
                    f"user {name!r} uses {why} ({key}), which Kueue's MultiKueue refuses or "
                    "cannot read in its pod; use a token or client-certificate-data"
                )
    problems += _current_context_problems(doc)
    return list(dict.fromkeys(problems))


def _current_context_problems(doc: Mapping[str, Any]) -> list[str]:
    """The context Kueue connects with: the current one, which must be in the file and name a
    cluster of it (client-go's ConfirmUsable: "context was not found", else no server)."""
    if not as_list(doc.get("contexts")):
        return ["it has no contexts"]
    current = doc.get("current-context")
    if not current:
        return ["it sets no current-context, which Kueue connects with"]
    contexts = {
        name: as_dict(c)
        for c in as_list(doc.get("contexts"))
        if (name := as_str(as_dict(c).get("name")))
    }
    if as_str(current) not in contexts:
        return [
            f"its current-context {current!r} is not one of its contexts "
            f"({', '.join(sorted(contexts))}), so Kueue cannot connect"
        ]
    cluster = as_dict(contexts[current].get("context")).get("cluster")
    clusters = {n for c in as_list(doc.get("clusters")) if (n := as_str(as_dict(c).get("name")))}
    if as_str(cluster) not in clusters:
        return [
            f"context {current!r} names cluster {cluster!r}, which it does not define, so Kueue "
            "has no server to connect to"
        ]
    return []


def _is_base64(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# --- the stack config ------------------------------------------------------------------------


def _duplicates(items: Iterable[tuple[Loc, Any]], what: str, problems: list[Problem]) -> None:
    first: dict[Any, Loc] = {}
    for loc, value in items:
        if value is None:
            continue
        if value in first:
            problems.append(
                Problem(loc, f"{what} {value!r} is already at {format_loc(first[value])}")
            )
        else:
            first[value] = loc


def _object_loc(
    obj: Mapping[str, Any], path: tuple[str | int, ...], manager: Mapping[str, Any]
) -> Loc:
    """Where a rendered MultiKueue object's field comes from in the stack config."""
    kind, name = obj.get("kind"), child(obj, "metadata", "name")
    if kind == "MultiKueueCluster":
        for i, worker in enumerate(as_list(manager.get("workers"))):
            if as_dict(worker).get("name") == name:
                return (*WORKERS, i, "name")
        return WORKERS
    for j, team in enumerate(as_list(manager.get("teams"))):
        if render.multikueue_check_name(as_dict(team).get("name")) != name:
            continue
        if kind == "MultiKueueConfig" and path[:2] == ("spec", "clusters") and len(path) > 2:
            own = as_dict(team).get("workers")
            if own is not None:
                return (*TEAMS, j, "workers", path[2])
            return (*WORKERS, path[2], "name")
        return (*TEAMS, j, "name")
    return MANAGER


def _kueue_rules(raw: Mapping[str, Any], manager: Mapping[str, Any], out: list[Problem]) -> None:
    """Kueue's rules (the one validation core) on the manager's rendered MultiKueue objects."""
    objects = render.multikueue_objects(raw)

    def names(kind: str) -> set[str]:
        return {
            n
            for o in objects
            if o["kind"] == kind and isinstance(n := o["metadata"].get("name"), str)
        }

    clusters, configs = names("MultiKueueCluster"), names("MultiKueueConfig")
    secrets = {render.kubeconfig_secret_name(n) for n in clusters}
    for obj in objects:
        kind = obj["kind"]
        if kind == "MultiKueueCluster":
            errors = [
                *multikueue_cluster_errors(obj),
                *missing_kubeconfig_secret(obj, secrets),
            ]
        elif kind == "MultiKueueConfig":
            errors = [
                *multikueue_config_errors(obj),
                *missing_multikueue_clusters(obj, clusters),
            ]
        else:
            errors = [
                *admission_check_errors(obj),
                *missing_multikueue_config(obj, configs),
            ]
        for error in errors:
            loc = _object_loc(obj, error.path, manager)
            out.append(Problem(loc, f"{kind} {obj['metadata'].get('name')!r}: {error.message}"))


def _manager(raw: Mapping[str, Any], manager: Mapping[str, Any], out: list[Problem]) -> None:
    declared_workers = _manager_workers(as_list(manager.get("workers")), out)
    _manager_teams(raw, as_list(manager.get("teams")), declared_workers, out)
    gates = as_dict(as_dict(as_dict(raw.get(keys.KEY_KUEUE)).get("manager")).get("featureGates"))
    if gates.get("MultiKueue") is False:
        out.append(
            Problem(
                (keys.KEY_KUEUE, "manager", "featureGates", "MultiKueue"),
                "this stack is a MultiKueue manager (multiKueue.manager), but the gate switches "
                "MultiKueue off, so no job would ever leave this cluster; remove it (on by "
                "default since Kueue v0.9)",
            )
        )
    _kueue_rules(raw, manager, out)


def _manager_workers(workers: list[Any], out: list[Problem]) -> set[str]:
    """Workers named once, each cluster once, each with a kubeconfig; their names."""
    _duplicates(
        (((*WORKERS, i, "name"), as_str(as_dict(w).get("name"))) for i, w in enumerate(workers)),
        "worker",
        out,
    )
    _duplicates(
        (((*WORKERS, i, "stack"), as_str(as_dict(w).get("stack"))) for i, w in enumerate(workers)),
        "worker stack (one cluster, two workers)",
        out,
    )
    for i, raw_worker in enumerate(workers):
        worker = as_dict(raw_worker)
        if worker.get("stack") is None and worker.get("kubeconfig") is None:
            out.append(
                Problem(
                    (*WORKERS, i),
                    "a worker needs its kubeconfig: set stack (its multiKueueKubeconfig output) "
                    "or kubeconfig (with --secret)",
                )
            )
    return {n for w in workers if (n := as_str(as_dict(w).get("name")))}


def _manager_teams(
    raw: Mapping[str, Any], teams: list[Any], declared_workers: set[str], out: list[Problem]
) -> None:
    """Dispatching teams named once, declared as teams of the stack, naming declared workers."""
    stack_teams = {
        n: i
        for i, t in enumerate(as_list(raw.get(keys.KEY_TEAMS)))
        if (n := as_str(as_dict(t).get("name")))
    }
    _duplicates(
        (((*TEAMS, j, "name"), as_str(as_dict(t).get("name"))) for j, t in enumerate(teams)),
        "dispatching team",
        out,
    )
    for j, raw_team in enumerate(teams):
        team = as_dict(raw_team)
        name = as_str(team.get("name"))
        if name is not None and name not in stack_teams:
            out.append(
                Problem(
                    (*TEAMS, j, "name"),
                    f"team {name!r} is not declared under {keys.KEY_TEAMS} (declared: "
                    f"{', '.join(sorted(stack_teams)) or 'none'})",
                )
            )
        own = as_list(team.get("workers"))
        _duplicates(
            (((*TEAMS, j, "workers", k), as_str(w)) for k, w in enumerate(own)), "worker", out
        )
        for k, worker_name in enumerate(own):
            if isinstance(worker_name, str) and worker_name not in declared_workers:
                out.append(
                    Problem(
                        (*TEAMS, j, "workers", k),
                        f"worker {worker_name!r} is not declared under "
                        f"{key_path(WORKERS)} (declared: "
                        f"{', '.join(sorted(declared_workers)) or 'none'})",
                    )
                )


def inline_kubeconfig_problems(raw: Mapping[str, Any]) -> list[Problem]:
    """Worker kubeconfigs given in the config that Kueue would not connect with. Run by the
    program's validation phase, where secrets are decrypted (the tools read a stack file's
    secrets as set but unknown, so load_config never looks inside one)."""
    workers = as_list(as_dict(as_dict(raw.get(MK)).get("manager")).get("workers"))
    return [
        Problem((*WORKERS, i, "kubeconfig"), f"Kueue would not connect with it: {reason}")
        for i, worker in enumerate(workers)
        if (text := as_str(as_dict(worker).get("kubeconfig"))) is not None
        for reason in kubeconfig_problems(text)
    ]


def config_problems(raw: Mapping[str, Any]) -> list[Problem]:
    """The MultiKueue part of the stack config, on the raw config (values of the wrong type
    are skipped: the models report them)."""
    mk = as_dict(raw.get(MK))
    problems: list[Problem] = []
    if mk.get("manager") is not None and mk.get("worker") is not None:
        problems.append(
            Problem(
                (MK,),
                "a cluster is a MultiKueue manager or a worker, not both: set manager on the "
                "stack teams submit to, worker on the stacks whose clusters run the jobs",
            )
        )
    manager = as_dict(mk.get("manager"))
    if manager:
        _manager(raw, manager, problems)
    return problems


# --- the stack file ------------------------------------------------------------------------


def _is_secure(value: object) -> bool:
    """A value `pulumi config set --secret` wrote: {secure: <ciphertext>}."""
    return (
        isinstance(value, Mapping)
        and list(value) == ["secure"]
        and isinstance(value["secure"], str)
    )


def stack_file_problems(text: str, where: str) -> list[Problem]:
    """Worker kubeconfigs written in plain text into a stack file (`where` names it).

    A kubeconfig holds the credentials of a whole cluster: in a stack file it must be a
    `secure:` value, which Pulumi decrypts only for the running program."""
    try:
        doc = yamlio.load(text, where)
    except (yaml.YAMLError, yamlio.YamlRefused):
        return []  # the stack reader (and Pulumi) refuses to read it, saying why
    config = as_dict(as_dict(doc).get("config"))
    problems: list[Problem] = []
    whole = config.get(keys.stack_file_key(config, MK))
    if _is_secure(whole):
        return []  # the whole block is encrypted
    workers = as_list(as_dict(as_dict(whole).get("manager")).get("workers"))
    for i, worker in enumerate(workers):
        kubeconfig = as_dict(worker).get("kubeconfig")
        if kubeconfig is not None and not _is_secure(kubeconfig):
            loc: Loc = (*WORKERS, i, "kubeconfig")
            problems.append(
                Problem(
                    loc,
                    f"is plain text in {where}; a kubeconfig must be a secret. Set it with "
                    f"`pulumi config set --secret --path '{format_loc(loc)}' < kubeconfig`",
                )
            )
    return problems


def plaintext_at_runtime(raw: Mapping[str, Any], secret_keys: Collection[str]) -> list[Problem]:
    """Inline worker kubeconfigs in a config Pulumi does not hold as a secret: the engine marks
    the top-level key secret as soon as any value in it is one."""
    if f"{keys.PROJECT}:{MK}" in secret_keys:
        return []
    workers = as_list(as_dict(as_dict(raw.get(MK)).get("manager")).get("workers"))
    return [
        Problem(
            (*WORKERS, i, "kubeconfig"),
            "is not a secret in this stack's config; set it with `pulumi config set --secret "
            "--path`",
        )
        for i, w in enumerate(workers)
        if as_dict(w).get("kubeconfig") is not None
    ]


# --- worker stacks of this project -----------------------------------------------------------


def worker_stack_name(reference: str, project: str = keys.PROJECT) -> str | None:
    """The stack of this project a StackReference name points at (None: another project)."""
    parts = reference.split("/")
    if len(parts) == 3 and parts[1] != project:
        return None
    return parts[-1]
