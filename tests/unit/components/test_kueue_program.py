"""The program (__main__.py) under Pulumi mocks: a bad manifest registers nothing at all.

Issue 10 item 8: manifest problems used to be found inside GpuQueues, after the provider
was registered. The program's own entry point is run here, with stack config as the engine
would pass it, and every registration is recorded.
"""

from __future__ import annotations

import hashlib
import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pulumi.runtime.settings
import pytest
import yaml
from pulumi.runtime.sync_await import _sync_await

from gpu_queues import keys
from tests.conftest import MANIFEST, ROOT, MockRun, mocks_for, stack_raw, stand_in

CUSTOM = {"custom": True, "reason": "a hostile change under test"}

pytestmark = pytest.mark.unit

BAIL = 32


@pytest.fixture(autouse=True)
def _the_stand_in_is_the_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """__main__.py takes its releases from the default (the committed digests and the render
    of `make kueue-manifest`); here the unit tests' stand-in manifest plays the release, as in
    every unit test (tests/conftest.py stand_in), and every check runs as it is."""
    from gpu_queues.release import manifest

    monkeypatch.setattr(manifest, "PinnedReleases", lambda root: stand_in())


def run_program(
    raw: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> tuple[MockRun, Any, str]:
    """Run __main__.py with `raw` as the stack's gpu-queues config; preview, so no probe."""
    run = MockRun()
    pulumi.runtime.set_mocks(mocks_for(run), project=keys.PROJECT, stack="unit", preview=True)
    pulumi.runtime.set_all_config(
        {f"{keys.PROJECT}:{key}": json.dumps(value) for key, value in raw.items()}, []
    )
    exit_code: list[Any] = []

    def program() -> None:
        try:
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
        except SystemExit as stop:
            exit_code.append(stop.code)

    # As the language host runs it (pulumi-language-python-exec): inside a fresh root stack, so
    # the program's pulumi.run entry point (__main__.py's _settle) is taken and awaited too.
    # set_mocks made (and finished) a root stack of its own: the program gets a new one, on the
    # loop the mocks run on (as pulumi.runtime.test does).
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.settings.SETTINGS.rpc_manager.clear()
    pulumi.runtime.settings.SETTINGS.outputs.clear()
    _sync_await(pulumi.runtime.run_in_stack(program))
    return run, (exit_code or [None])[0], capsys.readouterr().err


def dev_with_manifest(path: Path, **manifest: Any) -> dict[str, Any]:
    raw = stack_raw("dev")
    raw["kueue"] = {"manifest": {"path": str(path), **manifest}}
    return raw


def write_manifest(tmp_path: Path, change: Any = None) -> Path:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    if change is not None:
        change(docs)
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _controller(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == "Deployment")


def test_a_good_manifest_registers_the_provider_and_the_release(tmp_path, capsys):
    path = write_manifest(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    run, code, err = run_program(dev_with_manifest(path, sha256=digest), capsys)
    assert code is None, err
    types = {r.typ for r in run.resources}
    assert "pulumi:providers:kubernetes" in types
    assert "gpu-queues:kueue:KueueRelease" in types
    deployment = run.one("Deployment", "kueue-controller-manager")
    assert deployment.inputs["metadata"]["annotations"][keys.ANNOTATION_MANIFEST_SHA256] == digest


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            lambda docs: _controller(docs)["spec"]["template"]["spec"]["containers"][0][
                "args"
            ].extend(["--feature-gates=X=true", "--feature-gates=X=false"]),
            "feature gate(s) X are set more than once",
            id="feature-gate-twice",
        ),
        pytest.param(
            lambda docs: docs.remove(next(d for d in docs if d["kind"] == "ConfigMap")),
            "ConfigMap kueue-system/kueue-manager-config: missing",
            id="missing-manager-configmap",
        ),
        pytest.param(
            lambda docs: docs.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": "kueue-admin"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "cluster-admin",
                    },
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "name": "kueue-controller-manager",
                            "namespace": "kueue-system",
                        }
                    ],
                }
            ),
            "binds the built-in ClusterRole cluster-admin",
            id="cluster-admin-binding",
        ),
        pytest.param(
            lambda docs: _controller(docs)["spec"]["template"]["spec"]["containers"][0].update(
                image="registry.k8s.io/kueue/kueue:main"
            ),
            "its tag main is not kueue.version",
            id="main-image",
        ),
    ],
)
def test_a_bad_manifest_registers_zero_resources(tmp_path, capsys, change, expected):
    path = write_manifest(tmp_path, change)
    run, code, err = run_program(dev_with_manifest(path), capsys)
    assert code == BAIL
    assert "set gpu-queues:kueue.manifest.custom: true" in err  # not the release
    assert run.resources == []
    # and as a custom manifest, the allowlist names what it is
    run, code, err = run_program(dev_with_manifest(path, **CUSTOM), capsys)
    assert code == BAIL
    assert expected in err
    assert run.resources == []


