"""Every supported Kueue release, from its own module and with its own controller binary:

- the recorded facts (gpu_queues/kueue/releases.json) are what its source says;
- its real release manifest passes the release allowlist unchanged, and every stack that
  installs Kueue prepares it at that version;
- the manager Configuration the program renders for it is accepted by that release's own
  binary, and what the config check refuses (a gate the release does not know) is refused by
  the binary too;
- `make pin-kueue` moves the pin up to v0.19.2 and back, leaving the tree identical.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import list_stacks
from gpu_queues.kueue import versions as kueue_versions
from gpu_queues.release.allowlist import check_release
from gpu_queues.release.catalogue import MANAGER_CONFIG_KEY
from gpu_queues.release.manifest import parse_documents, prepare_manifest
from gpu_queues.release.module import module_dir, pinned_version, render, rendered_relpath
from gpu_queues.release.pin import pin_release
from tests.conftest import stack_raw

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".toolchain" / "bin"
KUBECTL = BIN / "kubectl"
SUPPORTED = kueue_versions.supported()


def installing_stacks() -> list[str]:
    return [s for s in list_stacks(ROOT) if load_config(stack_raw(s)).kueue.install]


_RENDERS: dict[str, bytes] = {}


def rendered(version: str) -> bytes:
    if version not in _RENDERS:
        assert KUBECTL.exists(), f"{KUBECTL} is missing: run `make toolchain`"
        _RENDERS[version] = render(version, module_dir(version), KUBECTL)
    return _RENDERS[version]


@pytest.mark.parametrize("version", SUPPORTED)
def test_recorded_facts_are_what_the_module_says(version: str) -> None:
    assert kueue_versions.derive(version, module_dir(version)) == kueue_versions.release(version)


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_real_release_passes_the_allowlist_unchanged(version: str) -> None:
    docs = parse_documents(rendered(version), f"Kueue {version}")
    assert check_release(docs, version) == []


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("stack", installing_stacks())
def test_every_installing_stack_prepares_every_release(version: str, stack: str) -> None:
    raw = stack_raw(stack)
    raw["kueue"] = {**raw.get("kueue", {}), "version": version}
    prepared = prepare_manifest(
        parse_documents(rendered(version), version), load_config(raw).kueue, version
    )
    assert prepared.version == version


def kueue_binary(version: str) -> Path:
    binary = BIN / f"kueue-{version}"
    assert binary.exists(), f"{binary} is missing: `make toolchain-all` links every release"
    return binary


def test_make_toolchain_all_links_every_release_and_kueue_is_the_pin() -> None:
    for version in SUPPORTED:
        kueue_binary(version)
    assert (BIN / "kueue").samefile(kueue_binary(pinned_version()))


def start(version: str, configuration: str, tmp_path: Path) -> str:
    """Run the release's controller with `configuration` and no cluster to reach: it loads
    and validates the Configuration and its feature gates, logs "Initializing" when they
    pass, then stops for want of a cluster. Its output."""
    path = tmp_path / f"config-{version}.yaml"
    path.write_text(configuration)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KUBERNETES_") and k not in ("KUBECONFIG", "HOME")
    }
    env["HOME"] = str(tmp_path)  # no ~/.kube/config either: nothing to dial
    done = subprocess.run(
        [str(kueue_binary(version)), f"--config={path}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode != 0, "with no cluster, the controller must stop"
    return done.stdout + done.stderr


def configuration(version: str, stack: str) -> str:
    raw = stack_raw(stack)
    raw["kueue"] = {**raw.get("kueue", {}), "version": version}
    prepared = prepare_manifest(
        parse_documents(rendered(version), version), load_config(raw).kueue, version
    )
    cm = next(o for o in prepared.objects if o["kind"] == "ConfigMap" and "data" in o)
    return str(cm["data"][MANAGER_CONFIG_KEY])


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_rendered_configuration_is_accepted_by_that_releases_binary(
    version: str, stack: str, tmp_path: Path
) -> None:
    out = start(version, configuration(version, stack), tmp_path)
    assert '"msg":"Initializing"' in out and f'"gitVersion":"{version}"' in out, out
    assert "Unable to load the configuration" not in out


def test_a_gate_only_v0_19_knows_is_refused_by_v0_18_itself(tmp_path: Path) -> None:
    """What the config check refuses for v0.18.3 (featureGates.DisableWaitForPodsReady) is
    what v0.18.3 refuses at start-up, and v0.19.2 accepts it."""
    text = yaml.safe_load(configuration("v0.18.3", "dev"))
    text["featureGates"] = {"DisableWaitForPodsReady": True}
    old = start("v0.18.3", yaml.safe_dump(text), tmp_path)
    assert '"msg":"Initializing"' not in old
    assert "unrecognized feature gate: DisableWaitForPodsReady" in old, old
    new = start("v0.19.2", yaml.safe_dump(text), tmp_path)
    assert '"msg":"Initializing"' in new, new
    raw = copy.deepcopy(stack_raw("dev"))
    raw["kueue"] = {**raw["kueue"], "version": "v0.18.3", "manager": {"featureGates": {}}}
    raw["kueue"]["manager"]["featureGates"]["DisableWaitForPodsReady"] = True
    with pytest.raises(Exception, match=r"does not exist in Kueue v0\.18\.3"):
        load_config(raw)


# --- make pin-kueue round trip ------------------------------------------------------------


def scratch_project(tmp_path: Path) -> Path:
    """The files `make pin-kueue` reads and writes, copied (never the real tree)."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "toolchain", root / "toolchain")
    for stack in list_stacks(ROOT):
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", root / f"Pulumi.{stack}.yaml")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".kueue", ".toolchain")
    }


def test_pin_kueue_round_trip_leaves_the_tree_identical(tmp_path: Path) -> None:
    root = scratch_project(tmp_path)
    before = snapshot(root)
    pinned = pinned_version(root)
    target = "v0.19.2"
    assert pinned != target

    up = pin_release(target, root=root, kubectl=KUBECTL)
    assert up.moved_from == pinned and up.added == []
    assert pinned_version(root) == target
    digest = hashlib.sha256(rendered(target)).hexdigest()
    for stack in installing_stacks():
        kueue = yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text())["config"][
            "gpu-queues:kueue"
        ]
        assert kueue["manifest"] == {"path": rendered_relpath(target), "sha256": digest}
    assert (root / ".toolchain" / "bin" / "kueue").samefile(BIN / f"kueue-{target}")
    assert {p.stack for p in up.pins if p.advice} >= {"dev", "local"}

    down = pin_release(pinned, root=root, kubectl=KUBECTL)
    assert down.moved_from == target
    assert snapshot(root) == before
    assert (root / ".toolchain" / "bin" / "kueue").samefile(BIN / f"kueue-{pinned}")
