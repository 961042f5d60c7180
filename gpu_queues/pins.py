"""Reads toolchain/pins.env, the one file that holds every pinned version."""

from __future__ import annotations

from pathlib import Path

PINS_FILE = Path(__file__).resolve().parent.parent / "toolchain" / "pins.env"


def read_pins(path: Path = PINS_FILE) -> dict[str, str]:
    """Return the KEY=VALUE pairs of a pins file; comments and blank lines are skipped."""
    pins: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        pins[key.strip()] = value.strip().strip('"').strip("'")
    return pins


def kueue_version() -> str:
    """The pinned Kueue release, the default for `kueue.version`."""
    return read_pins()["KUEUE_VERSION"]
