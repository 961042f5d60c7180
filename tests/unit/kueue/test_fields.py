"""The Kubernetes name, resource, namespace and address checks against the rules the API server
documents (k8s.io/apimachinery validation: a DNS label has at most 63 characters, a subdomain
at most 253, a qualified name an optional subdomain prefix and a name of at most 63, a label
value at most 63 and may be empty; k8s.io/kubernetes: extended and integer resources), with
boundaries worked out by hand."""

from __future__ import annotations

import pytest

from gpu_queues.kueue.fields import (
    api_server_url_problem,
    is_dns_label,
    is_dns_subdomain,
    is_extended_resource,
    is_label_value,
    is_native_resource,
    is_qualified_name,
    needs_whole_number,
    reserved_namespace,
    whole_number_problem,
)

pytestmark = pytest.mark.unit


def test_a_dns_label_is_at_most_63_lowercase_characters() -> None:
    assert is_dns_label("a" * 63) and is_dns_label("gpu-a100") and is_dns_label("0")
    assert not is_dns_label("a" * 64)
    assert not any(map(is_dns_label, ["", "A", "-a", "a-", "a.b", "a_b"]))


def test_a_dns_subdomain_is_at_most_253_characters_of_dotted_labels() -> None:
    longest = ".".join(["a" * 63] * 3 + ["b" * 61])  # 63*3 + 61 + 3 dots = 253
    assert len(longest) == 253 and is_dns_subdomain(longest)
    assert not is_dns_subdomain(longest + "b")
    assert is_dns_subdomain("kueue.x-k8s.io")
    assert not any(map(is_dns_subdomain, ["", "a..b", ".a", "a.", "A.io", "a_b.io"]))


def test_a_qualified_name_is_a_name_with_an_optional_subdomain_prefix() -> None:
    for ok in ("gpu", "nvidia.com/gpu", "Node_Pool.x-1", "a" * 63, "example.com/" + "A" * 63):
        assert is_qualified_name(ok), ok
    for bad in (
        "",
        "a" * 64,
        "example.com/" + "a" * 64,
        "/gpu",
        "a/b/c",
        "Example.com/gpu",
        "example.com/",
        "-gpu",
        "gpu.",
        ("a" * 254) + "/gpu",
    ):
        assert not is_qualified_name(bad), bad


def test_a_label_value_is_at_most_63_characters_and_may_be_empty() -> None:
    assert is_label_value("") and is_label_value("A100_80GB.v-2") and is_label_value("v" * 63)
    assert not is_label_value("v" * 64)
    assert not any(map(is_label_value, ["-a", "a-", "a/b", "a b"]))


def test_native_resources_are_unprefixed_or_in_the_kubernetes_io_namespace() -> None:
    assert all(map(is_native_resource, ["cpu", "memory", "hugepages-2Mi", "kubernetes.io/x"]))
    assert is_native_resource("foo.kubernetes.io/bar")
    assert not is_native_resource("nvidia.com/gpu")


def test_extended_resources_are_a_device_plugins_prefixed_names() -> None:
    assert is_extended_resource("nvidia.com/gpu") and is_extended_resource("example.com/fpga")
    for not_extended in (
        "cpu",
        "kubernetes.io/gpu",
        "requests.nvidia.com/gpu",
        "nvidia.com/-gpu",
        "nvidia.com/" + "g" * 64,
        "Nvidia.com/gpu",
    ):
        assert not is_extended_resource(not_extended), not_extended


def test_object_counts_and_extended_resources_come_in_whole_numbers() -> None:
    assert needs_whole_number("pods") and needs_whole_number("services.loadbalancers")
    assert needs_whole_number("nvidia.com/gpu")
    assert not needs_whole_number("cpu") and not needs_whole_number("memory")


def test_a_fraction_of_a_whole_number_resource_is_explained() -> None:
    assert whole_number_problem("nvidia.com/gpu", "1.5") == (
        "nvidia.com/gpu is an extended resource: Kubernetes allows only whole numbers of it "
        "(a pod cannot request 1500m of one), got '1.5'"
    )
    assert whole_number_problem("pods", "500m") == (
        "pods is counted in units: Kubernetes allows only whole numbers of it (a pod cannot "
        "request 500m of one), got '500m'"
    )
    assert whole_number_problem("nvidia.com/gpu", "2") is None
    assert whole_number_problem("nvidia.com/gpu", "2000m") is None
    assert whole_number_problem("cpu", "1.5") is None
    assert whole_number_problem("pods", "lots") is None  # the quantity check reports it


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "kube-system",
            "namespace 'kube-system' belongs to the cluster (Kubernetes' own components run there)",
        ),
        (
            "kube-node-lease",
            "namespace 'kube-node-lease' belongs to the cluster (Kubernetes' own components run "
            "there)",
        ),
        (
            "kube-mine",
            "namespace 'kube-mine': the kube- prefix is reserved for Kubernetes' own namespaces",
        ),
        (
            "kueue-system",
            "namespace 'kueue-system' is created by the Kueue release manifest (Kueue's own "
            "namespace, where its controller runs)",
        ),
        ("kueue-extra", "namespace 'kueue-extra' is created by the Kueue release manifest"),
        ("default", None),
        ("ml", None),
        ("kube", None),
    ],
)
def test_the_namespaces_a_team_may_not_take(name: str, expected: str | None) -> None:
    assert reserved_namespace(name, ["kueue-extra"]) == expected


def test_without_the_manifests_namespaces_only_the_fixed_ones_are_reserved() -> None:
    assert reserved_namespace("kueue-extra") is None


HTTPS_ONLY = "it must start with https:// (the manager authenticates with a token)"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://east.example.com:6443", None),
        ("https://10.0.0.1:6443/", None),
        ("https://[fd00::1]:6443", None),
        ("https://East.Example.com", None),
        ("https://east .example.com", "it contains whitespace or control characters"),
        ("https://east\x7f.example.com", "it contains whitespace or control characters"),
        ("https://east:port", "it is not a URL"),
        ("https://[fd00::1", "it is not a URL"),
        ("http://east:6443", HTTPS_ONLY),
        ("east:6443", HTTPS_ONLY),
        (
            "https://admin@east:6443",
            "it carries credentials (user:password@); Kueue refuses basic auth",
        ),
        (
            "https://:secret@east:6443",
            "it carries credentials (user:password@); Kueue refuses basic auth",
        ),
        ("https://:6443", "it has no host"),
        (
            "https://east_1.example.com",
            "host 'east_1.example.com' is neither an IP address nor a DNS name, which Kueue "
            "refuses",
        ),
        (
            "https://east?x=1",
            "it has a query or fragment, which an API server address never has",
        ),
        (
            "https://east#top",
            "it has a query or fragment, which an API server address never has",
        ),
    ],
)
def test_the_address_multikueue_dials_a_worker_at(url: str, expected: str | None) -> None:
    assert api_server_url_problem(url) == expected
