"""How a policy sees a resource, and how it words a violation.

Props arrive as pulumi_policy's unknown-checking proxy; Resource.of copies them to plain data
once (values.plain), with values not known yet replaced by UNKNOWN, so rules never trip on
them. Every violation message has one form: `[rule] <object>: <problem>. Fix: <fix>.`
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from gpu_queues.kueue.errors import FieldError

from .props import child, is_unknown, plain

_KUEUE_TYPE: Final = re.compile(r"^kubernetes:kueue\.x-k8s\.io/v1beta[12]:(?P<kind>[A-Za-z]+)$")


@dataclass(frozen=True)
class Resource:
    """One resource as a policy sees it: Pulumi type token, Pulumi name, URN, plain props."""

    type: str
    name: str
    urn: str
    props: dict[str, Any]

    @classmethod
    def of(cls, type_: str, name: str, urn: str, props: Mapping[str, Any]) -> Resource:
        """Build from what the runtime passes (props may be the unknown-checking proxy)."""
        return cls(type_, name, urn, plain(props))

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def k8s_name(self) -> Any:
        """metadata.name (UNKNOWN or None when not known or not set)."""
        return child(self.props, "metadata", "name")

    def label(self) -> str:
        """How messages name the object: its Kubernetes name and its Pulumi resource name."""
        name = self.k8s_name
        namespace = child(self.props, "metadata", "namespace")
        shown = name if isinstance(name, str) and name else "<name not known yet>"
        if isinstance(namespace, str) and namespace:
            shown = f"{namespace}/{shown}"
        return f'{self.kind} "{shown}" (Pulumi resource "{self.name}")'


class Violation(NamedTuple):
    urn: str | None
    message: str


def violation(rule: str, resource: Resource, problem: str, fix: str) -> Violation:
    return Violation(resource.urn, f"[{rule}] {resource.label()}: {problem}. Fix: {fix}.")


def field_violation(rule: str, resource: Resource, error: FieldError) -> Violation:
    """A validation core error on a resource, located by its path inside the object."""
    return violation(rule, resource, f"{error.where}: {error.message}", error.fix)


def kueue_kind(resource: Resource) -> str | None:
    """The Kueue kind of a kueue.x-k8s.io custom resource, else None."""
    match = _KUEUE_TYPE.match(resource.type)
    return match["kind"] if match else None


def names(values: Iterable[Any]) -> str:
    return ", ".join(str(v) for v in values) or "none"


def known_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def config_list(config: Mapping[str, Any], key: str, default: Sequence[str] = ()) -> list[str]:
    value = config.get(key, list(default))
    if not isinstance(value, Sequence) or isinstance(value, str):
        return list(default)
    return [str(v) for v in value]


def config_str(config: Mapping[str, Any], key: str, default: str) -> str:
    value = config.get(key, default)
    return value if isinstance(value, str) and value else default


def items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def names_of_kind(resources: Sequence[Resource], kind: str) -> tuple[set[str], bool]:
    """metadata.name of every Kueue object of a kind, and whether any name is unknown."""
    found: set[str] = set()
    any_unknown = False
    for resource in resources:
        if kueue_kind(resource) != kind:
            continue
        name = resource.k8s_name
        if is_unknown(name):
            any_unknown = True
        elif isinstance(name, str) and name:
            found.add(name)
    return found, any_unknown
