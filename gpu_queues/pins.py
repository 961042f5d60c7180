"""Reads toolchain/pins.env, the one file that holds every pinned version.

In a checkout that is toolchain/pins.env at the repo root. An installed copy of the package
has no repo: its build (pyproject.toml, hatch force-include) copies that same file into the
package as gpu_queues/pins.env, which is read instead. Nothing in the repo holds that copy.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_PINS_FILE = HERE.parent / "toolchain" / "pins.env"
PACKAGED_PINS_FILE = HERE / "pins.env"
PINS_FILE = REPO_PINS_FILE if REPO_PINS_FILE.is_file() else PACKAGED_PINS_FILE


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
