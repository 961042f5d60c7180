"""gpu_queues as a library other programs use (issue 22, item 2): its public face, the pin an
installed copy reads, GpuQueuesArgs' constructors (every check before anything is registered)
and GpuQueues on a provider of the caller's. The installed package on a real cluster:
tests/e2e/test_library.py."""

from __future__ import annotations

import ast
import json
import runpy
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

import gpu_queues
from gpu_queues import ConfigError, GpuQueues, GpuQueuesArgs, KubeconfigError, StackConfig
from gpu_queues.config.model import load_config
from gpu_queues.pins import PINS_FILE, read_pins
from tests.conftest import ROOT, MockRun, mocks_for

pytestmark = pytest.mark.unit

EXAMPLE = ROOT / "docs" / "examples" / "library" / "__main__.py"
TEAMS_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-teams.yaml"


# --- the public face ------------------------------------------------------------------------


def test_the_public_face_imports_only_what_it_exports():
    """gpu_queues/__init__.py names each export once where it is typed and once where it is
    loaded, and imports nothing else; each is the object of the module that defines it."""
    tree = ast.parse((ROOT / "gpu_queues" / "__init__.py").read_text())
    imported = [
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpu_queues")
        for alias in node.names
    ]
    assert sorted(imported) == sorted(gpu_queues.__all__ * 2)
    assert gpu_queues.GpuQueues.__module__ == "gpu_queues.components.gpu_queues"
    assert gpu_queues.StackConfig is load_config({}).__class__
    with pytest.raises(AttributeError):
        _ = gpu_queues.validate  # type: ignore[attr-defined]


def test_importing_a_module_of_the_package_does_not_import_pulumi():
    """The public names load on first use: the tools, policies and the test controller import
    gpu_queues.keys and friends without the SDKs' seconds of imports."""
    code = "import sys, gpu_queues.keys, gpu_queues.config.model; print('pulumi' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# --- the pin an installed copy reads --------------------------------------------------------


