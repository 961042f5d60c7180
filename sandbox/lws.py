"""LeaderWorkerSet's controller in the sandbox, beside Kueue, when the stack's Kueue runs its
leaderworkerset integration (`leaderworkerset.x-k8s.io/leaderworkerset` in its manager
Configuration, read as both what-if engines read it; Kueue's release default has it).

The cloud installs LWS as sandbox/operators.py installs every operator: its CRD from the
pinned module (config/crd/bases, LWS_VERSION in toolchain/pins.env), then its controller
manager (.toolchain/bin/lws, `toolchain/build.sh lws`) as a process of the sandbox with its
certificate rotation (internalCertManagement) off and a serving certificate the sandbox signs in
its certDir, then the release's two WebhookConfigurations dialled by `url`. It takes :9445 for
webhooks and :8182 for health on the cluster's address; its metrics server is off.

Two things differ from the release's kustomization. Its pod webhooks are the module's
config/webhook manifests with the release's own patches applied (mutating-patch.yaml,
validating-patch.yaml: an objectSelector on `leaderworkerset.sigs.k8s.io/name`, so only an
LWS's pods are sent to it); and the CRD keeps the module's `None` conversion, not the release's
conversion webhook patch: the CRD serves one version (v1), so the API server never converts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues.config.model import StackConfig
from sandbox.control_plane import _module_dir
from sandbox.operators import Operator, integration_on, manifests
from sandbox.topology import Cluster

FRAMEWORK: Final = "leaderworkerset.x-k8s.io/leaderworkerset"
MODULE: Final = "sigs.k8s.io/lws"
WEBHOOK_PORT: Final = 9445
HEALTH_PORT: Final = 8182
# Kustomize's namePrefix in the module's config/default: the names the release installs.
NAME_PREFIX: Final = "lws-"
# The group of its manager's Configuration (config.lws.x-k8s.io/v1alpha1).
CONFIG_GROUP: Final = "config.lws.x-k8s.io"
CRD: Final = "leaderworkersets.leaderworkerset.x-k8s.io"
# The release's patches of the webhook manifests (config/webhook/kustomization.yaml), by the
# kind of the WebhookConfiguration each patches.
PATCHES: Final = {
    "MutatingWebhookConfiguration": "mutating-patch.yaml",
    "ValidatingWebhookConfiguration": "validating-patch.yaml",
}


def wanted(config: StackConfig) -> bool:
    """Whether the stack's Kueue runs its leaderworkerset integration."""
    return integration_on(config, FRAMEWORK)


def module() -> Path:
    return _module_dir(MODULE, "lws")


def crd_file() -> Path:
    return module() / "config" / "crd" / "bases" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"


def webhooks_file() -> Path:
    return module() / "config" / "webhook" / "manifests.yaml"


OPERATOR: Final = Operator(
    "lws", CRD, crd_file, webhooks_file, NAME_PREFIX, WEBHOOK_PORT, HEALTH_PORT, CONFIG_GROUP
)


def patched(docs: list[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    """The webhook manifests with the release's JSON patches applied. They only replace whole
    webhooks (`/webhooks/<n>`); any other operation is refused rather than half applied."""
    for doc in docs:
        name = PATCHES.get(str(doc.get("kind")))
        if name is None:
            continue
        for op in yaml.safe_load((folder / name).read_text()) or []:
            where = str(op.get("path", "")).split("/")
            if op.get("op") != "replace" or len(where) != 3 or where[1] != "webhooks":
                raise ValueError(f"{folder / name}: cannot apply {op.get('op')} {op.get('path')}")
            doc["webhooks"][int(where[2])] = op["value"]
    return docs


def webhook_configurations(
    c: Cluster, ca: bytes, source: Path | None = None
) -> list[dict[str, Any]]:
    """The release's WebhookConfigurations as the sandbox writes them (Operator says how)."""
    path = source or webhooks_file()
    return OPERATOR.webhook_configurations(c, ca, patched(manifests(path), path.parent))


def start(c: Cluster) -> None:
    """LWS's CRD, its manager, then its webhooks, as the release has them."""
    path = webhooks_file()
    OPERATOR.start(c, patched(manifests(path), path.parent))
