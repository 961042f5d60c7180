"""The wheels the e2e tests' own virtualenvs install from: gpu-queues in the library's
(tests/e2e/test_library.py), and the component package's and its Python SDK's programs
(tests/e2e/test_component_package.py). Those tests run inside the sandbox's network namespace,
which reaches no package index, so `make wheels` (`python -m sandbox.wheels`) downloads them
first, on the host: the package's dependencies at the versions of requirements.lock, its build
backend, and `wheel`. The download is skipped while those requirements and requirements.lock
are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from sandbox.paths import ROOT

# Outside the checkout when GPU_QUEUES_WHEELS says so (a cache kept across clones).
WHEELS = Path(os.environ.get("GPU_QUEUES_WHEELS") or ROOT / ".cache" / "wheels")
STAMP = WHEELS / ".stamp"
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"


def pip(python: Path, command: str, *args: str) -> list[str]:
    return [str(python), "-m", "pip", command, "-q", "--disable-pip-version-check", *args]


def _requires() -> tuple[list[str], list[str]]:
    """(the build backend, the package's dependencies), as pyproject.toml names them."""
    project = tomllib.loads(PYPROJECT.read_text())
    return project["build-system"]["requires"], project["project"]["dependencies"]


# Pulumi's Python language host upgrades pip, setuptools and wheel in a plugin's new virtualenv
# (the component package's, package/) before installing into it; offline, pip keeps the
# virtualenv's own pip and setuptools, and `wheel` must be here.
PLUGIN_VIRTUALENV = ["wheel==0.48.0"]


def build_requires() -> list[str]:
    return _requires()[0]


def digest() -> str:
    """What the wheels were downloaded for: the requirements and requirements.lock (not the
    rest of pyproject.toml, which configures tools)."""
    named = json.dumps([*_requires(), PLUGIN_VIRTUALENV]).encode()
    return hashlib.sha256(named + b"\0" + LOCK.read_bytes()).hexdigest()


def current() -> bool:
    return STAMP.is_file() and STAMP.read_text().strip() == digest()


def download() -> None:
    """Every wheel `install_command` needs, from the package index (host only)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    where = ["-d", str(WHEELS), "-c", str(LOCK)]
    subprocess.run(
        pip(
            Path(sys.executable),
            "download",
            *where,
            *build_requires(),
            *PLUGIN_VIRTUALENV,
            str(ROOT),
        ),
        check=True,
    )
    STAMP.write_text(digest() + "\n")


def install_command(python: Path) -> list[str]:
    """pip install of this checkout into the virtualenv of `python`, from the wheels alone
    (no index), at the locked versions; no bytecode compiled up front (halves the time)."""
    offline = ["--no-compile", "--no-index", "--find-links", str(WHEELS), "-c", str(LOCK)]
    return pip(python, "install", *offline, str(ROOT))


if __name__ == "__main__":
    if current():
        print(f"{WHEELS}: up to date")
    else:
        download()
        print(f"{WHEELS}: {len(list(WHEELS.glob('*.whl')))} wheels")
