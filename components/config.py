"""Typed stack config: pydantic models plus cross-checks, reported together as one ConfigError.

Validation has two layers that always both run: the models check each value (types, names,
quantities, enums, unknown keys), and `cross_check` looks at relations between values
(flavors that exist, quotas that fit the hardware, unique names) on the raw config, so one
typo does not hide a quota that would never be admitted.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    SecretStr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from components import keys
from components.pins import kueue_version
from components.quantity import QUANTITY_HELP, format_number, parse_quantity

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config, at a key path."""

    loc: Loc
    message: str

    @property
    def path(self) -> str:
        return format_loc(self.loc)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """The stack config is invalid; `problems` lists every problem found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid stack config ({len(self.problems)} problem(s)):\n{lines}")

    @property
    def messages(self) -> list[str]:
        return [str(p) for p in self.problems]


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_loc(loc: Loc) -> str:
    """`('teams', 0, 'resourceGroups')` -> `gpu-queues:teams[0].resourceGroups`."""
    out = f"{keys.PROJECT}:"
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += part if i == 0 else f".{part}"
        else:
            out += f"[{part!r}]"
    return out


# --- value types -------------------------------------------------------------------------

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_VERSION = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _check_label_name(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise PydanticCustomError(
            "k8s_name",
            "{value} is not a valid Kubernetes name: use lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters",
            {"value": repr(value)},
        )
    return value


def _check_subdomain_name(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise PydanticCustomError(
            "k8s_name",
            "{value} is not a valid Kubernetes object name: use lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit, at most 253 characters",
            {"value": repr(value)},
        )
    return value


def _check_qualified_name(value: str) -> str:
    prefix, _, name = value.rpartition("/")
    ok = bool(_QUALIFIED_NAME.match(name)) and len(name) <= 63
    if prefix:
        ok = ok and len(prefix) <= 253 and bool(_DNS_SUBDOMAIN.match(prefix))
    if not ok:
        raise PydanticCustomError(
            "qualified_name",
            "{value} is not a valid resource or label key: [prefix/]name, where name is at "
            "most 63 letters, digits, '-', '_' or '.', and prefix is a DNS subdomain",
            {"value": repr(value)},
        )
    return value


def _check_label_value(value: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise PydanticCustomError(
            "label_value",
            "{value} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit",
            {"value": repr(value)},
        )
    return value


def _check_quantity(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PydanticCustomError(
            "quantity", "must be {help}, got {value}", {"help": QUANTITY_HELP, "value": repr(value)}
        )
    text = str(value)
    try:
        parsed = parse_quantity(text)
    except ValueError:
        raise PydanticCustomError(
            "quantity", "must be {help}, got {value}", {"help": QUANTITY_HELP, "value": repr(value)}
        ) from None
    if parsed < 0:
        raise PydanticCustomError(
            "negative_quantity", "must not be negative, got {value}", {"value": text}
        )
    return text


def _check_version(value: str) -> str:
    if not _VERSION.match(value):
        raise PydanticCustomError(
            "version",
            "Kueue version must have the form vX.Y.Z (for example v0.18.3), got {value}",
            {"value": repr(value)},
        )
    return value


def _check_duration(value: str) -> str:
    if not _DURATION.match(value):
        raise PydanticCustomError(
            "duration",
            "must be a Go duration such as 300s, 5m or 1h30m, got {value}",
            {"value": repr(value)},
        )
    return value


def _check_sha256(value: str) -> str:
    if not _SHA256.match(value):
        raise PydanticCustomError(
            "sha256",
            "must be 64 lowercase hex digits (a sha256 digest), got {value}",
            {"value": repr(value)},
        )
    return value


LabelName = Annotated[
    str,
    AfterValidator(_check_label_name),
    WithJsonSchema({"type": "string", "pattern": _DNS_LABEL.pattern, "maxLength": 63}),
]
ObjectName = Annotated[
    str,
    AfterValidator(_check_subdomain_name),
    WithJsonSchema({"type": "string", "pattern": _DNS_SUBDOMAIN.pattern, "maxLength": 253}),
]
QualifiedName = Annotated[
    str,
    AfterValidator(_check_qualified_name),
    WithJsonSchema({"type": "string", "maxLength": 317}),
]
LabelValue = Annotated[
    str,
    AfterValidator(_check_label_value),
    WithJsonSchema({"type": "string", "pattern": _LABEL_VALUE.pattern, "maxLength": 63}),
]
Quantity = Annotated[
    str,
    PlainValidator(_check_quantity),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^\+?[0-9.]+[a-zA-Z0-9+-]*$"},
                {"type": "number", "minimum": 0},
            ],
            "description": QUANTITY_HELP,
        }
    ),
]
Version = Annotated[
    str,
    AfterValidator(_check_version),
    WithJsonSchema({"type": "string", "pattern": _VERSION.pattern}),
]
Duration = Annotated[
    str,
    AfterValidator(_check_duration),
    WithJsonSchema({"type": "string", "pattern": _DURATION.pattern}),
]
Sha256 = Annotated[
    str,
    AfterValidator(_check_sha256),
    WithJsonSchema({"type": "string", "pattern": _SHA256.pattern}),
]
ResourceName = QualifiedName


class Model(BaseModel):
    """Base for every config model: camelCase keys, unknown keys are errors, immutable."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)