def test_an_installed_copy_reads_the_pin_the_build_copies_from_toolchain_pins_env(tmp_path):
    """The build copies toolchain/pins.env into the package (pyproject's force-include); a copy
    of the package laid out like that, with no repo around it, reads the same Kueue pin."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["gpu_queues"]
    assert wheel["force-include"] == {"toolchain/pins.env": "gpu_queues/pins.env"}
    site = tmp_path / "site-packages"
    shutil.copytree(
        ROOT / "gpu_queues", site / "gpu_queues", ignore=shutil.ignore_patterns("__pycache__")
    )
    for source, target in wheel["force-include"].items():
        shutil.copyfile(ROOT / source, site / target)
    code = "from gpu_queues import pins; print(pins.PINS_FILE, pins.kueue_version())"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    path, version = out.stdout.split()
    assert Path(path) == site / "gpu_queues" / "pins.env"
    assert version == read_pins(PINS_FILE)["KUEUE_VERSION"]
    assert PINS_FILE == ROOT / "toolchain" / "pins.env"  # in the checkout: the one file


# --- GpuQueuesArgs' constructors --------------------------------------------------------------


def _team(name: str, gpus: int, flavor: str = "shared-gpu") -> dict[str, Any]:
    quota = {
        "cpu": {"nominalQuota": 8},
        "memory": {"nominalQuota": "64Gi"},
        "nvidia.com/gpu": {"nominalQuota": gpus},
    }
    return {
        "name": name,
        "namespace": f"team-{name}",
        "clusterQueue": f"{name}-cq",
        "localQueue": f"{name}-queue",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [{"name": flavor, "resources": quota}],
            }
        ],
    }


def two_teams(**kueue: Any) -> dict[str, Any]:
    return {
        "kueue": {"install": False, **kueue},
        "flavors": [
            {"name": "shared-gpu", "capacity": {"cpu": 32, "memory": "256Gi", "nvidia.com/gpu": 8}}
        ],
        "teams": [_team("vision", 4), _team("speech", 4)],
    }


def mock_run(
    program: Callable[[], Any], preview: bool = False, run: MockRun | None = None
) -> MockRun:
    run = run or MockRun()
    pulumi.runtime.set_mocks(mocks_for(run), project="my-platform", stack="lib", preview=preview)
    pulumi.runtime.set_all_config({}, [])
    pulumi.runtime.test(program)()
    return run


def test_a_config_built_in_code_is_a_mapping_of_stack_config_keys_or_a_stack_config():
    from_keys = GpuQueuesArgs.from_config(two_teams())
    typed = GpuQueuesArgs.from_config(StackConfig.model_validate(two_teams()))
    assert from_keys.config == typed.config == load_config(two_teams())
    assert from_keys.manifest is None and [t.local_queue for t in typed.config.teams] == [
        "vision-queue",
        "speech-queue",
    ]


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda c: c["teams"][1].update(clusterQueu="x"), "gpu-queues:teams[1].clusterQueu"),
        # a cross-key check: the quota names a flavor the stack does not declare
        (
            lambda c: c["teams"][0]["resourceGroups"][0]["flavors"][0].update(name="h100"),
            "gpu-queues:teams[0].resourceGroups[0].flavors[0].name",
        ),
    ],
)
def test_a_bad_config_in_code_raises_config_error_naming_the_key_and_registers_nothing(
    change: Callable[[dict[str, Any]], None], key: str
):
    config = two_teams()
    change(config)
    caught: list[ConfigError] = []

    def program() -> None:
        try:
            args = GpuQueuesArgs.from_config(config)
        except ConfigError as error:
            caught.append(error)
            return
        GpuQueues("q", args)

    run = mock_run(program)
    assert caught and any(m.startswith(key) for m in caught[0].messages), caught
    assert run.resources == []


def test_a_stack_config_made_without_load_config_gets_the_cross_key_checks_too():
    config = two_teams()
    config["teams"][0]["resourceGroups"][0]["flavors"][0]["name"] = "h100"
    unchecked = StackConfig.model_validate(config)  # the models alone take it
    with pytest.raises(ConfigError, match=r"teams\[0\]\.resourceGroups\[0\]\.flavors\[0\]"):
        GpuQueuesArgs.from_config(unchecked)


def test_a_stack_file_loads_as_the_project_reads_it():
    args = GpuQueuesArgs.from_stack_file(TEAMS_STACK)
    assert args.config == load_config(stack_raw_of(TEAMS_STACK))
    assert [t.name for t in args.config.teams] == ["alpha", "beta"]


def stack_raw_of(path: Path) -> dict[str, Any]:
    from gpu_queues.config.stackfile import parse_config

    return parse_config(path.read_text(), path.name)


def test_a_stack_files_own_secret_kubeconfig_is_not_taken_for_the_connection(tmp_path):
    stack = tmp_path / "Pulumi.mine.yaml"
    stack.write_text(
        TEAMS_STACK.read_text()
        + "  gpu-queues:kubernetes:\n    kubeconfig:\n      secure: v1:abc:def\n"
    )
    with pytest.raises(ConfigError, match=r"gpu-queues:kubernetes\.kubeconfig: is a secret"):
        GpuQueuesArgs.from_stack_file(stack)
    args = GpuQueuesArgs.from_stack_file(stack, kubeconfig="apiVersion: v1")
    assert args.config.kubernetes.kubeconfig is None and args.kubeconfig == "apiVersion: v1"


# --- GpuQueues on the caller's provider -------------------------------------------------------


def _build(opts: Callable[[], pulumi.ResourceOptions | None], **args: Any) -> MockRun:
    probes: list[tuple[Any, Any, float]] = []

    def probe(kubeconfig: Any, context: Any, timeout: float) -> str:
        probes.append((kubeconfig, context, timeout))
        return "ready (fake)"

    def program() -> None:
        base = GpuQueuesArgs.from_config(two_teams())
        built = GpuQueuesArgs(base.config, base.manifest, probe, **args)
        GpuQueues("ml-queues", built, opts())

    run = mock_run(program)
    run.probes = probes
    return run


def _kubernetes(run: MockRun) -> list[Any]:
    return [r for r in run.resources if r.typ.startswith("kubernetes:")]


def _objects(run: MockRun) -> list[tuple[str, str, str]]:
    return sorted(
        (r.typ, r.name, json.dumps(r.inputs, sort_keys=True))
        for r in _kubernetes(run)
        if r.typ != "pulumi:providers:kubernetes"
    )


@pytest.mark.parametrize(
    "opts",
    [
        lambda: pulumi.ResourceOptions(provider=k8s.Provider("my-cluster", kubeconfig="x")),
        lambda: pulumi.ResourceOptions(providers=[k8s.Provider("my-cluster", kubeconfig="x")]),
        lambda: pulumi.ResourceOptions(
            providers={"kubernetes": k8s.Provider("my-cluster", kubeconfig="x")}
        ),
    ],
    ids=["provider", "providers-list", "providers-map"],
)
def test_with_the_callers_provider_every_object_uses_it_and_none_of_ours_is_built(opts):
    own = _build(lambda: None)
    theirs = _build(opts, kubeconfig="x")
    providers = [r for r in theirs.resources if r.typ == "pulumi:providers:kubernetes"]
    assert [p.name for p in providers] == ["my-cluster"]
    objects = _kubernetes(theirs)
    assert objects and all("::my-cluster::" in (r.provider or "") for r in objects), [
        (r.name, r.provider) for r in objects
    ]
    # The same objects, with the same inputs, as on a provider of GpuQueues' own.
    assert _objects(theirs) == _objects(own)
    assert [r.name for r in own.resources if r.typ == "pulumi:providers:kubernetes"] == [
        "ml-queues-k8s"
    ]


def _parented() -> pulumi.ResourceOptions:
    parent = pulumi.ComponentResource(
        "my:index:Platform",
        "platform",
        opts=pulumi.ResourceOptions(provider=k8s.Provider("my-cluster", kubeconfig="x")),
    )
    return pulumi.ResourceOptions(parent=parent)


@pytest.mark.parametrize(
    "opts",
    [
        lambda: pulumi.ResourceOptions(provider=k8s.Provider("my-cluster", kubeconfig="x")),
        lambda: pulumi.ResourceOptions(providers=[k8s.Provider("my-cluster", kubeconfig="x")]),
        lambda: pulumi.ResourceOptions(
            providers={"kubernetes": k8s.Provider("my-cluster", kubeconfig="x")}
        ),
        _parented,
    ],
    ids=["provider", "providers-list", "providers-map", "parents-provider"],
)
def test_the_callers_provider_without_its_kubeconfig_is_refused_before_anything_is_registered(
    opts,
):
    """Kueue's readiness check cannot read the caller's provider's kubeconfig: without
    kubeconfig= it would dial $KUBECONFIG (or gpu-queues:kubernetes), perhaps another cluster."""
    run = MockRun()

    def program() -> None:
        GpuQueues("ml-queues", GpuQueuesArgs.from_config(two_teams()), opts())

    with pytest.raises(KubeconfigError, match=r"no kubeconfig: pass kubeconfig= to GpuQueuesArgs"):
        mock_run(program, run=run)
    assert [r.typ for r in run.resources if r.typ.startswith("gpu-queues:")] == []


def test_the_readiness_check_dials_the_kubeconfig_given_with_the_args():
    run = _build(
        lambda: pulumi.ResourceOptions(provider=k8s.Provider("my-cluster", kubeconfig="x")),
        kubeconfig="kubeconfig: of mine",
        context="ctx",
    )
    assert [(k, c) for k, c, _ in run.probes] == [("kubeconfig: of mine", "ctx")]
    unset = _build(lambda: None)
    assert [(k, c) for k, c, _ in unset.probes] == [(None, None)]  # $KUBECONFIG


def test_the_readiness_check_dials_a_kubeconfig_set_in_the_config_built_in_code():
    config = {**two_teams(), "kubernetes": {"context": "mine"}}
    probes: list[Any] = []

    def program() -> None:
        args = GpuQueuesArgs.from_config(config)
        GpuQueues("q", GpuQueuesArgs(args.config, None, lambda *a: probes.append(a) or "ok"))

    mock_run(program)
    assert [(k, c) for k, c, _ in probes] == [(None, "mine")]


def test_a_stack_files_secret_read_without_decrypting_it_is_never_dialled():
    from gpu_queues.config.secure import PLACEHOLDER

    config = load_config({**two_teams(), "kubernetes": {"kubeconfig": PLACEHOLDER}})
    probes: list[Any] = []

    def program() -> None:
        GpuQueues("q", GpuQueuesArgs(config, None, lambda *a: probes.append(a) or "ok"))

    mock_run(program)
    assert [(k, c) for k, c, _ in probes] == [(None, None)]


# --- the example program (README) -------------------------------------------------------------


def test_the_example_program_registers_two_teams_on_its_own_provider():
    """docs/examples/library/__main__.py, the program the README shows and the e2e test
    deploys, under mocks (preview: the readiness check does not dial)."""
    run = MockRun()
    pulumi.runtime.set_mocks(mocks_for(run), project="my-platform", stack="lib", preview=True)
    pulumi.runtime.set_all_config({"my-platform:kubeconfig": "apiVersion: v1"}, [])
    pulumi.runtime.test(lambda: runpy.run_path(str(EXAMPLE), run_name="__main__"))()
    kinds = sorted(r.inputs.get("kind", r.typ) for r in _kubernetes(run))
    assert kinds.count("ClusterQueue") == 2 and kinds.count("LocalQueue") == 2
    assert kinds.count("ResourceFlavor") == 1 and kinds.count("Namespace") == 2
    assert [r.name for r in run.resources if r.typ == "pulumi:providers:kubernetes"] == [
        "my-cluster"
    ]
    assert not [r for r in run.resources if r.typ == "gpu-queues:kueue:KueueRelease"]


def test_the_readme_shows_the_example_program_as_it_is():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```python\n", readme.index("## Using it as a library"))
    shown = readme[start + len("```python\n") : readme.index("```\n", start + 1)]
    assert shown == EXAMPLE.read_text()


# --- the wheels the e2e test installs from --------------------------------------------------


def test_the_e2e_virtualenv_installs_this_checkout_from_the_wheels_alone_at_the_lock():
    from sandbox import wheels

    cmd = wheels.install_command(Path("/venv/bin/python"))
    assert cmd[:4] == ["/venv/bin/python", "-m", "pip", "install"]
    assert "--no-index" in cmd and cmd[cmd.index("--find-links") + 1] == str(wheels.WHEELS)
    assert cmd[cmd.index("-c") + 1] == str(ROOT / "requirements.lock") and cmd[-1] == str(ROOT)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert wheels.build_requires() == project["build-system"]["requires"]


def test_the_wheels_go_stale_with_the_requirements_not_with_tool_settings(tmp_path, monkeypatch):
    from sandbox import wheels

    pyproject = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text()
    pyproject.write_text(text)
    monkeypatch.setattr(wheels, "PYPROJECT", pyproject)
    before = wheels.digest()
    pyproject.write_text(text.replace("line-length = 100", "line-length = 99"))
    assert wheels.digest() == before
    pyproject.write_text(text.replace('"pyyaml~=6.0.4"', '"pyyaml~=6.0.5"'))
    assert wheels.digest() != before
