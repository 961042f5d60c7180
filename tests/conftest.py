"""Shared fixtures: stack configs from the Pulumi.<stack>.yaml files and a Pulumi mock run."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components import keys
from components.config import StackConfig, load_config
from components.kueue import parse_manifest, prepare_manifest
from gpuq.stackfile import read_config

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "unit" / "data" / "kueue-manifest.yaml"


def stack_raw(stack: str) -> dict[str, Any]:
    """The `gpu-queues:*` keys of Pulumi.<stack>.yaml, without the prefix."""
    return read_config(stack, ROOT)


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str | None


@dataclass
class MockRun:
    resources: list[Registered] = field(default_factory=list)
    probes: list[tuple[Any, Any, float]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[Registered]:
        return [
            r for r in self.resources if r.inputs.get("kind") == kind or r.typ.endswith(f":{kind}")
        ]

    def one(self, kind: str, name: str) -> Registered:
        found = [r for r in self.of_kind(kind) if r.inputs.get("metadata", {}).get("name") == name]
        assert len(found) == 1, f"expected one {kind} {name}, got {len(found)}"
        return found[0]


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self, run: MockRun) -> None:
        self.run = run

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.run.resources.append(
            Registered(args.typ, args.name, copy.deepcopy(args.inputs), args.provider)
        )
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


def run_stack(
    config: StackConfig,
    manifest: list[dict[str, Any]] | None,
    kubernetes: dict[str, Any] | None = None,
    preview: bool = False,
    verified_sha256: str | None = None,
) -> MockRun:
    """Build GpuQueues under Pulumi mocks; the readiness probe is recorded, never dialled.

    The manifest is prepared first, as the program's validation phase does. It records a
    checksum on the controller only when `verified_sha256` is given: the digest the caller
    verified the manifest's bytes against (components.kueue.load_release does it for real)."""
    from components.stack import GpuQueues, GpuQueuesArgs

    prepared = (
        prepare_manifest(manifest, config.kueue, verified_sha256=verified_sha256)
        if manifest is not None
        else None
    )
    run = MockRun()

    def probe(kubeconfig: Any, context: Any, timeout: float) -> str:
        run.probes.append((kubeconfig, context, timeout))
        return "ready (fake)"

    pulumi.runtime.set_mocks(_Mocks(run), project=keys.PROJECT, stack="unit", preview=preview)
    cfg: dict[str, str] = {}
    secret: list[str] = []
    if kubernetes is not None:
        cfg[f"{keys.PROJECT}:{keys.KEY_KUBERNETES}"] = json.dumps(kubernetes)
        secret.append(f"{keys.PROJECT}:{keys.KEY_KUBERNETES}")
    pulumi.runtime.set_all_config(cfg, secret)

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        stack = GpuQueues("gpu-queues", GpuQueuesArgs(config, prepared, probe))
        return pulumi.Output.all(**stack.outputs).apply(run.outputs.update)

    program()
    return run


@pytest.fixture
def manifest() -> list[dict[str, Any]]:
    return parse_manifest(MANIFEST.read_bytes(), str(MANIFEST))


@pytest.fixture
def dev_raw() -> dict[str, Any]:
    return stack_raw("dev")


@pytest.fixture
def prod_raw() -> dict[str, Any]:
    return stack_raw("prod")


@pytest.fixture
def dev_run(manifest: list[dict[str, Any]]) -> MockRun:
    return run_stack(load_config(stack_raw("dev")), manifest)


@pytest.fixture
def prod_run(manifest: list[dict[str, Any]]) -> MockRun:
    return run_stack(load_config(stack_raw("prod")), manifest)
