"""gpu_queues.pins reads toolchain/pins.env; the default Kueue version comes from it."""

from __future__ import annotations

import re

import pytest

from gpu_queues.config.model import KueueConfig
from gpu_queues.pins import PINS_FILE, read_pins

pytestmark = pytest.mark.unit


def test_pins_file_parses(tmp_path):
    pins = tmp_path / "pins.env"
    pins.write_text("# comment\n\nKUEUE_VERSION=v9.9.9\nOTHER = 'x'\n")
    assert read_pins(pins) == {"KUEUE_VERSION": "v9.9.9", "OTHER": "x"}


def test_default_kueue_version_is_the_pin():
    # The pin read on its own, as make and the shell scripts source the file (not through
    # read_pins, which the default itself uses).
    (pinned,) = re.findall(r"^KUEUE_VERSION=(\S+)$", PINS_FILE.read_text(), re.M)
    assert re.fullmatch(r"v\d+\.\d+\.\d+", pinned)
    assert KueueConfig().version == pinned
