"""Shared fixtures: stack configs from the Pulumi.<stack>.yaml files and a Pulumi mock run.

Pulumi, the config models and hypothesis are imported where they are used: this file is also
loaded by pytest-xdist's controller, which runs no test, and their ~1 s of imports there came
before any worker started."""

from __future__ import annotations

import base64
import copy
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from gpu_queues import keys

if TYPE_CHECKING:
    import pulumi

    from gpu_queues.config.model import StackConfig

ROOT = Path(__file__).resolve().parent.parent


def ignored_folders(root: Path = ROOT) -> set[str]:
    """The folders .gitignore names from the top (`/.venv/`, `/package/venv/`), relative and
    slash-separated: what tools make, never the project's source or docs."""
    gitignore = root / ".gitignore"
    text = gitignore.read_text() if gitignore.exists() else ""
    return set(re.findall(r"^/([^\s*?\[]+?)/\s*$", text, re.M))


MANIFEST = ROOT / "tests" / "unit" / "release" / "data" / "kueue-manifest.yaml"
# The unit tests' stand-in for the release: MANIFEST (not a genuine release, but shaped like
# v0.18.3) playing the release of the pin, so a stack pointed at it is "the release" with
# every check of load_release as it is. Tests that mean the real releases use
# gpu_queues.release.reference.PinnedReleases (the toolchain tests, with the renders).
STAND_IN_VERSION = "v0.18.3"


def stand_in() -> Any:
    from gpu_queues.release.reference import StandInRelease

    return StandInRelease(STAND_IN_VERSION, MANIFEST.read_bytes())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--hypothesis-profile", None):
        # before hypothesis's own pytest_configure loads the profile named
        from tests import properties  # noqa: F401


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The order's seed, after the failures (also under -q, where pytest-randomly's header
    line is not shown): what repeats a failure that depends on the order."""
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.hasplugin("randomly") and isinstance(seed, int):
        terminalreporter.write_line(
            f"random order: -p randomly --randomly-seed={seed} (make test-unit SEED={seed})"
        )


@functools.cache
def _read_stack(stack: str) -> dict[str, Any]:
    from gpu_queues.config.stackfile import read_config

    return read_config(stack, ROOT)


@functools.cache
def _yaml_text(text: str) -> Any:
    return yaml.load(text, Loader=yaml.CSafeLoader)


def read_yaml(path: Path) -> Any:
    """A committed YAML file (a workflow, say) as yaml.safe_load reads it: the same loader
    classes over libyaml, each text parsed once per test run (the workflow tests read the
    same four files a hundred times), and a fresh copy for each caller."""
    return copy.deepcopy(_yaml_text(path.read_text()))


def stack_raw(stack: str) -> dict[str, Any]:
    """The `gpu-queues:*` keys of Pulumi.<stack>.yaml, without the prefix (a fresh copy: the
    file is parsed once per test run, and tests may change what they get)."""
    return copy.deepcopy(_read_stack(stack))


def without_tree(raw: dict[str, Any]) -> dict[str, Any]:
    """A stack's raw config with its cohort tree (`cohorts`) taken out and every team in its
    one-cohort root (`cohort`): the one-cohort form, for tests about a stack without a tree."""
    raw = copy.deepcopy(raw)
    raw.pop("cohorts", None)
    for team in raw.get("teams", []):
        team["cohort"] = raw["cohort"]["name"]
    return raw


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


# What a worker stack exports for its MultiKueue managers, as a StackReference reads it under
# mocks: a kubeconfig in the form Kueue accepts (CA as data, a token).
WORKER_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: w, cluster: {server: "https://10.0.0.2:6443", certificate-authority-data: Q0E=}}]
users: [{name: m, user: {token: not-a-real-token}}]
contexts: [{name: w, context: {cluster: w, user: m}}]
current-context: w
"""


TOKEN_SECRET_DATA = {
    "token": base64.b64encode(b"issued-by-the-token-controller").decode(),
    "ca.crt": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode(),
    "namespace": base64.b64encode(b"kueue-system").decode(),
}


@functools.cache
def _mocks_class() -> type:
    import pulumi

    class _Mocks(pulumi.runtime.Mocks):
        def __init__(self, run: MockRun) -> None:
            self.run = run

        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
            self.run.resources.append(
                Registered(args.typ, args.name, copy.deepcopy(args.inputs), args.provider)
            )
            if args.typ == "pulumi:pulumi:StackReference":
                outputs = {keys.OUT_MULTI_KUEUE_KUBECONFIG: WORKER_KUBECONFIG}
                return f"{args.name}-id", {**args.inputs, "outputs": outputs}
            if args.inputs.get("type") == "kubernetes.io/service-account-token":
                # What the cluster's token controller writes into it, and the provider waits for.
                return f"{args.name}-id", {**args.inputs, "data": TOKEN_SECRET_DATA}
            return f"{args.name}-id", args.inputs

        def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
            return {}

    return _Mocks


def mocks_for(run: MockRun) -> Any:
    """Pulumi mocks that record what the program registers into `run` (their class subclasses
    pulumi.runtime.Mocks, so it is made on first use, not when this file loads)."""
    return _mocks_class()(run)


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
    verified the manifest's bytes against (gpu_queues.release.manifest.load_release does it for
    real)."""
    import pulumi

    from gpu_queues.components.gpu_queues import GpuQueues, GpuQueuesArgs
    from gpu_queues.release.manifest import prepare_manifest

    prepared = (
        prepare_manifest(manifest, config.kueue, verified_sha256=verified_sha256)
        if manifest is not None
        else None
    )
    run = MockRun()

    def probe(kubeconfig: Any, context: Any, timeout: float) -> str:
        run.probes.append((kubeconfig, context, timeout))
        return "ready (fake)"

    pulumi.runtime.set_mocks(mocks_for(run), project=keys.PROJECT, stack="unit", preview=preview)
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


def _test_manifest() -> list[dict[str, Any]]:
    from gpu_queues.release.manifest import parse_manifest

    return parse_manifest(MANIFEST.read_bytes(), str(MANIFEST))


@pytest.fixture
def manifest() -> list[dict[str, Any]]:
    return _test_manifest()


@pytest.fixture
def dev_raw() -> dict[str, Any]:
    return stack_raw("dev")


@pytest.fixture
def prod_raw() -> dict[str, Any]:
    return stack_raw("prod")


# Built once per test run: the stack tests only read what the program registered.
@pytest.fixture(scope="session")
def dev_run() -> MockRun:
    from gpu_queues.config.model import load_config

    return run_stack(load_config(stack_raw("dev")), _test_manifest())


@pytest.fixture(scope="session")
def prod_run() -> MockRun:
    from gpu_queues.config.model import load_config

    return run_stack(load_config(stack_raw("prod")), _test_manifest())
