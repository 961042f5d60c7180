"""The pydantic field types of the config models: Kubernetes names, quantities, counts,
versions, durations, checksums, URLs and stack names, each refused with what the cluster (or
Kueue) would say. The checks themselves are in gpu_queues/kueue/fields.py.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Annotated, Final

from pydantic import AfterValidator, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from gpu_queues.kueue.fields import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    DURATION,
    FEATURE_GATE,
    LABEL_VALUE,
    LABEL_VALUE_MAX,
    REGISTRY_MAX,
    SHA256,
    STACK_NAME,
    VERSION,
    api_server_url_problem,
    go_duration_problem,
    image_registry_problem,
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
    is_qualified_name,
)
from gpu_queues.kueue.quantity import QUANTITY_HELP, QuantityError, parse_quantity


def _check_label_name(value: str) -> str:
    if not is_dns_label(value):
        raise PydanticCustomError(
            "k8s_name",
            "{value} is not a valid Kubernetes name: use lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters",
            {"value": repr(value)},
        )
    return value


def _check_subdomain_name(value: str) -> str:
    if not is_dns_subdomain(value):
        raise PydanticCustomError(
            "k8s_name",
            "{value} is not a valid Kubernetes object name: use lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit, at most 253 characters",
            {"value": repr(value)},
        )
    return value


def _label_named(what: str, label: str) -> Callable[[str], str]:
    """The check of an object jobs name in a label: an object name that fits a label value,
    else no job could ever name it."""

    def check(value: str) -> str:
        _check_subdomain_name(value)
        if len(value) > LABEL_VALUE_MAX:
            raise PydanticCustomError(
                "label_named",
                "{value} is too long for a {what}: jobs name it in the {label} label, whose "
                "value has at most 63 characters",
                {"value": repr(value), "what": what, "label": label},
            )
        return value

    return check


def _check_qualified_name(value: str) -> str:
    if not is_qualified_name(value):
        raise PydanticCustomError(
            "qualified_name",
            "{value} is not a valid resource or label key: [prefix/]name, where name is at "
            "most 63 letters, digits, '-', '_' or '.', and prefix is a DNS subdomain",
            {"value": repr(value)},
        )
    return value


def _check_label_value(value: str) -> str:
    if not is_label_value(value):
        raise PydanticCustomError(
            "label_value",
            "{value} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit",
            {"value": repr(value)},
        )
    return value


def _parse(value: object) -> tuple[str, Fraction]:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PydanticCustomError(
            "quantity", "must be {help}, got {value}", {"help": QUANTITY_HELP, "value": repr(value)}
        )
    try:
        return str(value), parse_quantity(value)
    except QuantityError:
        raise PydanticCustomError(
            "quantity", "must be {help}, got {value}", {"help": QUANTITY_HELP, "value": repr(value)}
        ) from None


def _check_quantity(value: object) -> str:
    text, parsed = _parse(value)
    if parsed < 0:
        raise PydanticCustomError(
            "negative_quantity", "must not be negative, got {value}", {"value": text}
        )
    return text


def _check_storage_size(value: object) -> str:
    text, parsed = _parse(value)
    if parsed <= 0:
        raise PydanticCustomError(
            "storage_size",
            "must be a size above zero such as 100Gi or 1Ti, got {value}",
            {"value": text},
        )
    if parsed.denominator != 1:
        raise PydanticCustomError(
            "storage_size",
            "must be a whole number of bytes such as 100Gi or 1Ti, got {value}",
            {"value": text},
        )
    return text


def _check_count(value: object) -> int:
    # Whole numbers only: 2.5 nodes or "4" (a string) are mistakes worth naming.
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError(
            "node_count",
            "must be a whole number of nodes (1 or more), got {value}",
            {"value": repr(value)},
        )
    if value < 1:
        raise PydanticCustomError(
            "node_count", "must be 1 or more nodes, got {value}", {"value": repr(value)}
        )
    return value


def _check_version(value: str) -> str:
    if not VERSION.fullmatch(value):
        raise PydanticCustomError(
            "version",
            "Kueue version must have the form vX.Y.Z (for example v0.18.3), got {value}",
            {"value": repr(value)},
        )
    return value


def _check_duration(value: str) -> str:
    problem = go_duration_problem(value)
    if problem:
        raise PydanticCustomError(
            "duration",
            "must be a Go duration such as 300s, 5m or 1h30m, got {value}: {problem}",
            {"value": repr(value), "problem": problem},
        )
    return value


def _check_sha256(value: str) -> str:
    if not SHA256.fullmatch(value):
        raise PydanticCustomError(
            "sha256",
            "must be 64 lowercase hex digits (a sha256 digest), got {value}",
            {"value": repr(value)},
        )
    return value


def _check_manifest_url(value: str) -> str:
    if not value.startswith(("https://", "http://", "file://")):
        raise PydanticCustomError(
            "manifest_url",
            "url must start with https://, http:// or file://, got {url}",
            {"url": repr(value)},
        )
    return value


def _check_stack_name(value: str) -> str:
    if not STACK_NAME.fullmatch(value):
        raise PydanticCustomError(
            "stack_name",
            "{value} is not a Pulumi stack name: <stack>, <org>/<stack> or "
            "<org>/<project>/<stack>, each part letters, digits, '-', '_' or '.'",
            {"value": repr(value)},
        )
    return value


def _check_api_server_url(value: str) -> str:
    problem = api_server_url_problem(value)
    if problem:
        raise PydanticCustomError(
            "api_server_url",
            "{value} is not an API server address for MultiKueue: {problem}",
            {"value": repr(value), "problem": problem},
        )
    return value


def _check_feature_gate(value: str) -> str:
    if not FEATURE_GATE.fullmatch(value):
        raise PydanticCustomError(
            "feature_gate",
            "{value} is not a Kueue feature gate name (CamelCase letters and digits, e.g. "
            "TopologyAwareScheduling)",
            {"value": repr(value)},
        )
    return value


def _check_image_registry(value: str) -> str:
    problem = image_registry_problem(value)
    if problem:
        raise PydanticCustomError(
            "image_registry",
            "{value} cannot be the controller image's registry: {problem}",
            {"value": repr(value), "problem": problem},
        )
    return value


# Kubernetes reserves PriorityClass names starting with "system-" for its own classes:
# system-node-critical and system-cluster-critical outrank every workload and preempt them.
RESERVED_PRIORITY_PREFIX: Final = "system-"


def _check_priority_class_name(value: str) -> str:
    _check_subdomain_name(value)
    if value.startswith(RESERVED_PRIORITY_PREFIX):
        raise PydanticCustomError(
            "priority_class_name",
            "{value}: PriorityClass names starting with system- are Kubernetes' own "
            "(system-node-critical, system-cluster-critical outrank and preempt every workload "
            "on a node); give the controller a class of your own",
            {"value": repr(value)},
        )
    return value


_QUANTITY_SCHEMA: Final = {
    "anyOf": [
        {"type": "string", "pattern": r"^\+?[0-9.]+[a-zA-Z0-9+-]*$"},
        {"type": "number", "minimum": 0},
    ],
    "description": QUANTITY_HELP,
}

LabelName = Annotated[
    str,
    AfterValidator(_check_label_name),
    WithJsonSchema({"type": "string", "pattern": DNS_LABEL.pattern, "maxLength": 63}),
]
ObjectName = Annotated[
    str,
    AfterValidator(_check_subdomain_name),
    WithJsonSchema({"type": "string", "pattern": DNS_SUBDOMAIN.pattern, "maxLength": 253}),
]
LocalQueueName = Annotated[
    str,
    AfterValidator(_label_named("LocalQueue", "kueue.x-k8s.io/queue-name")),
    WithJsonSchema({"type": "string", "pattern": DNS_SUBDOMAIN.pattern, "maxLength": 63}),
]
WorkloadPriorityClassName = Annotated[
    str,
    AfterValidator(_label_named("WorkloadPriorityClass", "kueue.x-k8s.io/priority-class")),
    WithJsonSchema({"type": "string", "pattern": DNS_SUBDOMAIN.pattern, "maxLength": 63}),
]
QualifiedName = Annotated[
    str,
    AfterValidator(_check_qualified_name),
    WithJsonSchema({"type": "string", "maxLength": 317}),
]
LabelValue = Annotated[
    str,
    AfterValidator(_check_label_value),
    WithJsonSchema({"type": "string", "pattern": LABEL_VALUE.pattern, "maxLength": 63}),
]
Quantity = Annotated[str, PlainValidator(_check_quantity), WithJsonSchema(_QUANTITY_SCHEMA)]
StorageSize = Annotated[
    str,
    PlainValidator(_check_storage_size),
    WithJsonSchema({**_QUANTITY_SCHEMA, "description": "size above zero, e.g. 100Gi or 1Ti"}),
]
NodeCount = Annotated[
    int, PlainValidator(_check_count), WithJsonSchema({"type": "integer", "minimum": 1})
]
Version = Annotated[
    str,
    AfterValidator(_check_version),
    WithJsonSchema({"type": "string", "pattern": VERSION.pattern}),
]
Duration = Annotated[
    str,
    AfterValidator(_check_duration),
    WithJsonSchema({"type": "string", "pattern": DURATION.pattern}),
]
Sha256 = Annotated[
    str,
    AfterValidator(_check_sha256),
    WithJsonSchema({"type": "string", "pattern": SHA256.pattern}),
]
FeatureGate = Annotated[
    str,
    AfterValidator(_check_feature_gate),
    WithJsonSchema({"type": "string", "pattern": FEATURE_GATE.pattern}),
]
ManifestUrl = Annotated[
    str,
    AfterValidator(_check_manifest_url),
    WithJsonSchema({"type": "string", "pattern": "^(https|http|file)://"}),
]
StackName = Annotated[
    str,
    AfterValidator(_check_stack_name),
    WithJsonSchema({"type": "string", "pattern": STACK_NAME.pattern}),
]
ApiServerUrl = Annotated[
    str,
    AfterValidator(_check_api_server_url),
    WithJsonSchema({"type": "string", "pattern": "^https://"}),
]
ImageRegistry = Annotated[
    str,
    AfterValidator(_check_image_registry),
    WithJsonSchema({"type": "string", "maxLength": REGISTRY_MAX}),
]
PriorityClassName = Annotated[
    str,
    AfterValidator(_check_priority_class_name),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DNS_SUBDOMAIN.pattern,
            "maxLength": 253,
            "not": {"pattern": "^system-"},
        }
    ),
]
ResourceName = QualifiedName
