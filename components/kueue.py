"""Kueue release install: the pinned manifest, checksummed, applied server-side object by object.

The manifest is read and verified in the program before anything is registered, so a wrong
checksum applies nothing. Its manager ConfigMap is re-rendered from stack config and the
Deployment gets the stack's replicas, resources and placement.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components import keys
from components.config import KueueConfig, ManagerConfig

PROJECT_ROOT = Path(__file__).resolve().parent.parent

MANAGER_CONFIGMAP = "kueue-manager-config"
MANAGER_CONFIG_KEY = "controller_manager_config.yaml"
CONTROLLER_DEPLOYMENT = "kueue-controller-manager"
MANAGER_CONTAINER = "manager"

# Groups whose kinds pulumi-kubernetes has typed classes for (module = first DNS label).
_TYPED_GROUPS = {
    "",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "networking.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "storage.k8s.io",
}


class ManifestError(Exception):
    """The Kueue manifest cannot be read, does not match its checksum, or is not as expected."""


def read_manifest(config: KueueConfig, root: Path = PROJECT_ROOT, timeout: float = 60.0) -> bytes:
    """The manifest bytes, from the local path when set, else from the (mirror or release) URL."""
    if config.manifest.path is not None:
        path = Path(config.manifest.path)
        path = path if path.is_absolute() else root / path
        try:
            return path.read_bytes()
        except OSError as exc:
            raise ManifestError(
                f"cannot read the Kueue manifest {path} (gpu-queues:kueue.manifest.path): "
                f"{exc.strerror or exc}"
            ) from None
    url = config.manifest_url
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data: bytes = response.read()
            return data
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ManifestError(
            f"cannot download the Kueue manifest {url}: {exc}. For an air-gapped cluster set "
            "gpu-queues:kueue.manifest.url to a mirror or kueue.manifest.path to a local file"
        ) from None


def verify_sha256(data: bytes, expected: str | None, source: str) -> str:
    """The manifest's sha256; ManifestError when an expected digest is set and differs."""
    actual = hashlib.sha256(data).hexdigest()
    if expected is not None and actual != expected:
        raise ManifestError(
            f"Kueue manifest {source} has sha256 {actual}, but gpu-queues:kueue.manifest.sha256 "
            f"expects {expected}; nothing was applied. Check the source, or update the checksum "
            "if the new manifest is trusted"
        )
    return actual


def parse_manifest(data: bytes, source: str) -> list[dict[str, Any]]:
    """Kubernetes objects of a multi-document YAML manifest (empty documents skipped)."""
    try:
        docs = list(yaml.safe_load_all(data.decode("utf-8")))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ManifestError(f"Kueue manifest {source} is not valid YAML: {exc}") from None
    objects: list[dict[str, Any]] = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("apiVersion"), str)
            or not isinstance(doc.get("kind"), str)
            or not isinstance(doc.get("metadata"), dict)
            or not isinstance(doc["metadata"].get("name"), str)
        ):
            raise ManifestError(
                f"Kueue manifest {source}: document {index} is not a Kubernetes object "
                "(apiVersion, kind and metadata.name are required)"
            )
        objects.append(doc)
    if not objects:
        raise ManifestError(f"Kueue manifest {source} contains no objects")
    return objects


def manifest_source(config: KueueConfig) -> str:
    return config.manifest.path if config.manifest.path is not None else config.manifest_url


def load_manifest(config: KueueConfig, root: Path = PROJECT_ROOT) -> list[dict[str, Any]]:
    """Read, verify and parse the manifest once; raises ManifestError before anything exists."""
    source = manifest_source(config)
    data = read_manifest(config, root)
    verify_sha256(data, config.manifest.sha256, source)
    return parse_manifest(data, source)


# --- manager Configuration ----------------------------------------------------------------


def render_manager_config(base_text: str, manager: ManagerConfig) -> str:
    """The release's Configuration with the stack's settings laid over it.

    Starting from the release keeps what the manifest wires together (webhook port, health
    and metrics addresses, leader election); waitForPodsReady and fairSharing are switched on
    by being present (Kueue v1beta2 has no `enable` field).
    """
    loaded = yaml.safe_load(base_text) if base_text else None
    config: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
    config["apiVersion"] = keys.KUEUE_CONFIG_API_VERSION
    config["kind"] = "Configuration"
    overlay = manager.model_dump(by_alias=True, exclude_none=True)
    integrations = overlay.pop("integrations", None)
    if integrations:
        merged = dict(config.get("integrations") or {})
        merged.update(integrations)
        config["integrations"] = merged
    config.update(overlay)
    return yaml.safe_dump(config, sort_keys=False)


