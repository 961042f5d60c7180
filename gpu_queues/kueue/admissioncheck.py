"""AdmissionChecks, and the checks a ClusterQueue names: what the AdmissionCheck CRD refuses,
what Kueue's MultiKueue controller cannot load (BadConfig), and where Kueue allows a MultiKueue
check on a queue (pkg/controller/admissionchecks/multikueue and
pkg/cache/scheduler/clusterqueue.go, Kueue v0.18.3: one per ClusterQueue, never per flavor).
The project adds, marked PROJECT, that what a queue or check names exists (Kueue would only mark
the queue or check inactive). Conventions (FieldError, UNKNOWN) in gpu_queues/kueue/errors.py;
the MultiKueue objects a check leads to in multikueue.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from gpu_queues.kueue.errors import (
    FieldError,
    Path,
    bounded_name,
    child,
    is_unknown,
    shown_list,
)
from gpu_queues.kueue.fields import is_dns_label, is_dns_subdomain
from gpu_queues.values import as_list

__all__ = [
    "MULTIKUEUE_CONTROLLER",
    "admission_check_errors",
    "admission_check_names",
    "missing_multikueue_config",
    "multikueue_check_placement",
    "undeclared_admission_checks",
]

# Rule codes: Kueue's, then the project's.
CONTROLLER_NAME: Final = "controller-name"
CHECK_PARAMETERS: Final = "check-parameters"
MULTIKUEUE_CHECKS: Final = "multikueue-checks"
CHECK_UNDECLARED: Final = "check-undeclared"  # PROJECT
MULTIKUEUE_REFERENCE: Final = "multikueue-reference"  # PROJECT

# Kueue's MultiKueue admission check controller and the one kind its parameters may name.
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
_PARAMETERS_KIND: Final = re.compile(r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$")
_PARAMETERS: Final = ("spec", "parameters")


# --- the checks a ClusterQueue names ---------------------------------------------------------


def _checks(cq: Any) -> Iterable[tuple[Path, Any, Any]]:
    """(path, name, rule) of every admission check a ClusterQueue lists."""
    path: Path = ("spec", "admissionChecksStrategy", "admissionChecks")
    checks = child(cq, *(str(p) for p in path))
    for i, check in enumerate(as_list(checks)):
        yield (*path, i), child(check, "name"), check


def admission_check_names(cq: Mapping[str, Any]) -> list[str]:
    """The names of the admission checks a ClusterQueue lists (unknown ones left out)."""
    return [name for _, name, _ in _checks(cq) if isinstance(name, str) and name]


def undeclared_admission_checks(
    cq: Mapping[str, Any], declared: Collection[str]
) -> list[FieldError]:
    """PROJECT: every admission check a ClusterQueue names exists; Kueue would otherwise mark
    the queue inactive (AdmissionCheckNotFound) and admit nothing."""
    return [
        FieldError(
            (*path, "name"),
            f"admission check {name!r} is not declared (declared: "
            f"{shown_list(sorted(declared))}), so Kueue would mark the queue inactive "
            "(AdmissionCheckNotFound) and admit nothing",
            "declare the AdmissionCheck, or fix the name",
            CHECK_UNDECLARED,
        )
        for path, name, _ in _checks(cq)
        if isinstance(name, str) and name and name not in declared
    ]


def multikueue_check_placement(
    cq: Mapping[str, Any], multikueue_checks: Collection[str]
) -> list[FieldError]:
    """Kueue makes a ClusterQueue inactive with more than one MultiKueue admission check
    (MultipleMultiKueueAdmissionChecks) or with one limited to some flavors
    (MultiKueueAdmissionCheckAppliedPerFlavor). `multikueue_checks`: the AdmissionChecks whose
    controllerName is kueue.x-k8s.io/multikueue."""
    errors: list[FieldError] = []
    found = [(p, n, c) for p, n, c in _checks(cq) if n in multikueue_checks]
    if len(found) > 1:
        errors.append(
            FieldError(
                ("spec", "admissionChecksStrategy", "admissionChecks"),
                f"it lists {len(found)} MultiKueue admission checks "
                f"({shown_list(n for _, n, _ in found)}); Kueue allows one and would mark the "
                "queue inactive",
                "keep one MultiKueue admission check; put every worker in its MultiKueueConfig",
                MULTIKUEUE_CHECKS,
            )
        )
    for path, name, check in found:
        flavors = child(check, "onFlavors")
        if is_unknown(flavors) or not as_list(flavors):
            continue
        errors.append(
            FieldError(
                (*path, "onFlavors"),
                f"MultiKueue admission check {name!r} is limited to flavors "
                f"{shown_list(as_list(flavors))}; Kueue runs MultiKueue for a whole queue only "
                "and would mark it inactive",
                "remove onFlavors from the MultiKueue admission check",
                MULTIKUEUE_CHECKS,
            )
        )
    return errors


# --- the AdmissionCheck ------------------------------------------------------------------------


def admission_check_errors(ac: Mapping[str, Any]) -> list[FieldError]:
    """What the AdmissionCheck CRD refuses, and what Kueue's MultiKueue controller cannot load
    (BadConfig): a MultiKueue check's parameters must name a kueue.x-k8s.io MultiKueueConfig."""
    spec = child(ac, "spec")
    if is_unknown(spec):
        return []
    errors: list[FieldError] = []
    controller = child(spec, "controllerName")
    bounded_name(
        controller, ("spec", "controllerName"), "controllerName", 253, errors, CONTROLLER_NAME
    )
    params = child(spec, "parameters")
    if params is not None and not is_unknown(params):
        _parameters(params, errors)
    if controller == MULTIKUEUE_CONTROLLER and not is_unknown(params):
        _multikueue_parameters(params, errors)
    return errors


