"""gpu-queues: validate the stack config and the Kueue manifest, then build the stack."""

from __future__ import annotations

import sys

import pulumi

from gpu_queues.components.gpu_queues import GpuQueues, GpuQueuesArgs, validate
from gpu_queues.components.settle import settle_registrations
from gpu_queues.config.model import ConfigError, raw_from_pulumi_config
from gpu_queues.kueue.client import KubeconfigError
from gpu_queues.release.manifest import ManifestError
from gpu_queues.release.upgrade import UpgradeRefused, check_stack

# The Python language host's exit code for "the error was already shown to the user":
# the engine then reports the failure without an "unhandled error" line of its own.
BAIL = 32

try:
    # Everything is checked before the first resource (the provider too) is registered: the
    # config, the kubeconfig, the Kueue manifest (checksum, allowlist, image, manager settings)
    # and how they fit together.
    config, manifest = validate(raw_from_pulumi_config(), stack=pulumi.get_stack())
    # Then the cluster, read-only: the running Kueue and its stored CRD versions decide
    # whether moving to this release is safe (gpu_queues/release/upgrade.py).
    move = check_stack(config, manifest, pulumi.runtime.is_dry_run())
except (ConfigError, KubeconfigError, ManifestError, UpgradeRefused) as error:
    print(error, file=sys.stderr)
    sys.exit(BAIL)
if move is not None:
    (pulumi.log.warn if move.warning else pulumi.log.info)(move.message)
if manifest is not None and manifest.provenance:
    (pulumi.log.info if manifest.genuine else pulumi.log.warn)(manifest.provenance)

stack = GpuQueues("gpu-queues", GpuQueuesArgs(config=config, manifest=manifest))
for key, value in stack.outputs.items():
    pulumi.export(key, value)


# Last: the SDK then waits on the registrations linearly (gpu_queues/components/settle.py).
settle_registrations()
