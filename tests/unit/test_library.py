"""gpu_queues as a library other programs use (issue 22, item 2): the pin an installed copy
reads."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gpu_queues.pins import PINS_FILE, read_pins
from tests.conftest import ROOT

pytestmark = pytest.mark.unit


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
