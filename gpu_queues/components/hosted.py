"""GpuQueues for programs in any language: the component the component provider hosts
(package/__main__.py, `pulumi package add <checkout>/package`), token
gpu-queues:index:GpuQueues. It is the library's GpuQueues with inputs another language can
send: the stack config's keys as typed, documented inputs (gpu_queues/config/component_inputs.py,
generated from the config models) and the connection as `kubeconfig` and `context`. The same
checks run before anything is registered; a bad config fails the construction with every
problem named.

No `from __future__ import annotations` here: the SDK's analyzer reads the annotations as
types to write the component schema.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pulumi

from gpu_queues import keys
from gpu_queues.components import gpu_queues as library
from gpu_queues.config.component_inputs import StackConfig

PROVIDER = keys.PROJECT
"""The package's name: its types are gpu-queues:index:<Name>."""
VERSION = "0.1.0"
"""The package's version, as pyproject.toml's (a test holds them together)."""
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "package" / "schema.json"


class GpuQueuesArgs(StackConfig, total=False):
    """The stack config (the keys a Pulumi.<stack>.yaml holds under gpu-queues:, but
    `kubernetes`) and the cluster to reach."""

    kubeconfig: pulumi.Input[str]
    """kubeconfig content of the cluster (a secret): what Kueue's readiness check dials and, with
    no provider given in the options, what GpuQueues' own provider connects with. Required with
    a provider of yours (it cannot be read back from the provider)."""
    context: pulumi.Input[str]
    """The kubeconfig context (unset: its current context)."""


class GpuQueues(library.GpuQueues):
    """Kueue, GPU flavors, team queues and shared storage on one cluster, every check of the
    config before anything is registered (gpu-queues' GpuQueues component)."""

    def __init__(
        self, name: str, args: GpuQueuesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        config: dict[str, Any] = {k: _whole(v) for k, v in args.items() if k not in _CONNECTION}
        built = library.GpuQueuesArgs.from_config(
            config,  # type: ignore[arg-type]  # the same keys, their values checked at runtime
            kubeconfig=args.get("kubeconfig"),
            context=args.get("context"),
        )
        super().__init__(name, built, opts)


_CONNECTION = ("kubeconfig", "context")


def _whole(value: Any) -> Any:
    """The value with its whole numbers as ints. Every number reaches a provider as a double
    (protobuf's Struct has no integers), so a program in another language that writes
    `nominalQuota: 8` sends 8.0, which would render as the quantity "8.0" where a Python
    program's renders "8"."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def provider() -> Any:
    """The component provider of GpuQueues: the SDK's (its schema inferred by the analyzer from
    the annotations above), but for how a bad config comes back. The SDK reports an error from
    a component's constructor with its Python traceback; a ConfigError is the caller's input,
    so it goes back as the input properties it is about, one per problem, with no traceback."""
    from pulumi.errors import InputPropertiesError
    from pulumi.provider.experimental.component import ComponentProvider
    from pulumi.provider.server import ComponentInitError

    from gpu_queues.config.model import ConfigError
    from gpu_queues.kueue.client import KubeconfigError
    from gpu_queues.release.manifest import ManifestError

    class Provider(ComponentProvider):
        def construct(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().construct(*args, **kwargs)
            except ComponentInitError as error:
                inner = error.inner
                if isinstance(inner, ConfigError):
                    raise InputPropertiesError(
                        f"{PROVIDER}: invalid config ({len(inner.problems)} problem(s))",
                        [
                            {"property_path": _path(p.path), "reason": p.message}
                            for p in inner.problems
                        ],
                    ) from None
                if isinstance(inner, KubeconfigError | ManifestError):
                    raise InputPropertiesError(f"{PROVIDER}: {inner}") from None
                raise

    return Provider([GpuQueues], PROVIDER, None, VERSION)


def _path(path: str) -> str:
    """A stack config key path as the component's input path (no `gpu-queues:` prefix)."""
    return path.removeprefix(f"{PROVIDER}:")


def serve(argv: list[str]) -> None:
    """Run the provider for the engine (package/__main__.py): the SDK's provider main loop,
    as its component_provider_host runs it, with the provider above."""
    from pulumi.provider import main as provider_main

    provider_main(provider(), argv)


def schema() -> dict[str, Any]:
    """The component schema, as the provider answers GetSchema: inferred by the SDK's analyzer
    from the annotations above, so its inputs and their descriptions are the config models'."""
    found: dict[str, Any] = json.loads(provider().schema or "{}")
    return found


def render_schema() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`--write` regenerates package/schema.json (`make schema`); `--check` fails when stale."""
    parser = argparse.ArgumentParser(prog="python -m gpu_queues.components.hosted")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render_schema()
    if args.write:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        return 0
    if not SCHEMA_PATH.is_file() or SCHEMA_PATH.read_text(encoding="utf-8") != text:
        print(f"{SCHEMA_PATH} is stale: run `make schema`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
