"""The admission what-if without a cluster: the workload mix (reading and checking it), the
stack's input to an engine, the fast engine that replays a mix on Kueue's own code
(fast.py), the rules both engines share for what became of a workload, the sides of a
comparison and the command (cli.py), and the report (report.md, report.json). The sandbox's
engine, on a real control plane, is sandbox/replay.

    from gpu_queues.whatif import replay
    run = replay(config, "workloads/staging", stack="staging")  # docs/what-if.md, From Python
    run = replay(config, mix, changes=[("14h", drained)])  # the stack drained at 14:00

The names below load on first use, so importing one module of the package does not start
the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpu_queues.whatif.changes import ChangeError
    from gpu_queues.whatif.engine_input import FastEngineError
    from gpu_queues.whatif.fast import replay
    from gpu_queues.whatif.report import Run

__all__ = ["ChangeError", "FastEngineError", "Run", "replay"]


def __getattr__(name: str) -> Any:
    """The public names, imported when first asked for (PEP 562)."""
    if name == "replay":
        from gpu_queues.whatif.fast import replay

        found: Any = replay
    elif name == "FastEngineError":
        from gpu_queues.whatif.engine_input import FastEngineError

        found = FastEngineError
    elif name == "ChangeError":
        from gpu_queues.whatif.changes import ChangeError

        found = ChangeError
    elif name == "Run":
        from gpu_queues.whatif.report import Run

        found = Run
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = found
    return found
