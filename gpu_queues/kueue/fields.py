"""Kubernetes names, quantities and namespaces: the facts the API server enforces, as checks
(the pydantic field types the config models use them as are in gpu_queues/kueue/fieldtypes.py).

The rules follow k8s.io/apimachinery (validation.IsDNS1123Label/Subdomain, IsDNS1035Label,
IsQualifiedName, IsValidLabelValue) and k8s.io/kubernetes (helper.IsExtendedResourceName,
IsIntegerResourceName), so a value the config accepts is one the cluster accepts too.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final
from urllib.parse import urlsplit

from gpu_queues.kueue.quantity import QuantityError, format_quantity, parse_quantity

DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
QUALIFIED_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
VERSION: Final = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
DURATION: Final = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")
SHA256: Final = re.compile(r"^[0-9a-f]{64}$")
# Kueue's feature gates are Go identifiers in CamelCase (TopologyAwareScheduling, ...).
FEATURE_GATE: Final = re.compile(r"^[A-Z][A-Za-z0-9]*$")
# A Pulumi stack, as `pulumi stack select` and StackReference take it: <stack>,
# <org>/<stack> or <org>/<project>/<stack> (each part letters, digits, '-', '_' or '.').
STACK_NAME: Final = re.compile(r"^([A-Za-z0-9_.-]{1,100}/){0,2}[A-Za-z0-9_.-]{1,100}$")
LABEL_VALUE_MAX: Final = 63

# --- names ---------------------------------------------------------------------------------


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and bool(DNS_LABEL.fullmatch(value))


def is_dns1035_label(value: str) -> bool:
    """A DNS label that starts with a letter (IsDNS1035Label): what a Service's name must be."""
    return is_dns_label(value) and value[0].isalpha()


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(DNS_SUBDOMAIN.fullmatch(value))


def is_qualified_name(value: str) -> bool:
    """[prefix/]name as label keys and resource names are written (IsQualifiedName)."""
    prefix, slash, name = value.rpartition("/")
    if "/" in prefix or (slash and not prefix):
        return False
    ok = len(name) <= 63 and bool(QUALIFIED_NAME.fullmatch(name))
    return ok and (not prefix or is_dns_subdomain(prefix))


def is_label_value(value: str) -> bool:
    return len(value) <= LABEL_VALUE_MAX and bool(LABEL_VALUE.fullmatch(value))


# What each kind of name must be, as the API server checks it, and how to say so: for a writer
# of names read from elsewhere (`gpuq record` writes what a cluster sent).
NAME_RULES: Final = {
    "namespace": (
        is_dns_label,
        "a namespace (a DNS-1123 label: at most 63 of a-z, 0-9 and '-', a letter or digit at "
        "each end)",
    ),
    "object": (
        is_dns_subdomain,
        "an object name (a DNS-1123 subdomain: at most 253 of a-z, 0-9, '-' and '.')",
    ),
    "job": (
        lambda v: is_dns_subdomain(v) and len(v) <= LABEL_VALUE_MAX,
        "a Job name (a DNS-1123 subdomain of at most 63 characters: its pods' job-name label)",
    ),
    "label": (
        lambda v: is_dns_subdomain(v) and is_label_value(v),
        "a name usable as a label value (a DNS-1123 subdomain of at most 63 characters)",
    ),
    "container": (is_dns_label, "a container name (a DNS-1123 label)"),
    "key": (is_qualified_name, "a qualified name ([prefix/]name, as label keys are written)"),
    "value": (is_label_value, "a label value"),
}


def name_rule_problem(value: object, rule: str) -> str | None:
    """What `value` is not (NAME_RULES[rule]'s words), or None when it is a string that
    Kubernetes' rule for that kind of name accepts."""
    check, says = NAME_RULES[rule]
    return None if isinstance(value, str) and check(value) else says


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 80 else repr(value[:77]) + "..."


def name_problem(value: str, rule: str) -> str | None:
    """Why the API server would refuse `value` as the kind of name `rule` says (NAME_RULES),
    the value shown; None when it would take it. One wording for every reader of names the
    user or a cluster gives (a what-if mix, the mix record writes, status' estimates)."""
    says = name_rule_problem(value, rule)
    return None if says is None else f"{_shown(value)} is not {says}"


