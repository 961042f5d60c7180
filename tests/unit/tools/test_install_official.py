""".github/scripts/install-official.sh, the CI installer of official releases, run against a
release mirror in a temporary folder laid out as GitHub and dl.k8s.io lay theirs out
(GPUQ_GITHUB_URL / GPUQ_K8S_RELEASE_URL point at it). The happy path packs our own pinned
builds as the release assets, so the real CLI installs the real provider; the refusals use
assets whose published checksum does not match (unit tests, no toolchain needed, except where
the pulumi CLI must be on PATH)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import tarfile
from pathlib import Path

import pytest

from gpu_queues.pins import read_pins

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / ".github" / "scripts" / "install-official.sh"
BIN = ROOT / ".toolchain" / "bin"
PROVIDER = ROOT / ".toolchain" / "plugins" / "pulumi-resource-kubernetes"
PINS = read_pins()
CLI = PINS["PULUMI_VERSION"].removeprefix("v")
PROVIDER_VERSION = PINS["PULUMI_KUBERNETES_VERSION"]
KUBERNETES = PINS["KUBERNETES_VERSION"]
GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}[platform.machine()]
PULUMI_ARCH = {"amd64": "x64", "arm64": "arm64"}[GOARCH]

CLI_DIR = f"gh/pulumi/pulumi/releases/download/v{CLI}"
CLI_ASSET = f"pulumi-v{CLI}-linux-{PULUMI_ARCH}.tar.gz"
CLI_SUMS = f"pulumi-{CLI}-checksums.txt"
PROVIDER_DIR = f"gh/pulumi/pulumi-kubernetes/releases/download/v{PROVIDER_VERSION}"
PROVIDER_ASSET = f"pulumi-resource-kubernetes-v{PROVIDER_VERSION}-linux-{GOARCH}.tar.gz"
PROVIDER_SUMS = f"pulumi-kubernetes_{PROVIDER_VERSION}_checksums.txt"
KUBECTL_DIR = f"k8s/{KUBERNETES}/bin/linux/{GOARCH}"


def _tarball(path: Path, members: dict[str, Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, source in members.items():
            tar.add(source, arcname=name)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sums(path: Path, *assets: Path) -> None:
    # Other platforms' lines first, as in a real list: the script must pick its own.
    lines = [f"{'0' * 64}  other-asset-darwin-arm64.tar.gz"]
    lines += [f"{_sha(a)}  {a.name}" for a in assets]
    path.write_text("\n".join(lines) + "\n")


def _run(
    mirror: Path, *args: str, home: Path, path_first: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{path_first}:{os.environ['PATH']}" if path_first else os.environ["PATH"],
        "HOME": str(home),
        "PULUMI_HOME": str(home / "pulumi"),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "GPUQ_GITHUB_URL": f"file://{mirror}/gh",
        "GPUQ_K8S_RELEASE_URL": f"file://{mirror}/k8s",
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Release assets made from the pinned builds in .toolchain, with their checksum lists."""
    for needed in (BIN / "pulumi", BIN / "kubectl", PROVIDER):
        assert needed.is_file(), f"{needed} is missing: run `make toolchain`"
    root = tmp_path_factory.mktemp("mirror")
    cli = root / CLI_DIR / CLI_ASSET
    _tarball(
        cli,
        {
            f"pulumi/{name}": BIN / name
            for name in ("pulumi", "pulumi-language-python", "pulumi-language-python-exec")
        },
    )
    _sums(root / CLI_DIR / CLI_SUMS, cli)
    provider = root / PROVIDER_DIR / PROVIDER_ASSET
    _tarball(provider, {"pulumi-resource-kubernetes": PROVIDER})
    _sums(root / PROVIDER_DIR / PROVIDER_SUMS, provider)
    kubectl = root / KUBECTL_DIR / "kubectl"
    kubectl.parent.mkdir(parents=True)
    kubectl.write_bytes((BIN / "kubectl").read_bytes())
    (root / KUBECTL_DIR / "kubectl.sha256").write_text(_sha(kubectl))
    return root


