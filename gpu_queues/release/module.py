"""The Kueue release manifest, rendered from the pinned Kueue module with the pinned kubectl.

One render for every user: the sandbox, `make kueue-manifest` (what CI runs before `pulumi
preview`) and `make pin-kueue` all call `render_release`. It lays Kueue's own release overlay
(image registry.k8s.io/kueue/kueue:<version>) over config/default of the sigs.k8s.io/kueue
module, which the go command authenticates against the version's wrapper
(toolchain/go/kueue/<version>/go.sum) and the Go checksum database, and runs the pinned
kubectl's kustomize on it. The output is the same bytes every time, so its sha256 is pinned
in the stack files (docs/kueue-manifest.md). It goes to .kueue/<version>/manifests.yaml:
generated from another project, never committed. Every supported release (a committed
wrapper, gpu_queues/kueue/versions.py) can be rendered, for upgrades and their previews.

    python -m gpu_queues.release.module [--offline] [--version vX.Y.Z]
        # render the pinned version (or another supported one)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from gpu_queues.files import OutsideProject, inside
from gpu_queues.pins import read_pins

ROOT = Path(__file__).resolve().parents[2]
MODULE = "sigs.k8s.io/kueue"
WRAPPER = Path("toolchain") / "go" / "kueue"
RENDER_DIR = ".kueue"
RELEASE_IMAGE = "registry.k8s.io/kueue/kueue"


class RenderError(Exception):
    """The manifest cannot be rendered; the message says what to run or fix."""


def rendered_relpath(version: str) -> str:
    """Where the render of `version` lives, relative to the project root (stack files use it)."""
    return f"{RENDER_DIR}/{version}/manifests.yaml"


def rendered_path(version: str, root: Path = ROOT) -> Path:
    return root / rendered_relpath(version)


def pinned_version(root: Path = ROOT) -> str:
    return read_pins(root / "toolchain" / "pins.env")["KUEUE_VERSION"]


def wrapper_dir(version: str, root: Path = ROOT) -> Path:
    """The committed wrapper module of `version` (toolchain/go/kueue/<version>/)."""
    return root / WRAPPER / version


def module_dir(version: str, root: Path = ROOT, offline: bool = False) -> Path:
    """The source of sigs.k8s.io/kueue `version` in the Go module cache, downloaded if needed.

    Only a version with a committed wrapper module (toolchain/go/kueue/<version>/): its go.sum
    records the module's hash, which the go command checks on download. Any other version
    is refused rather than fetched unauthenticated (`make pin-kueue VERSION=` adds one).
    """
    wrapper = wrapper_dir(version, root)
    if not (wrapper / "go.mod").is_file() or not (wrapper / "go.sum").is_file():
        raise RenderError(
            f"Kueue {version} has no wrapper module ({wrapper.relative_to(root)}/go.mod and "
            f"go.sum), so its source cannot be authenticated; add it with `make pin-kueue "
            f"VERSION={version}` (docs/upgrading.md)"
        )
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    if offline:  # inside the sandbox there is no network: the module must be in the cache
        env["GOPROXY"] = "off"
    try:
        done = subprocess.run(
            ["go", "mod", "download", "-json", MODULE],
            cwd=wrapper,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise RenderError("the go command is not on PATH; it fetches the Kueue module") from None
    try:
        info = json.loads(done.stdout or "{}")
    except ValueError:
        info = {}
    if done.returncode != 0 or "Error" in info or not info.get("Dir"):
        why = info.get("Error") or done.stderr.strip() or "no module directory reported"
        hint = " (run `make toolchain` outside the sandbox first)" if offline else ""
        raise RenderError(f"cannot get {MODULE} {version}: {why}{hint}")
    if info.get("Version") != version:
        raise RenderError(
            f"{wrapper.relative_to(root)}/go.mod requires {MODULE} {info.get('Version')}, not "
            f"{version}; regenerate it with `toolchain/gen-wrappers.sh kueue {version}`"
        )
    return Path(info["Dir"])


def release_overlay(version: str, module: Path) -> dict[str, object]:
    """Kueue's release build: config/default with the controller image set to the release."""
    base = yaml.safe_load((module / "config/components/manager/kustomization.yaml").read_text())
    image = base["images"][0]["newName"]
    return {
        "resources": ["../config/default"],
        "images": [{"name": image, "newName": RELEASE_IMAGE, "newTag": version}],
    }


def render(version: str, module: Path, kubectl: Path) -> bytes:
    """The release manifest of `version`, from the module source at `module`."""
    if not os.access(kubectl, os.X_OK):
        raise RenderError(
            f"{kubectl} is missing: build the pinned kubectl first (`make kueue-manifest` does)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # The module cache is read-only; a writable copy lets the directory be cleaned up.
        shutil.copytree(module / "config", work / "config", copy_function=shutil.copyfile)
        for folder, _, _ in os.walk(work):
            os.chmod(folder, 0o755)
        overlay = work / "release"
        overlay.mkdir()
        (overlay / "kustomization.yaml").write_text(
            yaml.safe_dump(release_overlay(version, module))
        )
        done = subprocess.run(
            [str(kubectl), "kustomize", str(overlay)], capture_output=True, check=False
        )
    if done.returncode != 0:
        raise RenderError(
            f"kubectl kustomize failed for Kueue {version}: {done.stderr.decode(errors='replace')}"
        )
    return done.stdout


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def render_release(
    version: str, root: Path = ROOT, kubectl: Path | None = None, offline: bool = False
) -> Path:
    """Render `version` into .kueue/<version>/manifests.yaml; returns the file's path."""
    kubectl = kubectl or root / ".toolchain" / "bin" / "kubectl"
    data = render(version, module_dir(version, root, offline), kubectl)
    path = rendered_path(version, root)
    try:
        inside(path, root)
    except OutsideProject as error:
        raise RenderError(str(error)) from None
    write_atomically(path, data)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_queues.release.module",
        description="Render a Kueue release manifest (default: the pinned one) into "
        ".kueue/<version>/.",
    )
    parser.add_argument("--offline", action="store_true", help="use the module cache only")
    parser.add_argument("--version", help="a supported release (default: toolchain/pins.env)")
    args = parser.parse_args(argv)
    version = args.version or pinned_version()
    try:
        path = render_release(version, offline=args.offline)
    except RenderError as error:
        print(f"kueue-manifest: {error}", file=sys.stderr)
        return 1
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"{path.relative_to(ROOT)}  sha256 {digest}  (Kueue {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