def labels_problem(labels: Mapping[str, object]) -> str | None:
    """The first label the API server would refuse (its key a qualified name, its value a label
    value), and why; None when every label is one it takes."""
    for key, value in labels.items():
        if not is_qualified_name(key):
            return (
                f"[{key}]: {_shown(key)} is not a label key ([prefix/]name, the name at most "
                "63 letters, digits, '-', '_' or '.', the prefix a DNS subdomain)"
            )
        if isinstance(value, str) and (problem := name_problem(value, "value")):
            return f"[{key}]: {problem}"
    return None


# --- resources that only come in whole numbers ---------------------------------------------

# k8s.io/kubernetes pkg/apis/core/helper: integerResources (object counts a quota can hold).
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)


def is_native_resource(name: str) -> bool:
    """cpu, memory, hugepages-2Mi, ...: unprefixed or in the kubernetes.io namespace."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """nvidia.com/gpu, example.com/fpga: a device plugin's resource (IsExtendedResourceName)."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return is_qualified_name(f"requests.{name}")


def is_gpu(resource: str) -> bool:
    """nvidia.com/gpu, amd.com/gpu, ...: a GPU, as GPU-hours count them and as the policy pack
    finds workloads that ask for one."""
    return resource.rpartition("/")[2] == "gpu"


def needs_whole_number(resource: str) -> bool:
    """Kubernetes refuses fractions of these in pod requests and node capacity
    (IsIntegerResourceName), so a fractional quota or capacity of them is never usable."""
    return resource in _INTEGER_RESOURCES or is_extended_resource(resource)


def whole_number_problem(resource: str, value: object) -> str | None:
    """Why `value` is not a usable amount of `resource`, or None (also when not a quantity)."""
    if not needs_whole_number(resource):
        return None
    try:
        parsed = parse_quantity(value)
    except QuantityError:
        return None  # the quantity check reports it
    if parsed.denominator == 1:
        return None
    kind = "an extended resource" if is_extended_resource(resource) else "counted in units"
    return (
        f"{resource} is {kind}: Kubernetes allows only whole numbers of it (a pod cannot "
        f"request {format_quantity(parsed)} of one), got {value!r}"
    )


# --- durations --------------------------------------------------------------------------

GO_DURATION_MAX_SECONDS: Final = (2**63 - 1) / 10**9
"""The longest span Go's time.Duration holds (an int64 of nanoseconds, about 292 years):
Kubernetes, Kueue, kwok and the fast engine all count time in it, so a longer one overflows
there (it wraps to a negative span) rather than meaning a long time."""
_GO_UNIT_NANOSECONDS: Final = {
    "ns": 1,
    "us": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_GO_DURATION_PART: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)")


def go_duration_problem(value: str) -> str | None:
    """Why Go's time.ParseDuration, which Kueue reads its Configuration with, refuses `value`
    (None when it takes it): not a Go duration, or longer than time.Duration holds."""
    if len(value) > 64 or not DURATION.fullmatch(value):
        return "it is not a Go duration such as 300s, 5m or 1h30m"
    nanoseconds = sum(
        Fraction(number) * _GO_UNIT_NANOSECONDS[unit]
        for number, unit in _GO_DURATION_PART.findall(value)
    )
    if nanoseconds > 2**63 - 1:
        return "it is longer than Go's time.Duration holds (about 292 years)"
    return None


# --- namespaces ------------------------------------------------------------------------------

# Namespaces every cluster has; `default` may be adopted by a team (the guide's stack does).
CLUSTER_NAMESPACES: Final = frozenset({"kube-system", "kube-public", "kube-node-lease"})
ALWAYS_PRESENT_NAMESPACES: Final = CLUSTER_NAMESPACES | {"default"}
KUEUE_NAMESPACE: Final = "kueue-system"
RESERVED_NAMESPACES: Final = CLUSTER_NAMESPACES | {KUEUE_NAMESPACE}


