"""The pack's rules on the Kueue release: the controller runs a pinned vX.Y.Z image (the one the
policy config expects, when it names one), and the release manifest was checked against a
sha256 (the annotation the program writes after verifying it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..props import child, is_unknown
from ..resource import Resource, Violation, config_str, items, violation
from . import (
    CHECKSUM_ANNOTATION,
    DEFAULT_KUEUE_DEPLOYMENT,
    DEFAULT_KUEUE_NAMESPACE,
    DEPLOYMENT_TYPE,
    KUEUE_RELEASE_CHECKSUM,
    KUEUE_RELEASE_PINNED,
)

_PINNED_TAG: Final = re.compile(r"^v[0-9]+\.[0-9]+\.[0-9]+$")
_SHA256: Final = re.compile(r"^(sha256:)?[0-9a-f]{64}$")


# --- Rule 8 -----------------------------------------------------------------------------


def _names_controller(obj: Any, config: Mapping[str, Any]) -> bool:
    name = child(obj, "metadata", "name")
    namespace = child(obj, "metadata", "namespace")
    return bool(
        name == config_str(config, "deploymentName", DEFAULT_KUEUE_DEPLOYMENT)
        and namespace == config_str(config, "namespace", DEFAULT_KUEUE_NAMESPACE)
    )


def _is_kueue_controller(resource: Resource, config: Mapping[str, Any]) -> bool:
    return resource.type == DEPLOYMENT_TYPE and _names_controller(resource.props, config)


# What else can set the controller's image: a server-side patch of its Deployment, and a
# DeploymentList holding it (Pulumi registers either as a resource of its own, beside the
# release's Deployment; the engine would apply whatever image it names).
_PATCH_TYPE: Final = f"{DEPLOYMENT_TYPE}Patch"
_LIST_TYPE: Final = f"{DEPLOYMENT_TYPE}List"


def _controllers(resource: Resource, config: Mapping[str, Any]) -> list[Any]:
    """Every Deployment object `resource` would apply to the Kueue controller."""
    if resource.type in (DEPLOYMENT_TYPE, _PATCH_TYPE):
        objects = [resource.props]
    elif resource.type == _LIST_TYPE:
        objects = items(child(resource.props, "items"))
    else:
        return []
    return [obj for obj in objects if _names_controller(obj, config)]


def image_tag(image: str) -> str | None:
    """The tag of an image reference (None without one); a registry port is not a tag."""
    reference = image.split("@", 1)[0]
    last = reference.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def kueue_release_pinned(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """The Kueue controller runs a pinned vX.Y.Z release image, not latest or a branch: in its
    Deployment, and in any patch or list that would change that Deployment's images."""
    expected = config.get("expectedVersion")
    containers = [
        container
        for controller in _controllers(resource, config)
        for part in ("initContainers", "containers")
        for container in items(child(controller, "spec", "template", "spec", part))
    ]
    violations: list[Violation] = []
    for container in containers:
        image = child(container, "image")
        cname = child(container, "name")
        if not isinstance(image, str):
            continue
        tag = image_tag(image)
        if tag is None or not _PINNED_TAG.match(tag):
            shown = "no tag" if tag is None else f"tag {tag!r}"
            violations.append(
                violation(
                    KUEUE_RELEASE_PINNED,
                    resource,
                    f"container {cname} runs image {image} with {shown}, not a pinned release "
                    "vX.Y.Z, so what runs can change under the same config",
                    "install Kueue from a versioned release manifest (kueue.version: vX.Y.Z in "
                    "the stack config, e.g. v0.18.3)",
                )
            )
        elif isinstance(expected, str) and expected and tag != expected:
            violations.append(
                violation(
                    KUEUE_RELEASE_PINNED,
                    resource,
                    f"container {cname} runs Kueue {tag} but the policy config expects {expected}",
                    "set kueue.version to the expected release, or update "
                    f"{KUEUE_RELEASE_PINNED}.expectedVersion",
                )
            )
    return violations


def kueue_release_checksum(resource: Resource, config: Mapping[str, Any]) -> list[Violation]:
    """The Kueue release manifest was checked against a configured sha256."""
    if not _is_kueue_controller(resource, config):
        return []
    annotations = child(resource.props, "metadata", "annotations")
    digest = child(annotations, CHECKSUM_ANNOTATION)
    if is_unknown(annotations) or is_unknown(digest):
        return []
    if isinstance(digest, str) and _SHA256.match(digest):
        return []
    problem = (
        f"annotation {CHECKSUM_ANNOTATION} is missing, so the release manifest was applied "
        "without checking its sha256"
        if digest is None
        else f"annotation {CHECKSUM_ANNOTATION} is {digest!r}, not a sha256 hex digest"
    )
    return [
        violation(
            KUEUE_RELEASE_CHECKSUM,
            resource,
            problem,
            "set gpu-queues:kueue.manifest.sha256 in the stack config to the release "
            "manifest's sha256 (sha256sum manifests.yaml)",
        )
    ]