# --- kubernetes connection ---------------------------------------------------------------


class KubernetesConfig(Model):
    """How the explicit Kubernetes provider connects. Unset kubeconfig: the ambient KUBECONFIG."""

    kubeconfig: SecretStr | None = Field(
        default=None, description="kubeconfig content (set it as a secret); unset: $KUBECONFIG"
    )
    context: str | None = Field(default=None, description="kubeconfig context to use")


# --- kueue ---------------------------------------------------------------------------------


class ManifestSource(Model):
    url: str | None = Field(
        default=None, description="mirror of manifests.yaml; default: the official release URL"
    )
    path: str | None = Field(
        default=None, description="local manifests.yaml, relative to the project root (air-gapped)"
    )
    sha256: Sha256 | None = Field(
        default=None, description="expected sha256 of the manifest; mismatch: nothing is applied"
    )

    @model_validator(mode="after")
    def _one_source(self) -> ManifestSource:
        if self.url is not None and self.path is not None:
            raise PydanticCustomError("manifest_source", "set either url or path, not both")
        if self.url is not None and not self.url.startswith(("https://", "http://", "file://")):
            raise PydanticCustomError(
                "manifest_url",
                "url must start with https://, http:// or file://, got {url}",
                {"url": repr(self.url)},
            )
        return self


class Integrations(Model):
    frameworks: list[str] | None = Field(
        default=None,
        description="e.g. batch/job, pod, jobset.x-k8s.io/jobset; unset: the release default",
    )
    external_frameworks: list[str] | None = None
    label_keys_to_copy: list[str] | None = None


class RequeuingStrategy(Model):
    timestamp: Literal["Eviction", "Creation"] | None = None
    backoff_limit_count: int | None = Field(default=None, ge=0)
    backoff_base_seconds: int | None = Field(default=None, ge=1)
    backoff_max_seconds: int | None = Field(default=None, ge=1)


class WaitForPodsReady(Model):
    """Present means enabled (Kueue v1beta2 has no `enable` field)."""

    timeout: Duration
    block_admission: bool | None = None
    recovery_timeout: Duration | None = None
    requeuing_strategy: RequeuingStrategy | None = None


class FairSharing(Model):
    """Present means enabled."""

    preemption_strategies: (
        list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] | None
    ) = None


class LabelSelectorRequirement(Model):
    key: QualifiedName
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(Model):
    match_labels: dict[QualifiedName, LabelValue] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class ManagerConfig(Model):
    """Fields rendered into Kueue's manager Configuration (ConfigMap kueue-manager-config)."""

    integrations: Integrations | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    fair_sharing: FairSharing | None = None
    managed_jobs_namespace_selector: LabelSelector | None = None
    manage_jobs_without_queue_name: bool | None = None
    feature_gates: dict[str, bool] | None = None


