"""ProvisioningRequestConfigs and the provisioning admission checks that name them: what the
CRD refuses (Kueue v0.18.3 apis/kueue/v1beta2/provisioningrequestconfig_types.go), what Kueue's
provisioning controller cannot load (BadParametersRef,
pkg/controller/admissionchecks/provisioning/admissioncheck_reconciler.go), and where a queue may
not use one (pkg/cache/scheduler/clusterqueue.go: never beside a MultiKueue check). The project
adds, marked PROJECT, that the config a check names exists. Conventions in errors.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any, Final

from gpu_queues.kueue.errors import (
    ENUM,
    FieldError,
    child,
    hashable,
    is_unknown,
    shown_list,
    sized,
)
from gpu_queues.kueue.fields import is_dns_subdomain, is_qualified_name
from gpu_queues.values import as_list

__all__ = [
    "PROVISIONING_CONTROLLER",
    "missing_provisioning_config",
    "provisioning_check_errors",
    "provisioning_request_config_errors",
    "provisioning_with_multikueue",
]

# Rule codes: Kueue's, then the project's.
CLASS_NAME: Final = "provisioning-class"
PARAMETERS: Final = "provisioning-parameters"
MANAGED_RESOURCES: Final = "managed-resources"
RETRY: Final = "retry-strategy"
POD_SET_UPDATES: Final = "pod-set-updates"
CONFIG_REFERENCE: Final = "provisioning-config-reference"
WITH_MULTIKUEUE: Final = "provisioning-with-multikueue"
CONFIG_UNDECLARED: Final = "provisioning-config-undeclared"  # PROJECT

PROVISIONING_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
CONFIG_KIND: Final = "ProvisioningRequestConfig"
MERGE_POLICIES: Final = ("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")
MAX_PARAMETERS: Final = 100
MAX_PARAMETER_LENGTH: Final = 255
MAX_MANAGED_RESOURCES: Final = 100
MAX_NODE_SELECTORS: Final = 8
INT32_MAX: Final = 2**31 - 1
_RETRY_FIELDS: Final = ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds")
_SELECTOR_KEY: Final = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


# --- the ProvisioningRequestConfig ---------------------------------------------------------


def provisioning_request_config_errors(prc: Mapping[str, Any]) -> list[FieldError]:
    """What the ProvisioningRequestConfig CRD refuses."""
    spec = child(prc, "spec")
    if is_unknown(spec):
        return []
    errors: list[FieldError] = []
    _class_name(child(spec, "provisioningClassName"), errors)
    _parameters(child(spec, "parameters"), errors)
    _managed_resources(child(spec, "managedResources"), errors)
    _retry(child(spec, "retryStrategy"), errors)
    _pod_set_updates(child(spec, "podSetUpdates"), errors)
    policy = child(spec, "podSetMergePolicy")
    if policy is not None and not is_unknown(policy) and policy not in MERGE_POLICIES:
        errors.append(
            FieldError(
                ("spec", "podSetMergePolicy"),
                f"podSetMergePolicy {policy!r} is not one of {shown_list(MERGE_POLICIES)}",
                "pick one of them, or leave it unset",
                ENUM,
            )
        )
    return errors


def _class_name(name: Any, errors: list[FieldError]) -> None:
    if is_unknown(name):
        return
    if not isinstance(name, str) or not name:
        errors.append(
            FieldError(
                ("spec", "provisioningClassName"),
                "provisioningClassName is not set",
                "name the autoscaler's provisioning class",
                CLASS_NAME,
            )
        )
    elif not is_dns_subdomain(name):
        errors.append(
            FieldError(
                ("spec", "provisioningClassName"),
                f"provisioningClassName {name!r} is not a DNS subdomain of at most 253 characters",
                "write a class such as check-capacity.autoscaling.x-k8s.io",
                CLASS_NAME,
            )
        )


def _parameters(params: Any, errors: list[FieldError]) -> None:
    if params is None or is_unknown(params):
        return
    path = ("spec", "parameters")
    if not isinstance(params, Mapping):
        errors.append(
            FieldError(path, "parameters is not a mapping", "write name: value pairs", PARAMETERS)
        )
        return
    if len(params) > MAX_PARAMETERS:
        errors.append(
            FieldError(
                path,
                f"parameters has {len(params)} entries",
                f"keep it to at most {MAX_PARAMETERS}",
                PARAMETERS,
            )
        )
    for key, value in params.items():
        if is_unknown(value):
            continue
        if not isinstance(value, str):
            errors.append(
                FieldError(
                    (*path, str(key)),
                    f"parameter {key!r} is not a string",
                    "quote the value",
                    PARAMETERS,
                )
            )
        elif len(value) > MAX_PARAMETER_LENGTH:
            errors.append(
                FieldError(
                    (*path, str(key)),
                    f"parameter {key!r} has {len(value)} characters",
                    f"keep it to at most {MAX_PARAMETER_LENGTH}",
                    PARAMETERS,
                )
            )


def _managed_resources(value: Any, errors: list[FieldError]) -> None:
    path = ("spec", "managedResources")
    items = sized(value, path, "resources", 0, MAX_MANAGED_RESOURCES, errors)
    names = [hashable(r) for r in items or []]
    for i, name in enumerate(names):
        if is_unknown(name):
            continue
        if not isinstance(name, str) or not is_qualified_name(name):
            errors.append(
                FieldError(
                    (*path, i),
                    f"managedResources[{i}] ({name!r}) is not a resource name",
                    "write a resource such as nvidia.com/gpu",
                    MANAGED_RESOURCES,
                )
            )
        elif name in names[:i]:
            errors.append(
                FieldError(
                    (*path, i),
                    f"managedResources lists {name!r} twice (it is a set)",
                    "list each resource once",
                    MANAGED_RESOURCES,
                )
            )


def _retry(retry: Any, errors: list[FieldError]) -> None:
    if retry is None or is_unknown(retry):
        return
    for key in _RETRY_FIELDS:
        value = child(retry, key)
        if value is None or is_unknown(value):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
            errors.append(
                FieldError(
                    ("spec", "retryStrategy", key),
                    f"{key} is {value!r}, not a whole number of 0 or more (int32)",
                    "write a whole number such as 3",
                    RETRY,
                )
            )


def _pod_set_updates(updates: Any, errors: list[FieldError]) -> None:
    if updates is None or is_unknown(updates):
        return
    path = ("spec", "podSetUpdates", "nodeSelector")
    selectors = sized(
        child(updates, "nodeSelector"), path, "selectors", 0, MAX_NODE_SELECTORS, errors
    )
    keys: list[Any] = []
    for i, selector in enumerate(selectors or []):
        key, detail = child(selector, "key"), child(selector, "valueFromProvisioningClassDetail")
        if not is_unknown(key) and not (
            isinstance(key, str) and len(key) <= 317 and _SELECTOR_KEY.match(key)
        ):
            errors.append(
                FieldError(
                    (*path, i, "key"),
                    f"nodeSelector key {key!r} is not a label key",
                    "write a label key such as cloud.example.com/reservation",
                    POD_SET_UPDATES,
                )
            )
        elif key in keys:
            errors.append(
                FieldError(
                    (*path, i, "key"),
                    f"nodeSelector lists key {key!r} twice (a map keyed by key)",
                    "list each key once",
                    POD_SET_UPDATES,
                )
            )
        keys.append(key)
        if not is_unknown(detail) and not (isinstance(detail, str) and 0 < len(detail) <= 32768):
            errors.append(
                FieldError(
                    (*path, i, "valueFromProvisioningClassDetail"),
                    "valueFromProvisioningClassDetail is not set",
                    "name the provisioningClassDetails key the value comes from",
                    POD_SET_UPDATES,
                )
            )


# --- the AdmissionCheck that names it --------------------------------------------------------


def provisioning_check_errors(ac: Mapping[str, Any]) -> list[FieldError]:
    """What Kueue's provisioning controller cannot load (the check stays inactive,
    BadParametersRef): its parameters must name a kueue.x-k8s.io ProvisioningRequestConfig."""
    if child(ac, "spec", "controllerName") != PROVISIONING_CONTROLLER:
        return []
    params = child(ac, "spec", "parameters")
    if is_unknown(params):
        return []
    group, kind = child(params, "apiGroup"), child(params, "kind")
    if params is None or (
        not is_unknown(group)
        and not is_unknown(kind)
        and (group, kind) != (KUEUE_GROUP, CONFIG_KIND)
    ):
        return [
            FieldError(
                ("spec", "parameters"),
                "a provisioning admission check needs parameters naming a "
                "ProvisioningRequestConfig (apiGroup kueue.x-k8s.io); without them Kueue keeps it "
                "inactive (BadParametersRef)",
                "set parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, "
                "name: ...}",
                CONFIG_REFERENCE,
            )
        ]
    return []


def missing_provisioning_config(
    ac: Mapping[str, Any], configs: Collection[str]
) -> list[FieldError]:
    """PROJECT: a provisioning check's ProvisioningRequestConfig exists; Kueue would otherwise
    keep the check inactive and every queue using it admits nothing."""
    if child(ac, "spec", "controllerName") != PROVISIONING_CONTROLLER:
        return []
    name = child(ac, "spec", "parameters", "name")
    if not isinstance(name, str) or not name or name in configs:
        return []
    return [
        FieldError(
            ("spec", "parameters", "name"),
            f"ProvisioningRequestConfig {name!r} is not declared (declared: "
            f"{shown_list(sorted(configs))}), so Kueue keeps the admission check inactive and "
            "its queues admit nothing",
            "declare the ProvisioningRequestConfig, or fix the name",
            CONFIG_UNDECLARED,
        )
    ]


# --- the ClusterQueue that lists it ----------------------------------------------------------


def provisioning_with_multikueue(
    cq: Mapping[str, Any], multikueue_checks: Collection[str], provisioning_checks: Collection[str]
) -> list[FieldError]:
    """Kueue makes a ClusterQueue inactive when it lists a MultiKueue check and a provisioning
    check (MultiKueueWithProvisioningRequest: "Cannot use both MultiKueue and
    ProvisioningRequest AdmissionChecks together"); provisioning belongs on the workers."""
    path = ("spec", "admissionChecksStrategy", "admissionChecks")
    found = [
        (i, child(c, "name")) for i, c in enumerate(as_list(child(cq, *(str(p) for p in path))))
    ]
    multikueue = [n for _, n in found if n in multikueue_checks]
    if not multikueue:
        return []
    return [
        FieldError(
            (*path, i),
            f"provisioning admission check {name!r} is on a queue that dispatches through "
            f"MultiKueue ({shown_list(multikueue)}); Kueue cannot use both MultiKueue and "
            "ProvisioningRequest AdmissionChecks together and would mark the queue inactive",
            "put the provisioning check on the worker clusters' stacks, where the jobs run",
            WITH_MULTIKUEUE,
        )
        for i, name in found
        if name in provisioning_checks
    ]
