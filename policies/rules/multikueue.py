"""The pack's rules on admission checks and MultiKueue: AdmissionCheck, MultiKueueConfig,
MultiKueueCluster and ProvisioningRequestConfig fields Kueue refuses, the admission checks each
ClusterQueue names exist (at most one MultiKueue check per queue, for all its flavors, and
never beside a provisioning check), and every reference from a MultiKueue check to its
config, clusters and kubeconfig Secrets resolves. The stack rules see
Secrets by name and namespace only, never their data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_queues.kueue import multikueue as kueue_multikueue
from gpu_queues.kueue.admissioncheck import (
    MULTIKUEUE_CONTROLLER,
    admission_check_errors,
    missing_multikueue_config,
    multikueue_check_placement,
    undeclared_admission_checks,
)
from gpu_queues.kueue.provisioning import (
    PROVISIONING_CONTROLLER,
    provisioning_check_errors,
    provisioning_request_config_errors,
    provisioning_with_multikueue,
)

from ..props import child, is_unknown
from ..resource import (
    Resource,
    Violation,
    config_list,
    config_str,
    field_violation,
    kueue_kind,
    names_of_kind,
    violation,
)
from . import (
    ADMISSION_CHECKS_EXIST,
    DEFAULT_KUEUE_NAMESPACE,
    MULTIKUEUE_REFERENCES_EXIST,
    MULTIKUEUE_WEBHOOK_VALID,
    SECRET_TYPE,
)


def multikueue_webhook_valid(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """AdmissionCheck, MultiKueueConfig, MultiKueueCluster and ProvisioningRequestConfig
    fields Kueue's CRDs refuse or its MultiKueue and provisioning controllers cannot use."""
    kind = kueue_kind(resource)
    check = {
        "AdmissionCheck": _admission_check_errors,
        "MultiKueueConfig": kueue_multikueue.multikueue_config_errors,
        "MultiKueueCluster": kueue_multikueue.multikueue_cluster_errors,
        "ProvisioningRequestConfig": provisioning_request_config_errors,
    }.get(kind or "")
    if check is None:
        return []
    return [field_violation(MULTIKUEUE_WEBHOOK_VALID, resource, e) for e in check(resource.props)]


def _admission_check_errors(props: Mapping[str, Any]) -> list[Any]:
    return [*admission_check_errors(props), *provisioning_check_errors(props)]


def _checks_of(resources: Sequence[Resource], controller: str) -> set[str]:
    return {
        name
        for r in resources
        if kueue_kind(r) == "AdmissionCheck"
        and child(r.props, "spec", "controllerName") == controller
        and isinstance(name := r.k8s_name, str)
    }


def _multikueue_checks(resources: Sequence[Resource]) -> set[str]:
    return _checks_of(resources, MULTIKUEUE_CONTROLLER)


def clusterqueue_admission_checks_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """Every admission check a ClusterQueue names is an AdmissionCheck of the stack or a
    pre-existing one, and a queue uses at most one MultiKueue check, for all its flavors, and
    no provisioning check beside it."""
    declared, unknown_names = names_of_kind(resources, "AdmissionCheck")
    known = declared | set(config_list(config, "preExistingAdmissionChecks"))
    multikueue = _multikueue_checks(resources)
    provisioning = _checks_of(resources, PROVISIONING_CONTROLLER)
    fix = (
        "declare the AdmissionCheck in the stack, fix the name, or add it to "
        f"{ADMISSION_CHECKS_EXIST}.preExistingAdmissionChecks in the policy config"
    )
    violations: list[Violation] = []
    for resource in resources:
        if kueue_kind(resource) != "ClusterQueue":
            continue
        if not unknown_names:  # a check whose name is not known yet may be the one named
            violations += [
                violation(ADMISSION_CHECKS_EXIST, resource, f"{e.where}: {e.message}", fix)
                for e in undeclared_admission_checks(resource.props, known)
            ]
        violations += [
            field_violation(ADMISSION_CHECKS_EXIST, resource, e)
            for e in [
                *multikueue_check_placement(resource.props, multikueue),
                *provisioning_with_multikueue(resource.props, multikueue, provisioning),
            ]
        ]
    return violations


def multikueue_references_exist(
    resources: Sequence[Resource], config: Mapping[str, Any]
) -> list[Violation]:
    """A MultiKueue check's MultiKueueConfig, that config's MultiKueueClusters and each
    cluster's kubeconfig Secret (in Kueue's namespace) exist in the stack or are listed as
    pre-existing in the policy config."""
    namespace = config_str(config, "kueueNamespace", DEFAULT_KUEUE_NAMESPACE)
    configs, configs_unknown = names_of_kind(resources, "MultiKueueConfig")
    clusters, clusters_unknown = names_of_kind(resources, "MultiKueueCluster")
    secrets: set[str] = set()
    secrets_unknown = False
    for r in resources:
        if r.type != SECRET_TYPE or child(r.props, "metadata", "namespace") != namespace:
            continue
        if is_unknown(r.k8s_name):
            secrets_unknown = True
        elif isinstance(r.k8s_name, str):
            secrets.add(r.k8s_name)
    configs |= set(config_list(config, "preExistingMultiKueueConfigs"))
    clusters |= set(config_list(config, "preExistingMultiKueueClusters"))
    secrets |= set(config_list(config, "preExistingKubeconfigSecrets"))
    violations: list[Violation] = []
    for resource in resources:
        kind = kueue_kind(resource)
        if kind == "AdmissionCheck" and not configs_unknown:
            errors = missing_multikueue_config(resource.props, configs)
            what = "preExistingMultiKueueConfigs"
        elif kind == "MultiKueueConfig" and not clusters_unknown:
            errors = kueue_multikueue.missing_multikueue_clusters(resource.props, clusters)
            what = "preExistingMultiKueueClusters"
        elif kind == "MultiKueueCluster" and not secrets_unknown:
            errors = kueue_multikueue.missing_kubeconfig_secret(resource.props, secrets)
            what = "preExistingKubeconfigSecrets"
        else:
            continue
        violations += [
            violation(
                MULTIKUEUE_REFERENCES_EXIST,
                resource,
                f"{e.where}: {e.message}",
                f"{e.fix}, or add it to {MULTIKUEUE_REFERENCES_EXIST}.{what} in the policy config",
            )
            for e in errors
        ]
    return violations
