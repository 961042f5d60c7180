"""The MultiKueue objects an admission check leads to: what the MultiKueueConfig and
MultiKueueCluster CRDs refuse, a kubeconfig path Kueue v0.19 refuses, and (PROJECT) that the
workers and Secrets they name exist. Conventions (FieldError, UNKNOWN) in
gpu_queues/kueue/errors.py; the AdmissionCheck itself in admissioncheck.py.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from gpu_queues.kueue.admissioncheck import MULTIKUEUE_REFERENCE
from gpu_queues.kueue.errors import (
    ENUM,
    FieldError,
    Path,
    bounded_name,
    child,
    hashable,
    is_unknown,
    shown,
    shown_list,
    sized,
)
from gpu_queues.kueue.fields import is_dns_subdomain
from gpu_queues.values import as_list

__all__ = [
    "missing_kubeconfig_secret",
    "missing_multikueue_clusters",
    "multikueue_cluster_errors",
    "multikueue_config_errors",
]

# Rule codes.
CLUSTER_NAME: Final = "cluster-name"
CLUSTER_TWICE: Final = "cluster-twice"
CLUSTER_SOURCE: Final = "cluster-source"
KUBECONFIG_LOCATION: Final = "kubeconfig-location"

MAX_MULTIKUEUE_CLUSTERS: Final = 20  # MultiKueueConfig clusters
MAX_MULTIKUEUE_NAME: Final = 256  # MultiKueueConfig cluster names, kubeConfig location
# Kueue v0.19 reads a kubeconfig given by path only from under here (gate
# MultiKueueKubeConfigPathValidation, on by default); earlier versions read any path in
# their pod, which holds no such file unless mounted. A Secret is the portable source.
KUBECONFIG_PATH_PREFIX: Final = "/etc/multikueue/kubeconfigs/"
_SOURCE: Final = ("spec", "clusterSource")


def multikueue_config_errors(mkc: Mapping[str, Any]) -> list[FieldError]:
    """What the MultiKueueConfig CRD refuses: 1-20 clusters, each named once, at most 256
    characters."""
    path: Path = ("spec", "clusters")
    errors: list[FieldError] = []
    clusters = sized(
        child(mkc, "spec", "clusters"),
        path,
        "MultiKueueCluster names",
        1,
        MAX_MULTIKUEUE_CLUSTERS,
        errors,
    )
    seen: set[Any] = set()
    for i, name in enumerate(clusters or []):
        bounded_name(
            name, (*path, i), "the cluster name", MAX_MULTIKUEUE_NAME, errors, CLUSTER_NAME
        )
        if isinstance(name, str) and name in seen:
            errors.append(
                FieldError(
                    (*path, i), f"cluster {name!r} is listed twice", "list it once", CLUSTER_TWICE
                )
            )
        seen.add(hashable(name))
    quota = child(mkc, "spec", "quotaManagement")
    if quota is not None and not is_unknown(quota) and quota not in ("Manual", "Automated"):
        errors.append(
            FieldError(
                ("spec", "quotaManagement"),
                f"quotaManagement is {shown(quota)!r}",
                "use Manual or Automated",
                ENUM,
            )
        )
    return errors


def multikueue_cluster_errors(cluster: Mapping[str, Any]) -> list[FieldError]:
    """What the MultiKueueCluster CRD refuses (exactly one of kubeConfig and clusterProfileRef;
    location 1-256 characters; locationType Secret or Path), and a Path Kueue v0.19 refuses."""
    source = child(cluster, *_SOURCE)
    if is_unknown(source):
        return []
    errors: list[FieldError] = []
    kubeconfig, profile = child(source, "kubeConfig"), child(source, "clusterProfileRef")
    if (kubeconfig is None) == (profile is None):
        errors.append(
            FieldError(
                _SOURCE,
                "clusterSource needs exactly one of kubeConfig and clusterProfileRef",
                "set kubeConfig: {location: <Secret name>, locationType: Secret}",
                CLUSTER_SOURCE,
            )
        )
    if profile is not None and not is_unknown(profile):
        bounded_name(
            child(profile, "name"),
            (*_SOURCE, "clusterProfileRef", "name"),
            "clusterProfileRef.name",
            MAX_MULTIKUEUE_NAME,
            errors,
            CLUSTER_SOURCE,
        )
    if kubeconfig is not None and not is_unknown(kubeconfig):
        _kubeconfig(kubeconfig, errors)
    return errors


def _kubeconfig(kubeconfig: Any, errors: list[FieldError]) -> None:
    """kubeConfig: a location of 1-256 characters, a Secret name or (Kueue v0.19) a path under
    the kubeconfig folder, and locationType Secret or Path."""
    kpath: Path = (*_SOURCE, "kubeConfig")
    location = child(kubeconfig, "location")
    kind = child(kubeconfig, "locationType")
    bounded_name(
        location, (*kpath, "location"), "location", MAX_MULTIKUEUE_NAME, errors, KUBECONFIG_LOCATION
    )
    if kind is not None and not is_unknown(kind) and kind not in ("Secret", "Path"):
        errors.append(
            FieldError(
                (*kpath, "locationType"),
                f"locationType is {shown(kind)!r}",
                "use Secret (the default) or Path",
                ENUM,
            )
        )
    is_text = isinstance(location, str) and bool(location)
    if kind in (None, "Secret") and is_text and not is_dns_subdomain(str(location)):
        errors.append(
            FieldError(
                (*kpath, "location"),
                f"location {location!r} is not a Secret name",
                "name a Secret in Kueue's namespace",
                KUBECONFIG_LOCATION,
            )
        )
    if kind == "Path" and is_text and not _under_kubeconfig_dir(str(location)):
        errors.append(
            FieldError(
                (*kpath, "location"),
                f"path {location!r} is outside {KUBECONFIG_PATH_PREFIX}, which Kueue v0.19 "
                "refuses (and only a file mounted into Kueue's pod can be read at all)",
                "keep the kubeconfig in a Secret (locationType: Secret), or mount it under "
                f"{KUBECONFIG_PATH_PREFIX}",
                KUBECONFIG_LOCATION,
            )
        )


def _under_kubeconfig_dir(path: str) -> bool:
    return path.startswith(KUBECONFIG_PATH_PREFIX) and ".." not in path.split("/")


def missing_multikueue_clusters(
    mkc: Mapping[str, Any], clusters: Collection[str]
) -> list[FieldError]:
    """PROJECT: every worker a MultiKueueConfig names is a MultiKueueCluster; Kueue would
    report it missing (and the check inactive when none is left)."""
    return [
        FieldError(
            ("spec", "clusters", i),
            f"MultiKueueCluster {name!r} is not declared (declared: "
            f"{shown_list(sorted(clusters))}), so no job is ever dispatched to it",
            "declare the MultiKueueCluster, or fix the name",
            MULTIKUEUE_REFERENCE,
        )
        for i, name in enumerate(as_list(child(mkc, "spec", "clusters")))
        if isinstance(name, str) and name and name not in clusters
    ]


def missing_kubeconfig_secret(
    cluster: Mapping[str, Any], secrets: Collection[str]
) -> list[FieldError]:
    """PROJECT: the Secret a MultiKueueCluster reads its kubeconfig from exists in Kueue's
    namespace; Kueue would otherwise never connect to the worker."""
    kubeconfig = child(cluster, "spec", "clusterSource", "kubeConfig")
    location = child(kubeconfig, "location")
    if child(kubeconfig, "locationType") not in (None, "Secret"):
        return []
    if not isinstance(location, str) or not location or location in secrets:
        return []
    return [
        FieldError(
            ("spec", "clusterSource", "kubeConfig", "location"),
            f"Secret {location!r} is not declared in Kueue's namespace (declared: "
            f"{shown_list(sorted(secrets))}), so Kueue cannot connect to this worker",
            "declare the Secret with the worker's kubeconfig under key kubeconfig",
            MULTIKUEUE_REFERENCE,
        )
    ]
