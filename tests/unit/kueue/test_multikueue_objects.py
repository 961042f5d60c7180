"""The MultiKueue object rules on hand-written objects in the shape Kueue v1beta2 documents:
what the MultiKueueConfig CRD refuses (1-20 clusters, each named once in at most 256
characters; quotaManagement Manual or Automated), what the MultiKueueCluster CRD refuses
(exactly one of kubeConfig and clusterProfileRef; a location of 1-256 characters; locationType
Secret or Path), the kubeconfig path Kueue v0.19 refuses (outside /etc/multikueue/kubeconfigs/),
and the project's rules that the workers and Secrets they name exist. Each case pins the whole
error: where, the message, the fix and the rule's code."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.kueue.errors import UNKNOWN, FieldError
from gpu_queues.kueue.multikueue import (
    missing_kubeconfig_secret,
    missing_multikueue_clusters,
    multikueue_cluster_errors,
    multikueue_config_errors,
)

pytestmark = pytest.mark.unit

KUBECONFIG = "spec.clusterSource.kubeConfig"
PREFIX = "/etc/multikueue/kubeconfigs/"


def found(errors: list[FieldError]) -> list[tuple[str, str, str, str]]:
    return [(e.where, e.message, e.fix, e.code) for e in errors]


def config(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueConfig",
        "metadata": {"name": "ml"},
        "spec": spec,
    }


def cluster(source: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueCluster",
        "metadata": {"name": "east"},
        "spec": {"clusterSource": source},
    }


def kubeconfig(location: Any, kind: Any = None) -> dict[str, Any]:
    given: dict[str, Any] = {"location": location}
    if kind is not None:
        given["locationType"] = kind
    return cluster({"kubeConfig": given})


# --- the MultiKueueConfig ------------------------------------------------------------------------


def test_a_config_of_one_to_twenty_distinct_clusters_passes() -> None:
    assert multikueue_config_errors(config({"clusters": ["east"]})) == []
    twenty = [f"w{i}" for i in range(20)]
    assert multikueue_config_errors(config({"clusters": twenty})) == []
    assert multikueue_config_errors(config({"clusters": ["c" * 256]})) == []
    assert multikueue_config_errors(config(UNKNOWN)) == []
    assert multikueue_config_errors(config({"clusters": UNKNOWN})) == []


@pytest.mark.parametrize(("count", "clusters"), [(0, []), (21, [f"w{i}" for i in range(21)])])
def test_a_config_lists_between_one_and_twenty_clusters(count: int, clusters: list[str]) -> None:
    assert found(multikueue_config_errors(config({"clusters": clusters}))) == [
        (
            "spec.clusters",
            f"clusters has {count} entries",
            "list between 1 and 20 MultiKueueCluster names",
            "list-size",
        )
    ]


def test_a_config_without_clusters_is_refused() -> None:
    assert [e.message for e in multikueue_config_errors(config({}))] == ["clusters has 0 entries"]


def test_a_cluster_listed_twice_is_refused_where_it_repeats() -> None:
    clusters = ["east", "west", "east", UNKNOWN, UNKNOWN]
    assert found(multikueue_config_errors(config({"clusters": clusters}))) == [
        ("spec.clusters[2]", "cluster 'east' is listed twice", "list it once", "cluster-twice")
    ]


def test_cluster_names_are_set_and_at_most_256_characters() -> None:
    clusters = ["", "c" * 257, None]
    assert found(multikueue_config_errors(config({"clusters": clusters}))) == [
        ("spec.clusters[0]", "the cluster name is not set", "set the cluster name", "cluster-name"),
        (
            "spec.clusters[1]",
            "the cluster name has 257 characters",
            "keep it to at most 256",
            "cluster-name",
        ),
        ("spec.clusters[2]", "the cluster name is not set", "set the cluster name", "cluster-name"),
    ]


def test_quota_management_is_manual_or_automated() -> None:
    for ok in ("Manual", "Automated", None, UNKNOWN):
        spec = {"clusters": ["east"], "quotaManagement": ok}
        assert multikueue_config_errors(config(spec)) == []
    spec = {"clusters": ["east"], "quotaManagement": "manual"}
    assert found(multikueue_config_errors(config(spec))) == [
        (
            "spec.quotaManagement",
            "quotaManagement is 'manual'",
            "use Manual or Automated",
            "enum",
        )
    ]


def test_every_worker_a_config_names_must_be_declared() -> None:
    mkc = config({"clusters": ["east", "gone", UNKNOWN, ""]})
    assert missing_multikueue_clusters(mkc, {"east", "gone"}) == []
    assert found(missing_multikueue_clusters(mkc, {"west", "east"})) == [
        (
            "spec.clusters[1]",
            "MultiKueueCluster 'gone' is not declared (declared: east, west), so no job is "
            "ever dispatched to it",
            "declare the MultiKueueCluster, or fix the name",
            "multikueue-reference",
        )
    ]
    assert missing_multikueue_clusters(config(UNKNOWN), set()) == []


# --- the MultiKueueCluster -----------------------------------------------------------------------


SOURCE_ERROR = (
    "spec.clusterSource",
    "clusterSource needs exactly one of kubeConfig and clusterProfileRef",
    "set kubeConfig: {location: <Secret name>, locationType: Secret}",
    "cluster-source",
)


def test_a_cluster_reading_a_secret_or_a_profile_passes() -> None:
    assert multikueue_cluster_errors(kubeconfig("multikueue-east")) == []
    assert multikueue_cluster_errors(kubeconfig("multikueue-east", "Secret")) == []
    assert multikueue_cluster_errors(kubeconfig(f"{PREFIX}east.yaml", "Path")) == []
    assert multikueue_cluster_errors(kubeconfig(UNKNOWN, UNKNOWN)) == []
    assert multikueue_cluster_errors(cluster({"clusterProfileRef": {"name": "east"}})) == []
    assert multikueue_cluster_errors(cluster({"clusterProfileRef": UNKNOWN})) == []
    assert multikueue_cluster_errors(cluster({"kubeConfig": UNKNOWN})) == []
    assert multikueue_cluster_errors(cluster(UNKNOWN)) == []


def test_a_cluster_has_exactly_one_source() -> None:
    assert found(multikueue_cluster_errors(cluster({}))) == [SOURCE_ERROR]
    both = {"kubeConfig": {"location": "east"}, "clusterProfileRef": {"name": "east"}}
    assert found(multikueue_cluster_errors(cluster(both))) == [SOURCE_ERROR]


def test_a_cluster_profile_is_named_in_at_most_256_characters() -> None:
    assert multikueue_cluster_errors(cluster({"clusterProfileRef": {"name": "p" * 256}})) == []
    where = "spec.clusterSource.clusterProfileRef.name"
    too_long = cluster({"clusterProfileRef": {"name": "p" * 257}})
    assert found(multikueue_cluster_errors(too_long)) == [
        (
            where,
            "clusterProfileRef.name has 257 characters",
            "keep it to at most 256",
            "cluster-source",
        )
    ]
    assert found(multikueue_cluster_errors(cluster({"clusterProfileRef": {}}))) == [
        (where, "clusterProfileRef.name is not set", "set clusterProfileRef.name", "cluster-source")
    ]


def test_a_kubeconfig_location_is_set_and_at_most_256_characters() -> None:
    where = f"{KUBECONFIG}.location"
    assert found(multikueue_cluster_errors(kubeconfig(""))) == [
        (where, "location is not set", "set location", "kubeconfig-location")
    ]
    long_path = PREFIX + "k" * (257 - len(PREFIX))
    assert found(multikueue_cluster_errors(kubeconfig(long_path, "Path"))) == [
        (where, "location has 257 characters", "keep it to at most 256", "kubeconfig-location")
    ]
    assert multikueue_cluster_errors(kubeconfig(long_path[:-1], "Path")) == []


def test_a_location_type_is_secret_or_path() -> None:
    assert found(multikueue_cluster_errors(kubeconfig("east", "File"))) == [
        (
            f"{KUBECONFIG}.locationType",
            "locationType is 'File'",
            "use Secret (the default) or Path",
            "enum",
        )
    ]


@pytest.mark.parametrize("kind", [None, "Secret"])
def test_a_secret_location_is_a_secret_name(kind: Any) -> None:
    assert found(multikueue_cluster_errors(kubeconfig("East_Cluster", kind))) == [
        (
            f"{KUBECONFIG}.location",
            "location 'East_Cluster' is not a Secret name",
            "name a Secret in Kueue's namespace",
            "kubeconfig-location",
        )
    ]


@pytest.mark.parametrize(
    "path", ["/tmp/kc", "/etc/multikueue/kubeconfigs", f"{PREFIX}../../etc/passwd", "east"]
)
def test_a_path_outside_the_kubeconfig_folder_is_refused(path: str) -> None:
    assert found(multikueue_cluster_errors(kubeconfig(path, "Path"))) == [
        (
            f"{KUBECONFIG}.location",
            f"path {path!r} is outside {PREFIX}, which Kueue v0.19 refuses (and only a file "
            "mounted into Kueue's pod can be read at all)",
            f"keep the kubeconfig in a Secret (locationType: Secret), or mount it under {PREFIX}",
            "kubeconfig-location",
        )
    ]


def test_a_path_whose_name_merely_has_dots_is_under_the_folder() -> None:
    assert multikueue_cluster_errors(kubeconfig(f"{PREFIX}east..yaml", "Path")) == []
    assert multikueue_cluster_errors(kubeconfig(f"{PREFIX}a/b/east", "Path")) == []


def test_the_secret_a_cluster_reads_must_be_declared() -> None:
    assert missing_kubeconfig_secret(kubeconfig("multikueue-east"), {"multikueue-east"}) == []
    assert found(missing_kubeconfig_secret(kubeconfig("mk-east", "Secret"), {"b", "a"})) == [
        (
            f"{KUBECONFIG}.location",
            "Secret 'mk-east' is not declared in Kueue's namespace (declared: a, b), so Kueue "
            "cannot connect to this worker",
            "declare the Secret with the worker's kubeconfig under key kubeconfig",
            "multikueue-reference",
        )
    ]
    assert len(missing_kubeconfig_secret(kubeconfig("mk-east"), set())) == 1
    assert missing_kubeconfig_secret(kubeconfig(f"{PREFIX}east", "Path"), set()) == []
    for location in ("", UNKNOWN, None):
        assert missing_kubeconfig_secret(kubeconfig(location), set()) == []
    assert missing_kubeconfig_secret(cluster({"clusterProfileRef": {"name": "p"}}), set()) == []