def test_a_feature_gate_in_config_and_manifest_registers_zero_resources(tmp_path, capsys):
    path = write_manifest(
        tmp_path,
        lambda docs: _controller(docs)["spec"]["template"]["spec"]["containers"][0]["args"].append(
            "--feature-gates=TopologyAwareScheduling=true"
        ),
    )
    raw = dev_with_manifest(path, **CUSTOM)
    raw["kueue"]["manager"] = {"featureGates": {"TopologyAwareScheduling": False}}
    run, code, err = run_program(raw, capsys)
    assert code == BAIL
    assert "TopologyAwareScheduling are set both" in err
    assert run.resources == []


def test_a_wrong_checksum_registers_zero_resources(tmp_path, capsys):
    path = write_manifest(tmp_path)
    run, code, err = run_program(dev_with_manifest(path, sha256="0" * 64), capsys)
    assert code == BAIL
    assert "nothing was applied" in err
    assert run.resources == []


@pytest.mark.parametrize("team_namespace", ["kueue-system"])
def test_a_team_namespace_the_manifest_creates_is_refused(tmp_path, capsys, team_namespace):
    path = write_manifest(tmp_path)
    raw = dev_with_manifest(path)
    raw["teams"][0]["namespace"] = team_namespace
    raw["teams"][0]["adoptNamespace"] = False
    raw["sharedStorage"][0]["namespace"] = team_namespace
    run, code, err = run_program(raw, capsys)
    assert code == BAIL
    assert (
        f"gpu-queues:teams[0].namespace: namespace {team_namespace!r} is created by the Kueue"
        in err
    )
    assert run.resources == []


def test_a_namespace_only_a_custom_manifest_creates_is_refused_too(manifest):
    # The check is derived from the manifest, not a fixed list: whatever namespace it creates.
    from gpu_queues.components.validation import manifest_problems
    from gpu_queues.config.model import ConfigError, load_config
    from gpu_queues.release.manifest import PreparedManifest

    config = load_config(stack_raw("prod"))
    prepared = PreparedManifest("v0.18.3", (), None, frozenset({"team-vision"}))
    problems = manifest_problems(config, prepared)
    assert [p.path for p in problems] == ["gpu-queues:teams[1].namespace"]
    assert isinstance(ConfigError(problems), ConfigError)


def test_a_missing_rendered_manifest_says_which_command_creates_it(capsys):
    raw = stack_raw("dev")
    raw["kueue"] = {"manifest": {"path": ".kueue/v0.18.3/missing-for-this-test.yaml"}}
    run, code, err = run_program(raw, capsys)
    assert code == BAIL
    assert "run `make kueue-manifest`" in err
    assert run.resources == []


def test_the_preview_warns_of_a_custom_manifest_naming_it_and_its_changes(
    tmp_path, capsys, monkeypatch
):
    logged: list[tuple[str, str]] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *a, **k: logged.append(("warn", msg)))
    monkeypatch.setattr(pulumi.log, "info", lambda msg, *a, **k: logged.append(("info", msg)))
    extra = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "kueue-dashboards", "namespace": "kueue-system"}}  # fmt: skip
    path = write_manifest(tmp_path, lambda docs: docs.append(extra))
    run, code, err = run_program(dev_with_manifest(path, **CUSTOM), capsys)
    assert code is None, err
    (warning,) = [m for level, m in logged if level == "warn" and "Kueue manifest" in m]
    assert "a custom manifest (gpu-queues:kueue.manifest.custom: a hostile change under test)" in (
        warning
    )
    assert "ConfigMap kueue-system/kueue-dashboards (added)" in warning
    assert run.one("ConfigMap", "kueue-dashboards")
    # the release itself is said so, as information
    logged.clear()
    run, code, err = run_program(dev_with_manifest(write_manifest(tmp_path)), capsys)
    assert code is None, err
    assert [level for level, m in logged if "Kueue manifest" in m] == ["info"]


def test_the_preview_warns_first_of_a_team_that_will_be_drained(tmp_path, capsys, monkeypatch):
    """Issue 39 item 3: a stopPolicy change is the preview's first warning, against the
    cluster's ClusterQueue, with its admitted workloads."""
    from gpu_queues.kueue import stop

    path = write_manifest(tmp_path)
    raw = dev_with_manifest(path, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    raw["teams"][0]["stopPolicy"] = "HoldAndDrain"
    live = {"gpu-cluster-queue": stop.LiveQueue("None", 6)}
    monkeypatch.setattr(stop, "read_live", lambda kubeconfig, context: live)
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warned.append(message))
    run, code, err = run_program(raw, capsys)
    assert code is None, err
    assert warned[0] == (
        "team ml: its running jobs will be evicted and nothing new admitted "
        "(stopPolicy None → HoldAndDrain); 6 admitted workloads to be evicted"
    )
    assert run.one("ClusterQueue", "gpu-cluster-queue").inputs["spec"]["stopPolicy"] == (
        "HoldAndDrain"
    )