def _parameters(params: Any, errors: list[FieldError]) -> None:
    """parameters: an API group, a kind and a name, each set and well formed."""
    group, kind, name = (child(params, k) for k in ("apiGroup", "kind", "name"))
    if isinstance(group, str) and not is_dns_subdomain(group):
        errors.append(
            FieldError(
                (*_PARAMETERS, "apiGroup"),
                f"apiGroup {group!r} is not an API group",
                "write a DNS subdomain",
                CHECK_PARAMETERS,
            )
        )
    if isinstance(kind, str) and not (len(kind) <= 63 and _PARAMETERS_KIND.match(kind)):
        errors.append(
            FieldError(
                (*_PARAMETERS, "kind"),
                f"kind {kind!r} is not a kind",
                "write a kind such as MultiKueueConfig",
                CHECK_PARAMETERS,
            )
        )
    if isinstance(name, str) and not is_dns_label(name):
        errors.append(
            FieldError(
                (*_PARAMETERS, "name"),
                f"parameters name {name!r} is not a DNS label of at most 63 characters",
                "use a shorter name of lowercase letters, digits and '-'",
                CHECK_PARAMETERS,
            )
        )
    for key, value in (("apiGroup", group), ("kind", kind), ("name", name)):
        if value is None:
            errors.append(
                FieldError(
                    (*_PARAMETERS, key), f"parameters.{key} is not set", "set it", CHECK_PARAMETERS
                )
            )


def _multikueue_parameters(params: Any, errors: list[FieldError]) -> None:
    """A MultiKueue check's parameters name a kueue.x-k8s.io MultiKueueConfig."""
    group, kind = child(params, "apiGroup"), child(params, "kind")
    if params is None or (
        not is_unknown(group)
        and not is_unknown(kind)
        and (group, kind) != (KUEUE_GROUP, "MultiKueueConfig")
    ):
        errors.append(
            FieldError(
                _PARAMETERS,
                "a MultiKueue admission check needs parameters naming a MultiKueueConfig "
                "(apiGroup kueue.x-k8s.io); without them Kueue keeps it inactive (BadConfig)",
                "set parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: ...}",
                CHECK_PARAMETERS,
            )
        )


def missing_multikueue_config(ac: Mapping[str, Any], configs: Collection[str]) -> list[FieldError]:
    """PROJECT: a MultiKueue admission check's MultiKueueConfig exists; Kueue would otherwise
    keep the check inactive (BadConfig), and every queue using it admits nothing."""
    if child(ac, "spec", "controllerName") != MULTIKUEUE_CONTROLLER:
        return []
    name = child(ac, "spec", "parameters", "name")
    if not isinstance(name, str) or not name or name in configs:
        return []
    return [
        FieldError(
            ("spec", "parameters", "name"),
            f"MultiKueueConfig {name!r} is not declared (declared: "
            f"{shown_list(sorted(configs))}), so Kueue keeps the admission check inactive and "
            "its queues admit nothing",
            "declare the MultiKueueConfig, or fix the name",
            MULTIKUEUE_REFERENCE,
        )
    ]