@pytest.mark.toolchain
def test_installs_the_pinned_cli_provider_and_kubectl(mirror: Path, tmp_path: Path) -> None:
    dest = tmp_path / "bin"
    # Files already there may be hard links into the build cache: they are replaced, the
    # cached files left alone.
    dest.mkdir()
    cached = tmp_path / "cached"
    cached.write_bytes(b"a cached build")
    os.link(cached, dest / "pulumi")
    os.link(cached, dest / "kubectl")
    done = _run(mirror, "pulumi", str(dest), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "checksum verified" in done.stderr
    assert cached.read_bytes() == b"a cached build"
    version = subprocess.run([str(dest / "pulumi"), "version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"v{CLI}"
    assert (dest / "pulumi-language-python").is_file()

    done = _run(mirror, "kubernetes-provider", home=tmp_path, path_first=dest)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [str(dest / "pulumi"), "plugin", "ls", "--json"],
        env={**os.environ, "PULUMI_HOME": str(tmp_path / "pulumi")},
        capture_output=True,
        text=True,
        check=True,
    )
    plugins = {(p["kind"], p["name"], p["version"]) for p in json.loads(listed.stdout)}
    assert ("resource", "kubernetes", PROVIDER_VERSION) in plugins

    done = _run(mirror, "kubectl", str(dest), home=tmp_path)
    assert done.returncode == 0, done.stderr
    client = subprocess.run(
        [str(dest / "kubectl"), "version", "--client"], capture_output=True, text=True
    )
    assert f"Client Version: {KUBERNETES}" in client.stdout
    assert cached.read_bytes() == b"a cached build"


def _tampered_mirror(root: Path, which: str) -> tuple[Path, list[str]]:
    """A mirror whose `which` asset does not match its published checksum."""
    good, bad = root / "good", root / "bad"
    good.write_bytes(b"what the release published")
    bad.write_bytes(b"what the download delivered")
    if which == "kubectl":
        (root / KUBECTL_DIR).mkdir(parents=True)
        (root / KUBECTL_DIR / "kubectl").write_bytes(bad.read_bytes())
        (root / KUBECTL_DIR / "kubectl.sha256").write_text(_sha(good) + "\n")
        return root, ["kubectl", str(root / "dest")]
    folder, asset, sums = {
        "pulumi": (CLI_DIR, CLI_ASSET, CLI_SUMS),
        "kubernetes-provider": (PROVIDER_DIR, PROVIDER_ASSET, PROVIDER_SUMS),
    }[which]
    (root / folder).mkdir(parents=True)
    (root / folder / sums).write_text(f"{_sha(good)}  {asset}\n")
    (root / folder / asset).write_bytes(bad.read_bytes())
    args = ["pulumi", str(root / "dest")] if which == "pulumi" else [which]
    return root, args


@pytest.mark.parametrize(
    "which",
    [
        pytest.param("pulumi", marks=pytest.mark.unit),
        # installing a provider needs the pulumi CLI on PATH, which is checked first
        pytest.param("kubernetes-provider", marks=pytest.mark.toolchain),
        pytest.param("kubectl", marks=pytest.mark.unit),
    ],
)
def test_refuses_a_download_that_does_not_match_its_checksum(tmp_path: Path, which: str) -> None:
    mirror, args = _tampered_mirror(tmp_path, which)
    done = _run(mirror, *args, home=tmp_path, path_first=BIN)
    assert done.returncode == 1
    assert "checksum mismatch" in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists(), "something was installed from a refused download"
    assert not (tmp_path / "pulumi" / "plugins").exists()


@pytest.mark.unit
def test_refuses_an_asset_its_checksum_list_does_not_name(tmp_path: Path) -> None:
    (tmp_path / CLI_DIR).mkdir(parents=True)
    (tmp_path / CLI_DIR / CLI_ASSET).write_bytes(b"anything")
    (tmp_path / CLI_DIR / CLI_SUMS).write_text(f"{'1' * 64}  pulumi-v{CLI}-windows-x64.zip\n")
    done = _run(tmp_path, "pulumi", str(tmp_path / "dest"), home=tmp_path)
    assert done.returncode == 1
    assert f"no valid SHA-256 published for {CLI_ASSET}" in done.stderr, done.stderr
    assert not (tmp_path / "dest").exists()


@pytest.mark.toolchain
def test_refuses_when_the_release_publishes_no_checksum_list(tmp_path: Path) -> None:
    (tmp_path / PROVIDER_DIR).mkdir(parents=True)
    (tmp_path / PROVIDER_DIR / PROVIDER_ASSET).write_bytes(b"x")
    done = _run(tmp_path, "kubernetes-provider", home=tmp_path, path_first=BIN)
    assert done.returncode == 1
    assert f"cannot download file://{tmp_path}/{PROVIDER_DIR}/{PROVIDER_SUMS}" in done.stderr


@pytest.mark.unit
def test_unknown_tool_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(tmp_path, "helm", home=tmp_path)
    assert done.returncode == 1 and "usage: install-official.sh" in done.stderr
