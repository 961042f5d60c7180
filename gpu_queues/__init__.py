"""gpu-queues as a library: Kueue, GPU flavors, team queues and shared storage as one Pulumi
component, for this project's program and for programs of your own.

    from gpu_queues import GpuQueues, GpuQueuesArgs, StackConfigKeys

    config: StackConfigKeys = {"flavors": [...], "teams": [...]}  # a typo is a type error
    args = GpuQueuesArgs.from_config(config, kubeconfig=kubeconfig)  # or from_stack_file
    GpuQueues("gpu", args).local_queues

Every check runs in GpuQueuesArgs' constructors, before anything is registered: a bad config
raises ConfigError naming each key. The names below load on first use, so importing one module
of the package (gpu_queues.keys, say) does not import Pulumi.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_queues.components.gpu_queues import GpuQueues, GpuQueuesArgs
    from gpu_queues.config.model import ConfigError, StackConfig
    from gpu_queues.config.stack_keys import StackConfigKeys
    from gpu_queues.config.stackfile import StackFileError
    from gpu_queues.kueue.client import KubeconfigError
    from gpu_queues.release.manifest import ManifestError

__all__ = [
    "ConfigError",
    "GpuQueues",
    "GpuQueuesArgs",
    "KubeconfigError",
    "ManifestError",
    "StackConfig",
    "StackConfigKeys",
    "StackFileError",
]


def __getattr__(name: str) -> Any:
    """The public names, imported when first asked for (PEP 562)."""
    if name in ("GpuQueues", "GpuQueuesArgs"):
        from gpu_queues.components.gpu_queues import GpuQueues, GpuQueuesArgs

        found: dict[str, Any] = {"GpuQueues": GpuQueues, "GpuQueuesArgs": GpuQueuesArgs}
    elif name in ("ConfigError", "StackConfig"):
        from gpu_queues.config.model import ConfigError, StackConfig

        found = {"ConfigError": ConfigError, "StackConfig": StackConfig}
    elif name == "StackConfigKeys":
        from gpu_queues.config.stack_keys import StackConfigKeys

        found = {name: StackConfigKeys}
    elif name == "StackFileError":
        from gpu_queues.config.stackfile import StackFileError

        found = {name: StackFileError}
    elif name == "KubeconfigError":
        from gpu_queues.kueue.client import KubeconfigError

        found = {name: KubeconfigError}
    elif name == "ManifestError":
        from gpu_queues.release.manifest import ManifestError

        found = {name: ManifestError}
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals().update(found)
    return found[name]
