"""The catalogue of a Kueue release: the names, namespaces and kinds a release ships, the
manifest's objects as documents, and what the manifest defines (for cross references).

gpu_queues/release/allowlist.py checks a manifest against it, with the checks per concern in
rbac.py (roles and bindings), webhooks.py (what the API server sends to Kueue: webhooks, CRD
conversion, the visibility APIService and the Services they point at) and controller.py (the
controller Deployment, its manager Configuration and its certificate Secret).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpu_queues.values import as_dict, as_list

KUEUE_NAMESPACE: Final = "kueue-system"
NAME_PREFIX: Final = "kueue-"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
IMAGE_REGISTRY: Final = "registry.k8s.io"
IMAGE_PATH: Final = "kueue/kueue"
IMAGE_REPOSITORY: Final = f"{IMAGE_REGISTRY}/{IMAGE_PATH}"
CONTROLLER_DEPLOYMENT: Final = "kueue-controller-manager"
MANAGER_CONTAINER: Final = "manager"
MANAGER_COMMAND: Final = ("/manager",)
MANAGER_CONFIGMAP: Final = "kueue-manager-config"
MANAGER_CONFIG_KEY: Final = "controller_manager_config.yaml"
# Keys under these prefixes are the program's own record (manifest checksum, config hash) or
# steer how the provider applies objects: a manifest that carries one is trying to speak for
# the program.
OWN_KEY_PREFIXES: Final = ("gpu-queues.dev/", "pulumi.com/")
# Aggregated API servers read the API server's client CA through this built-in Role.
AUTH_READER_ROLE: Final = "extension-apiserver-authentication-reader"
AUTH_READER_NAMESPACE: Final = "kube-system"
RBAC_GROUP: Final = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    namespaced: bool
    fields: frozenset[str] = frozenset({"spec"})
    """Top-level fields besides apiVersion, kind, metadata and status."""


# Every kind a Kueue release ships, at the API version it ships it in.
RELEASE_KINDS: Final = {
    (k.api_version, k.kind): k
    for k in (
        Kind("v1", "Namespace", False),
        Kind(
            "v1",
            "ServiceAccount",
            True,
            frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"}),
        ),
        Kind("v1", "ConfigMap", True, frozenset({"data", "binaryData", "immutable"})),
        Kind("v1", "Secret", True, frozenset({"data", "stringData", "type", "immutable"})),
        Kind("v1", "Service", True),
        Kind("apps/v1", "Deployment", True),
        Kind(f"{RBAC_GROUP}/v1", "Role", True, frozenset({"rules"})),
        Kind(f"{RBAC_GROUP}/v1", "RoleBinding", True, frozenset({"roleRef", "subjects"})),
        Kind(f"{RBAC_GROUP}/v1", "ClusterRole", False, frozenset({"rules", "aggregationRule"})),
        Kind(f"{RBAC_GROUP}/v1", "ClusterRoleBinding", False, frozenset({"roleRef", "subjects"})),
        Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", False),
        Kind(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            False,
            frozenset({"webhooks"}),
        ),
        Kind(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            False,
            frozenset({"webhooks"}),
        ),
        Kind("apiregistration.k8s.io/v1", "APIService", False),
    )
}


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def is_kueue_group(group: str) -> bool:
    """kueue.x-k8s.io and its subgroups (visibility.kueue.x-k8s.io, config.kueue...)."""
    return group == KUEUE_GROUP or group.endswith("." + KUEUE_GROUP)


def expected_image(version: str, registry: str | None = None) -> str:
    """The controller image of `version`, pulled from `registry` (a mirror of
    registry.k8s.io, kueue.controller.imageRegistry) when given: the path and tag stay."""
    return f"{registry or IMAGE_REGISTRY}/{IMAGE_PATH}:{version}"


@dataclass(frozen=True)
class Refusal:
    """One manifest object that is not applied, and why."""

    index: int | None
    """The object's document index in the manifest file (0-based, empty documents counted);
    None for an object that is missing."""
    kind: str
    namespace: str | None
    name: str
    reason: str

    @property
    def object(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def __str__(self) -> str:
        if self.index is None:
            return f"{self.object}: {self.reason}"
        return f"document {self.index}: {self.object}: {self.reason}"


@dataclass(frozen=True)
class Document:
    """One object of the manifest with its document index in the file."""

    index: int
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind"))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion"))

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def name(self) -> str:
        return str(as_dict(self.obj.get("metadata")).get("name"))

    @property
    def namespace(self) -> str | None:
        ns = as_dict(self.obj.get("metadata")).get("namespace")
        return ns if isinstance(ns, str) and ns else None

    def key(self) -> tuple[str, str, str | None, str]:
        """Identity in the cluster: API group, kind, namespace, name (version aside)."""
        return (self.group, self.kind, self.namespace, self.name)

    def refuse(self, reason: str) -> Refusal:
        return Refusal(self.index, self.kind, self.namespace, self.name, reason)


# --- small accessors that never raise on hostile shapes ------------------------------------


def strs(value: Any) -> list[str]:
    return [str(v) for v in as_list(value)]


def dig(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def own_keys(node: Any, path: str = "") -> Iterator[str]:
    """Paths of mapping keys under the program's own prefix, anywhere in the object."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and key.startswith(OWN_KEY_PREFIXES):
                yield here
            yield from own_keys(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from own_keys(item, f"{path}[{i}]")


# --- the inventory: what the manifest defines, for cross references ------------------------


@dataclass(frozen=True)
class Inventory:
    service_accounts: frozenset[str]
    services: frozenset[str]
    roles: frozenset[str]
    cluster_roles: frozenset[str]

    @classmethod
    def of(cls, docs: Sequence[Document]) -> Inventory:
        def names(group: str, kind: str, namespace: str | None) -> frozenset[str]:
            return frozenset(
                d.name
                for d in docs
                if d.group == group and d.kind == kind and d.namespace == namespace
            )

        return cls(
            service_accounts=names("", "ServiceAccount", KUEUE_NAMESPACE),
            services=names("", "Service", KUEUE_NAMESPACE),
            roles=names(RBAC_GROUP, "Role", KUEUE_NAMESPACE),
            cluster_roles=names(RBAC_GROUP, "ClusterRole", None),
        )
