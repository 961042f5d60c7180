"""The name a command was run by, for its usage line: `gpuq <command>` while the gpuq dispatcher
(gpu_queues/cli.py) runs it, else the name its module gives (`python -m ...`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_AS: ContextVar[str | None] = ContextVar("gpuq_invoked_as", default=None)


def prog(default: str) -> str:
    """The usage line's program name: `default` unless gpuq runs the command."""
    return _AS.get() or default


@contextmanager
def invoked_as(name: str) -> Iterator[None]:
    token = _AS.set(name)
    try:
        yield
    finally:
        _AS.reset(token)
