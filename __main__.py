"""gpu-queues: validate the stack config and the Kueue manifest, then build the stack."""

from __future__ import annotations

import asyncio
import sys

import pulumi

from components.config import ConfigError, load_config, raw_from_pulumi_config
from components.kueue import ManifestError, load_manifest
from components.stack import GpuQueues, GpuQueuesArgs

# The Python language host's exit code for "the error was already shown to the user":
# the engine then reports the failure without an "unhandled error" line of its own.
BAIL = 32

try:
    # Everything is checked before the first resource is registered.
    config = load_config(raw_from_pulumi_config())
    manifest = load_manifest(config.kueue) if config.kueue.install else None
except (ConfigError, ManifestError) as error:
    print(error, file=sys.stderr)
    sys.exit(BAIL)

stack = GpuQueues("gpu-queues", GpuQueuesArgs(config=config, manifest=manifest))
for key, value in stack.outputs.items():
    pulumi.export(key, value)


async def _settle() -> None:
    """Yield once before the SDK waits, so it tracks every registration as an outstanding RPC.

    Without it the Python SDK (3.272) finds no RPC yet and waits on the program's Outputs with
    asyncio.wait(FIRST_COMPLETED), re-arming every pending Output after each completion: time
    quadratic in the stack's size (200 teams: about 100 s of program CPU). docs/scale.md.
    """
    await asyncio.sleep(0)


pulumi.run(_settle)