def _find(objects: Sequence[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    for obj in objects:
        if obj.get("kind") == kind and obj["metadata"].get("name") == name:
            return obj
    return None


def _feature_gate_args(container: dict[str, Any]) -> set[str]:
    gates: set[str] = set()
    for arg in [*container.get("args", []), *container.get("command", [])]:
        if isinstance(arg, str) and arg.startswith("--feature-gates="):
            for item in arg.split("=", 1)[1].split(","):
                gates.add(item.split("=", 1)[0].strip())
    return gates


def prepare_manifest(
    objects: Sequence[dict[str, Any]], config: KueueConfig
) -> list[dict[str, Any]]:
    """A copy of the manifest with the manager Configuration and controller settings applied."""
    prepared = copy.deepcopy(list(objects))
    configmap = _find(prepared, "ConfigMap", MANAGER_CONFIGMAP)
    deployment = _find(prepared, "Deployment", CONTROLLER_DEPLOYMENT)
    if configmap is None or deployment is None:
        raise ManifestError(
            f"the Kueue manifest has no ConfigMap {MANAGER_CONFIGMAP} or no Deployment "
            f"{CONTROLLER_DEPLOYMENT}; is it a Kueue release manifest?"
        )
    data = configmap.setdefault("data", {}) or {}
    rendered = render_manager_config(str(data.get(MANAGER_CONFIG_KEY, "")), config.manager)
    configmap["data"] = {**data, MANAGER_CONFIG_KEY: rendered}
    config_hash = hashlib.sha256(rendered.encode("utf-8")).hexdigest()

    if config.manifest.sha256:
        # load_manifest refused any other content, so this records a verified checksum.
        meta = deployment.setdefault("metadata", {})
        meta.setdefault("annotations", {})[keys.ANNOTATION_MANIFEST_SHA256] = config.manifest.sha256
    spec = deployment.setdefault("spec", {})
    template = spec.setdefault("template", {})
    pod_meta = template.setdefault("metadata", {})
    # A changed Configuration changes the pod template, so the controller rolls and reloads it.
    pod_meta.setdefault("annotations", {})[keys.ANNOTATION_CONFIG_HASH] = config_hash
    pod = template.setdefault("spec", {})
    containers = pod.get("containers") or []
    manager = next((c for c in containers if c.get("name") == MANAGER_CONTAINER), None)
    if manager is None:
        raise ManifestError(
            f"Deployment {CONTROLLER_DEPLOYMENT} has no container named {MANAGER_CONTAINER}"
        )
    gates_in_args = _feature_gate_args(manager) & set(config.manager.feature_gates or {})
    if gates_in_args:
        raise ManifestError(
            f"feature gate(s) {', '.join(sorted(gates_in_args))} are set both in "
            "gpu-queues:kueue.manager.featureGates and in the controller's --feature-gates; "
            "Kueue refuses that, keep one"
        )
    ctrl = config.controller
    if ctrl.replicas is not None:
        spec["replicas"] = ctrl.replicas
    if ctrl.resources is not None:
        manager["resources"] = ctrl.resources.model_dump(by_alias=True, exclude_none=True)
    if ctrl.node_selector is not None:
        pod["nodeSelector"] = dict(ctrl.node_selector)
    if ctrl.tolerations is not None:
        pod["tolerations"] = [
            t.model_dump(by_alias=True, exclude_none=True) for t in ctrl.tolerations
        ]
    return prepared


# --- component ----------------------------------------------------------------------------


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _resource_class(api_version: str, kind: str) -> Any:
    group, _, version = api_version.rpartition("/")
    if group not in _TYPED_GROUPS:
        return None
    module_name = "core" if group == "" else group.split(".")[0]
    try:
        module = importlib.import_module(f"pulumi_kubernetes.{module_name}.{version}")
    except ImportError:
        return None
    return getattr(module, kind, None)


def register_object(
    name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    """Register one manifest object as the matching pulumi-kubernetes resource."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status")}
    cls = _resource_class(obj["apiVersion"], obj["kind"])
    if cls is None:
        return k8s.apiextensions.CustomResource(
            name, api_version=obj["apiVersion"], kind=obj["kind"], opts=opts, **body
        )
    kwargs = {_CAMEL.sub("_", k).lower(): v for k, v in body.items()}
    resource: pulumi.CustomResource = cls(name, opts=opts, **kwargs)
    return resource


@dataclass(frozen=True)
class KueueReleaseArgs:
    version: str
    objects: Sequence[dict[str, Any]]
    """The prepared manifest (see prepare_manifest)."""


class KueueRelease(pulumi.ComponentResource):
    """Every object of the Kueue release manifest, applied server-side by the provider."""

    resources: list[pulumi.CustomResource]

    def __init__(
        self, name: str, args: KueueReleaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:kueue:KueueRelease", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        early = ("Namespace", "CustomResourceDefinition")
        first = [o for o in args.objects if o["kind"] in early]
        rest = [o for o in args.objects if o["kind"] not in early]
        self.resources = []
        for obj in first:
            self.resources.append(register_object(self._child_name(name, obj), obj, child))
        after = pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=list(self.resources))
        )
        for obj in rest:
            self.resources.append(register_object(self._child_name(name, obj), obj, after))
        self.version = pulumi.Output.from_input(args.version)
        self.register_outputs({"version": self.version, "objects": len(self.resources)})

    @staticmethod
    def _child_name(name: str, obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        return f"{name}-{namespace}-{meta['name']}" if namespace else f"{name}-{meta['name']}"