class Toleration(Model):
    key: QualifiedName | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class Taint(Model):
    key: QualifiedName
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class ResourceRequirements(Model):
    requests: dict[ResourceName, Quantity] | None = None
    limits: dict[ResourceName, Quantity] | None = None


class ControllerConfig(Model):
    """Placement and size of kueue-controller-manager."""

    replicas: int | None = Field(default=None, ge=1, le=10)
    resources: ResourceRequirements | None = None
    node_selector: dict[QualifiedName, LabelValue] | None = None
    tolerations: list[Toleration] | None = None


def _default_version() -> str:
    return kueue_version()


class KueueConfig(Model):
    version: Version = Field(
        default_factory=_default_version,
        description="Kueue release vX.Y.Z; default: toolchain/pins.env",
    )
    install: bool = Field(
        default=True, description="false: Kueue is preinstalled, only wait for it"
    )
    manifest: ManifestSource = Field(default_factory=ManifestSource)
    readiness_timeout_seconds: int = Field(
        default=300, ge=10, le=3600, description="how long to wait for Kueue's webhooks to serve"
    )
    controller: ControllerConfig = Field(default_factory=ControllerConfig)
    manager: ManagerConfig = Field(default_factory=ManagerConfig)

    @property
    def manifest_url(self) -> str:
        """Where the manifest comes from when no local path is set."""
        if self.manifest.url is not None:
            return self.manifest.url
        return (
            "https://github.com/kubernetes-sigs/kueue/releases/download/"
            f"{self.version}/manifests.yaml"
        )


# --- flavors, cohort, teams ---------------------------------------------------------------


class Flavor(Model):
    name: ObjectName
    node_labels: dict[QualifiedName, LabelValue] | None = Field(default=None, max_length=8)
    node_taints: list[Taint] | None = Field(default=None, max_length=8)
    tolerations: list[Toleration] | None = Field(default=None, max_length=8)
    capacity: dict[ResourceName, Quantity] | None = Field(
        default=None, description="physical capacity behind the flavor; team quotas must fit in it"
    )


class Cohort(Model):
    name: ObjectName


class ResourceQuota(Model):
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(Model):
    name: ObjectName = Field(description="a flavor declared under flavors")
    resources: dict[ResourceName, ResourceQuota] = Field(
        description="one entry per covered resource of the group"
    )


class ResourceGroup(Model):
    covered_resources: list[ResourceName] = Field(min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=64)


class BorrowWithinCohort(Model):
    policy: Literal["Never", "LowerPriority"]
    max_priority_threshold: int | None = None


class Preemption(Model):
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] | None = None
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] | None = (
        None
    )
    borrow_within_cohort: BorrowWithinCohort | None = None


class Subject(Model):
    kind: Literal["User", "Group", "ServiceAccount"]
    name: str = Field(min_length=1)
    namespace: LabelName | None = Field(
        default=None, description="ServiceAccount only; default: the team namespace"
    )


class Team(Model):
    name: LabelName
    namespace: LabelName
    adopt_namespace: bool = Field(
        default=False, description="true: the namespace already exists; adopt it, never delete it"
    )
    cluster_queue: ObjectName
    local_queue: ObjectName
    namespace_selector: Literal["team", "all"] = Field(
        default="team", description="team: only the team namespace; all: {} (every namespace)"
    )
    cohort: ObjectName | None = None
    resource_groups: list[ResourceGroup] = Field(min_length=1, max_length=16)
    preemption: Preemption | None = None
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] | None = None
    submitters: list[Subject] = Field(default_factory=list)


class SharedVolume(Model):
    """A claim bound to a static PersistentVolume (which binds to exactly one claim)."""

    volume_name: ObjectName = Field(description="the static PersistentVolume to bind")
    claim_name: ObjectName
    namespace: LabelName
    size: Quantity
    storage_class: str = Field(min_length=1)
    access_mode: Literal["ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany", "ReadWriteOncePod"] = (
        "ReadWriteMany"
    )
    allow_destroy: bool = Field(default=False, description="false: `pulumi destroy` refuses")


