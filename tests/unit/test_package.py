"""The wheel as a user installs it (issue 43, item 2), built here with the pinned backend in a
fraction of a second: the library only (no CI helper, and nothing in it imports one), its
dependencies kept to the versions the tests run, and a long description of its own whose links
work once installed."""

from __future__ import annotations

import ast
import email
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder
from packaging.requirements import Requirement
from packaging.version import Version

from gpu_queues.pins import read_pins
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

CI_HELPERS = {"changed_stacks", "whatif_ci", "pr_comment"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    (built,) = WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])
    return zipfile.ZipFile(built)


def _metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(wheel.read(name))


def _locked() -> dict[str, str]:
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    pairs = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {re.sub(r"[-_.]+", "-", name).lower(): version.strip() for name, version in pairs}


def test_the_wheel_holds_the_library_and_no_ci_helper(wheel: zipfile.ZipFile) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "gpu_queues"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    expected = {p for p in tracked if Path(p).stem not in CI_HELPERS} | {"gpu_queues/pins.env"}
    shipped = {n for n in wheel.namelist() if not n.startswith("gpu_queues-")}
    assert shipped - expected == set()  # nothing but the library
    assert {p for p in expected - shipped if not p.endswith(".md")} == set()
    assert "gpu_queues/py.typed" in shipped
    assert not [n for n in shipped if Path(n).stem in CI_HELPERS]


def test_no_module_of_the_wheel_imports_one_it_does_not_ship(wheel: zipfile.ZipFile) -> None:
    modules = {
        n[: -len(".py")].removesuffix("/__init__").replace("/", ".")
        for n in wheel.namelist()
        if n.endswith(".py")
    }
    missing = []
    for name in sorted(n for n in wheel.namelist() if n.endswith(".py")):
        for node in ast.walk(ast.parse(wheel.read(name))):
            targets = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            missing += [
                f"{name}: {t}" for t in targets if t.startswith("gpu_queues") and t not in modules
            ]
    assert missing == []


def test_the_dependencies_admit_the_tested_versions_only(wheel: zipfile.ZipFile) -> None:
    """The SDKs at exactly the tested (and toolchain-pinned) versions: pulumi-kubernetes asks
    the CLI for the plugin of its own version. The rest within the tested minor release."""
    locked, pins = _locked(), read_pins(ROOT / "toolchain" / "pins.env")
    requirements = [Requirement(r) for r in _metadata(wheel).get_all("Requires-Dist") or []]
    assert requirements
    for req in requirements:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        tested = Version(locked[name])
        assert req.specifier.contains(tested), (name, str(req.specifier), tested)
        following = Version(f"{tested.major}.{tested.minor + 1}.0")
        assert not req.specifier.contains(following), (name, str(req.specifier))
    exact = {r.name: str(r.specifier) for r in requirements if r.name.startswith("pulumi")}
    assert exact == {
        "pulumi": f"=={pins['PULUMI_PYTHON_SDK_VERSION']}",
        "pulumi-kubernetes": f"=={pins['PULUMI_KUBERNETES_VERSION']}",
    }


def test_the_long_description_is_the_packages_own_page_with_absolute_links(
    wheel: zipfile.ZipFile,
) -> None:
    page = (ROOT / "docs" / "package.md").read_text()
    described = _metadata(wheel).get_payload()
    assert isinstance(described, str) and described.strip() == page.strip()
    assert len(page.encode()) < 4000
    links = re.findall(r"\]\(([^)]+)\)", page)
    assert links and [link for link in links if not link.startswith("https://")] == []
