"""One way to register a rendered Kueue object (gpu_queues.config.render: the very dict the
config checks validated) as a pulumi-kubernetes CustomResource, for every component."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


def kueue_object(
    name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """`obj` as rendered: its apiVersion, kind, metadata and spec (none for a kind without)."""
    return k8s.apiextensions.CustomResource(
        name,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        metadata=obj["metadata"],
        spec=obj.get("spec"),
        opts=opts,
    )