class StackConfig(Model):
    kubernetes: KubernetesConfig = Field(default_factory=KubernetesConfig)
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    flavors: list[Flavor] = Field(default_factory=list)
    cohort: Cohort | None = None
    teams: list[Team] = Field(default_factory=list)
    shared_storage: list[SharedVolume] = Field(default_factory=list)


# --- error formatting ---------------------------------------------------------------------


def _strip_optional(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The model class that owns the key at `loc` (for listing allowed keys)."""
    current: Any = StackConfig
    parts = list(loc)
    while parts:
        current = _strip_optional(current)
        part = parts.pop(0)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next(
                (f for n, f in current.model_fields.items() if (f.alias or n) == part), None
            )
            if field is None:
                return None
            current = field.annotation
        elif typing.get_origin(current) is list:
            current = typing.get_args(current)[0]
        elif typing.get_origin(current) is dict:
            current = typing.get_args(current)[1]
        else:
            return None
    current = _strip_optional(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


def _describe_error(err: Mapping[str, Any]) -> str:
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        owner = _model_at(loc[:-1])
        allowed = _allowed_keys(owner) if owner else []
        bad = str(loc[-1])
        hint = difflib.get_close_matches(bad, allowed, n=1)
        msg = f"unknown key {bad!r}"
        if hint:
            msg += f" (did you mean {hint[0]!r}?)"
        if allowed:
            msg += f"; allowed keys: {', '.join(allowed)}"
        return msg
    if kind == "missing":
        return "required key is missing"
    message = str(err["msg"])
    secret = bool(loc) and loc[0] == keys.KEY_KUBERNETES
    value = err.get("input")
    show = value is None or isinstance(value, str | int | float | bool)
    prefixes = ("literal_error", "int_", "bool_", "string_", "list_", "dict_", "model_")
    if kind.startswith(prefixes) and show and not secret:
        message += f" (got {value!r})"
    return message


def _problems_from_validation(exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        problems.append(Problem(loc, _describe_error(err)))
    return problems


# --- cross checks on the raw config -------------------------------------------------------

_SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _qty(value: Any) -> Fraction | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return parse_quantity(str(value))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


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


def cross_check(raw: Mapping[str, Any]) -> list[Problem]:
    """Relations between values. Works on the raw config and skips values of the wrong type
    (the models report those), so it runs even when other parts are invalid."""
    problems: list[Problem] = []
    flavors = _list(raw.get(keys.KEY_FLAVORS))
    teams = _list(raw.get(keys.KEY_TEAMS))
    cohort = _dict(raw.get(keys.KEY_COHORT))
    cohort_name = _str(cohort.get("name"))

    flavor_names = [_str(_dict(f).get("name")) for f in flavors]
    declared = {n for n in flavor_names if n}
    _duplicates(
        (((keys.KEY_FLAVORS, i, "name"), n) for i, n in enumerate(flavor_names)),
        "flavor name",
        problems,
    )
    _duplicates(
        (((keys.KEY_TEAMS, i, "name"), _str(_dict(t).get("name"))) for i, t in enumerate(teams)),
        "team name",
        problems,
    )
    _duplicates(
        (
            ((keys.KEY_TEAMS, i, "namespace"), _str(_dict(t).get("namespace")))
            for i, t in enumerate(teams)
        ),
        "team namespace (each team has its own)",
        problems,
    )
    _duplicates(
        (
            ((keys.KEY_TEAMS, i, "clusterQueue"), _str(_dict(t).get("clusterQueue")))
            for i, t in enumerate(teams)
        ),
        "ClusterQueue name",
        problems,
    )

    # (flavor, resource) -> [(team, nominal)]
    usage: dict[tuple[str, str], list[tuple[str, Fraction]]] = {}
    for i, raw_team in enumerate(teams):
        team = _dict(raw_team)
        base: Loc = (keys.KEY_TEAMS, i)
        team_name = _str(team.get("name")) or f"teams[{i}]"
        team_cohort = _str(team.get("cohort"))
        if team_cohort is not None and team_cohort != cohort_name:
            allowed = (
                f"the declared cohort is {cohort_name!r}"
                if cohort_name
                else "no cohort is declared"
            )
            problems.append(
                Problem((*base, "cohort"), f"cohort {team_cohort!r} is not declared; {allowed}")
            )
        namespace = _str(team.get("namespace"))
        if namespace in _SYSTEM_NAMESPACES and team.get("adoptNamespace") is not True:
            problems.append(
                Problem(
                    (*base, "adoptNamespace"),
                    f"namespace {namespace!r} always exists: set adoptNamespace: true to use it",
                )
            )
        groups = _list(team.get("resourceGroups"))
        covered_all: dict[str, int] = {}
        flavor_group: dict[str, int] = {}
        for g, raw_group in enumerate(groups):
            group = _dict(raw_group)
            gloc: Loc = (*base, "resourceGroups", g)
            covered = [r for r in _list(group.get("coveredResources")) if isinstance(r, str)]
            for c, res in enumerate(covered):
                if res in covered_all:
                    where = (
                        "this group"
                        if covered_all[res] == g
                        else f"resourceGroups[{covered_all[res]}]"
                    )
                    problems.append(
                        Problem(
                            (*gloc, "coveredResources", c),
                            f"resource {res!r} is already covered by {where}; a resource may "
                            "appear in only one resource group, once",
                        )
                    )
                else:
                    covered_all[res] = g
            for f, raw_fq in enumerate(_list(group.get("flavors"))):
                fq = _dict(raw_fq)
                floc: Loc = (*gloc, "flavors", f)
                fname = _str(fq.get("name"))
                if fname is not None:
                    if fname not in declared:
                        choices = ", ".join(sorted(declared)) or "none"
                        problems.append(
                            Problem(
                                (*floc, "name"),
                                f"flavor {fname!r} is not declared under flavors; "
                                f"declared: {choices}",
                            )
                        )
                    if fname in flavor_group:
                        problems.append(
                            Problem(
                                (*floc, "name"),
                                f"flavor {fname!r} already appears in resourceGroups"
                                f"[{flavor_group[fname]}]; a flavor may appear in only one "
                                "group, once",
                            )
                        )
                    else:
                        flavor_group[fname] = g
                resources = fq.get("resources")
                if not isinstance(resources, dict):
                    continue
                for res in covered:
                    if res not in resources:
                        problems.append(
                            Problem(
                                (*floc, "resources"),
                                f"no quota for covered resource {res!r}; every flavor needs a "
                                f"nominalQuota for each of: {', '.join(covered)}",
                            )
                        )
                for res, raw_quota in resources.items():
                    qloc: Loc = (*floc, "resources", str(res))
                    if covered and res not in covered:
                        problems.append(
                            Problem(
                                qloc,
                                f"resource {res!r} is not in coveredResources "
                                f"({', '.join(covered)}); add it there or remove this quota",
                            )
                        )
                    quota = _dict(raw_quota)
                    nominal = _qty(quota.get("nominalQuota"))
                    lending = _qty(quota.get("lendingLimit"))
                    if nominal is not None and lending is not None and lending > nominal:
                        problems.append(
                            Problem(
                                (*qloc, "lendingLimit"),
                                f"lendingLimit {quota.get('lendingLimit')} is above nominalQuota "
                                f"{quota.get('nominalQuota')}; it may be at most the nominal quota",
                            )
                        )
                    for limit in ("borrowingLimit", "lendingLimit"):
                        if quota.get(limit) is not None and team_cohort is None:
                            problems.append(
                                Problem(
                                    (*qloc, limit),
                                    f"{limit} needs a cohort to borrow from or lend to; set "
                                    f"teams[{i}].cohort or remove the limit",
                                )
                            )
                    if fname is not None and nominal is not None:
                        usage.setdefault((fname, str(res)), []).append((team_name, nominal))
        if groups and any(isinstance(g, dict) for g in groups):
            missing = [r for r in ("cpu", "memory") if r not in covered_all]
            if missing:
                problems.append(
                    Problem(
                        (*base, "resourceGroups"),
                        f"the ClusterQueue does not cover {' and '.join(missing)}: every pod "
                        "requests them, so its jobs would never be admitted; add "
                        f"{', '.join(missing)} to coveredResources with a quota",
                    )
                )
        preemption = _dict(team.get("preemption"))
        borrow = _dict(preemption.get("borrowWithinCohort"))
        if borrow.get("policy") not in (None, "Never") and preemption.get(
            "reclaimWithinCohort", "Never"
        ) in (None, "Never"):
            problems.append(
                Problem(
                    (*base, "preemption", "borrowWithinCohort", "policy"),
                    "borrowWithinCohort.policy other than Never needs reclaimWithinCohort "
                    "LowerPriority or Any",
                )
            )

    for j, raw_flavor in enumerate(flavors):
        flavor = _dict(raw_flavor)
        fname = _str(flavor.get("name"))
        for res, raw_cap in _dict(flavor.get("capacity")).items():
            cap = _qty(raw_cap)
            users = usage.get((fname or "", str(res)), [])
            total = sum((n for _, n in users), Fraction(0))
            if fname and cap is not None and total > cap:
                parts = ", ".join(f"{t} {format_number(n)}" for t, n in users)
                problems.append(
                    Problem(
                        (keys.KEY_FLAVORS, j, "capacity", str(res)),
                        f"nominal quotas of {res} in flavor {fname!r} add up to "
                        f"{format_number(total)} ({parts}), above the declared capacity "
                        f"{format_number(cap)}",
                    )
                )

    team_namespaces = {_str(_dict(t).get("namespace")) for t in teams} - {None}
    volumes = _list(raw.get(keys.KEY_SHARED_STORAGE))
    seen_volume: dict[str, str] = {}
    for v, raw_volume in enumerate(volumes):
        volume = _dict(raw_volume)
        vloc: Loc = (keys.KEY_SHARED_STORAGE, v)
        vname = _str(volume.get("volumeName"))
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
        ns = _str(volume.get("namespace"))
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
                (_str(_dict(x).get("namespace")), _str(_dict(x).get("claimName"))),
            )
            for v, x in enumerate(volumes)
        ),
        "claim (namespace, name)",
        problems,
    )
    return problems


# --- entry points -------------------------------------------------------------------------


def load_config(raw: Mapping[str, Any]) -> StackConfig:
    """Validate the stack config (top-level keys without the project prefix).

    Raises ConfigError listing every problem; returns the typed config otherwise.
    """
    problems: list[Problem] = []
    config: StackConfig | None = None
    if not isinstance(raw, Mapping):
        raise ConfigError([Problem((), "the stack config must be a mapping of keys")])
    try:
        config = StackConfig.model_validate(dict(raw))
    except ValidationError as exc:
        problems.extend(_problems_from_validation(exc))
    except (TypeError, ValueError, RecursionError) as exc:  # pragma: no cover - defensive
        problems.append(Problem((), f"cannot read the stack config: {type(exc).__name__}"))
    problems.extend(cross_check(raw))
    if problems or config is None:
        raise ConfigError(problems or [Problem((), "invalid stack config")])
    return config


def _decode(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def raw_from_pulumi_config() -> dict[str, Any]:
    """Every `gpu-queues:*` key of the running stack, JSON values decoded."""
    from pulumi.runtime import config as runtime_config

    merged: dict[str, Any] = {}
    merged.update(runtime_config.get_config_env())
    merged.update(runtime_config.CONFIG.get())
    prefix = f"{keys.PROJECT}:"
    return {k[len(prefix) :]: _decode(v) for k, v in merged.items() if k.startswith(prefix)}
