"""KueueRelease: every object of the checked Kueue release manifest, applied server-side by
the provider (the manifest itself is read, verified and prepared in gpu_queues.release)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

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
