"""gpu-queues: validate the stack config and the Kueue manifest, then build the stack."""

from __future__ import annotations

import sys
from pathlib import Path

import pulumi

# The library's public API, as any other program uses it (docs/library.md); the upgrade check
# and the settling are this project's own.
from gpu_queues import ConfigError, GpuQueues, GpuQueuesArgs, KubeconfigError, ManifestError
from gpu_queues.components.settle import settle_registrations
from gpu_queues.kueue import stop
from gpu_queues.release.upgrade import UpgradeRefused, check_stack

# The Python language host's exit code for "the error was already shown to the user":
# the engine then reports the failure without an "unhandled error" line of its own.
BAIL = 32

try:
    # Everything is checked before the first resource (the provider too) is registered: the
    # config, the kubeconfig, the Kueue manifest (checksum, allowlist, image, manager settings)
    # and how they fit together. A relative manifest path is the project's.
    args = GpuQueuesArgs.from_pulumi_config(root=Path(__file__).resolve().parent)
    # Then the cluster, read-only: the running Kueue and its stored CRD versions decide
    # whether moving to this release is safe (gpu_queues/release/upgrade.py).
    move = check_stack(args.config, args.manifest, pulumi.runtime.is_dry_run())
except (ConfigError, KubeconfigError, ManifestError, UpgradeRefused) as error:
    print(error, file=sys.stderr)
    sys.exit(BAIL)
# First of the warnings: a team whose stopPolicy changes stops admitting or has its running
# jobs evicted (gpu_queues/kueue/stop.py), against what the cluster runs now.
for line in stop.preview_lines(
    [(t.name, t.cluster_queue, t.stop_policy) for t in args.config.teams],
    secret.get_secret_value() if (secret := args.config.kubernetes.kubeconfig) else None,
    args.config.kubernetes.context,
):
    pulumi.log.warn(line)
if move is not None:
    (pulumi.log.warn if move.warning else pulumi.log.info)(move.message)
if args.manifest is not None and args.manifest.provenance:
    # the release object for object, or which objects differ (gpu_queues/release/digests.py)
    (pulumi.log.info if args.manifest.genuine else pulumi.log.warn)(args.manifest.provenance)

stack = GpuQueues("gpu-queues", args)
for key, value in stack.outputs.items():
    pulumi.export(key, value)


# Last: the SDK then waits on the registrations linearly (gpu_queues/components/settle.py).
settle_registrations()
