"""JobSet's controller in the sandbox, beside Kueue, when the stack's Kueue runs its jobset
integration (`jobset.x-k8s.io/jobset` in its manager Configuration, read as both what-if
engines read it; Kueue's release default has it).

The cloud installs JobSet as sandbox/operators.py installs every operator: its CRD from the
pinned module (config/components/crd/bases, JOBSET_VERSION in toolchain/pins.env), then its
controller manager (.toolchain/bin/jobset, `toolchain/build.sh jobset`) as a process of the
sandbox with its certificate rotation (internalCertManagement) off and a serving certificate
the sandbox signs in its certDir, then the release's two WebhookConfigurations dialled by `url`.
It takes :9444 for webhooks and :8181 for health on the cluster's address; its metrics server
is off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from gpu_queues.config.model import StackConfig
from sandbox.control_plane import _module_dir
from sandbox.operators import Operator, integration_on, manifests
from sandbox.topology import Cluster

FRAMEWORK: Final = "jobset.x-k8s.io/jobset"
MODULE: Final = "sigs.k8s.io/jobset"
WEBHOOK_PORT: Final = 9444
HEALTH_PORT: Final = 8181
# Kustomize's namePrefix in the module's config/default: the names the release installs.
NAME_PREFIX: Final = "jobset-"
# The group of its manager's Configuration (config.jobset.x-k8s.io/v1alpha1).
CONFIG_GROUP: Final = "config.jobset.x-k8s.io"
CRD: Final = "jobsets.jobset.x-k8s.io"


def wanted(config: StackConfig) -> bool:
    """Whether the stack's Kueue runs its jobset integration."""
    return integration_on(config, FRAMEWORK)


def module() -> Path:
    return _module_dir(MODULE, "jobset")


def crd_file() -> Path:
    return module() / "config" / "components" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"


def webhooks_file() -> Path:
    return module() / "config" / "components" / "webhook" / "manifests.yaml"


OPERATOR: Final = Operator(
    "jobset", CRD, crd_file, webhooks_file, NAME_PREFIX, WEBHOOK_PORT, HEALTH_PORT, CONFIG_GROUP
)


def webhook_configurations(
    c: Cluster, ca: bytes, source: Path | None = None
) -> list[dict[str, Any]]:
    """The module's WebhookConfigurations as the sandbox writes them (Operator says how)."""
    return OPERATOR.webhook_configurations(c, ca, manifests(source or webhooks_file()))


def start(c: Cluster) -> None:
    """JobSet's CRD, its manager, then its webhooks, as the release has them."""
    OPERATOR.start(c, manifests(webhooks_file()))
