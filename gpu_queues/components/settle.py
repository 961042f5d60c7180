"""settle_registrations: keeps the Python SDK's final wait linear in the stack's size.

When a program's module code ends, the SDK (3.272, pulumi/runtime/stack.py wait_for_rpcs)
first awaits its outstanding RPCs one by one, then the program's pending Outputs with
asyncio.wait(FIRST_COMPLETED), re-arming every pending Output after each completion. A program
that registers hundreds of resources and never yields has started none of their RPCs when the
wait begins, so all of them are waited on the second, quadratic way (200 teams: about 100 s of
program CPU). An async entry point that yields once lets every registration start its RPC
first; the SDK then awaits them in the linear loop. docs/scale.md has the measurements.
"""

from __future__ import annotations

import asyncio
import contextlib

import pulumi


async def _yield_once() -> None:
    await asyncio.sleep(0)


def settle_registrations() -> None:
    """Call last in the program: registers the one-yield entry point with pulumi.run."""
    # Under Pulumi's mocks (unit tests) the root stack is finished before the program runs and
    # no entry point is ever awaited: the SDK refuses pulumi.run, and there is no final wait
    # to shorten.
    with contextlib.suppress(pulumi.RunError):
        pulumi.run(_yield_once)
