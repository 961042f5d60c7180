"""gpu-queues: validate the stack config and the Kueue manifest, then build the stack."""

from __future__ import annotations

import sys

import pulumi

from components.config import ConfigError, load_config, raw_from_pulumi_config
from components.kubeclient import KubeconfigError, validate
from components.kueue import ManifestError, load_manifest
from components.stack import GpuQueues, GpuQueuesArgs

# The Python language host's exit code for "the error was already shown to the user":
# the engine then reports the failure without an "unhandled error" line of its own.
BAIL = 32

try:
    # Everything is checked before the first resource is registered.
    config = load_config(raw_from_pulumi_config())
    if config.kubernetes.kubeconfig is not None:  # unset: $KUBECONFIG, possibly absent in CI
        validate(config.kubernetes.kubeconfig.get_secret_value(), config.kubernetes.context)
    manifest = load_manifest(config.kueue) if config.kueue.install else None
except (ConfigError, KubeconfigError, ManifestError) as error:
    print(error, file=sys.stderr)
    sys.exit(BAIL)

stack = GpuQueues("gpu-queues", GpuQueuesArgs(config=config, manifest=manifest))
for key, value in stack.outputs.items():
    pulumi.export(key, value)