def reserved_namespace(name: str, extra: Iterable[str] = ()) -> str | None:
    """Why `name` is not a namespace a team may take (None when it may).

    `extra`: namespaces the Kueue manifest creates (the manifest check passes them).
    """
    if name in CLUSTER_NAMESPACES:
        return f"namespace {name!r} belongs to the cluster (Kubernetes' own components run there)"
    if name.startswith("kube-"):
        return f"namespace {name!r}: the kube- prefix is reserved for Kubernetes' own namespaces"
    if name == KUEUE_NAMESPACE:
        return (
            f"namespace {name!r} is created by the Kueue release manifest (Kueue's own "
            "namespace, where its controller runs)"
        )
    if name in set(extra):
        return f"namespace {name!r} is created by the Kueue release manifest"
    return None


# --- an image registry (a mirror of registry.k8s.io) ----------------------------------------

# The distribution reference grammar (github.com/distribution/reference): a host of
# dot-separated components with an optional port, then optional lowercase path components.
# ASCII only: a look-alike letter would name another registry.
_REGISTRY_HOST: Final = re.compile(
    r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
    r"(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*(?::[0-9]{1,5})?",
    re.ASCII,
)
_REGISTRY_PATH: Final = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*", re.ASCII)
# The name part of an image reference is at most 255 characters; the release's path
# (kueue/kueue) goes after the mirror.
REGISTRY_MAX: Final = 200


def image_registry_problem(value: str) -> str | None:
    """Why `value` cannot be the registry (host[:port][/path]) the controller's image is pulled
    from instead of registry.k8s.io; None when it can. The image's own path, tag and digest
    stay the release's, so the value names neither a tag nor a digest."""
    if len(value) > REGISTRY_MAX:
        return f"it is {len(value)} characters; a registry is at most {REGISTRY_MAX}"
    if "://" in value:
        return "write the registry with no scheme (registry.corp.example, not https://...)"
    if "@" in value or ":" in value.partition("/")[2]:
        return (
            "it names a tag or digest: a mirror changes only where the image is pulled from; "
            "its tag and digest stay the release's"
        )
    host, _, path = value.partition("/")
    if not _REGISTRY_HOST.fullmatch(host) or (
        "/" in value and not all(_REGISTRY_PATH.fullmatch(p) for p in path.split("/"))
    ):
        return (
            "it is not an image registry: host[:port][/path], the host's parts ASCII letters, "
            "digits and '-' separated by single dots, the path's lowercase letters and digits "
            "separated by '.', '_' or '-'"
        )
    port = host.partition(":")[2]
    if port and not 0 < int(port) < 65536:
        return f"port {port} is not a TCP port (1-65535)"
    if "." not in host and ":" not in host and host != "localhost":
        return (
            "its first part is not a registry host (it has no '.' or port and is not "
            "localhost), so the image would be pulled from Docker Hub's namespace of that name"
        )
    return None


# --- an API server's address --------------------------------------------------------------


def api_server_url_problem(url: str, plain_http: bool = False) -> str | None:
    """Why `url` cannot be an API server's address (None when it can): an https URL (http too
    when `plain_http`, as a kubeconfig's `server` may be) whose host is an IP or a DNS name, as
    Kueue's kubeconfig validation wants it (multikueuecluster.go: isValidHostname), with a
    port that is a number. MultiKueue's worker address (https only: the manager sends a token)
    and every kubeconfig's `server` (gpu_queues/kueue/client.py) are held to it."""
    if any(c.isspace() or unicodedata.category(c).startswith("C") for c in url):
        return "it contains whitespace or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return "it is not a URL"
    if plain_http and parts.scheme not in ("https", "http"):
        return "it must start with https:// (or http://)"
    if not plain_http and parts.scheme != "https":
        return "it must start with https:// (the manager authenticates with a token)"
    if parts.username is not None or parts.password is not None:
        return "it carries credentials (user:password@); Kueue refuses basic auth"
    host = (parts.hostname or "").lower()
    if not host:
        return "it has no host"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not is_dns_subdomain(host):
            return f"host {host!r} is neither an IP address nor a DNS name, which Kueue refuses"
    if parts.query or parts.fragment:
        return "it has a query or fragment, which an API server address never has"
    return None
