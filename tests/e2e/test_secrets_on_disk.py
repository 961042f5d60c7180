"""The cluster's credentials stay off the machine's shared temporary directory.

pulumi-kubernetes writes the provider's kubeconfig (the client key too) to a new temporary
file on every run and never removes it. toolchain/run gives every run a private temporary
directory under the Pulumi state folder and removes it once the run has ended.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from sandbox import pulumi_stack as stack
from sandbox.paths import KUBECONFIG

pytestmark = pytest.mark.e2e

RUNS = stack.PULUMI_DIR / "tmp"


def _client_key() -> str:
    config = yaml.safe_load(KUBECONFIG.read_text())
    key: str = config["users"][0]["user"]["client-key-data"]
    return key


def _holding(directory: Path, secret: str) -> list[Path]:
    """Regular files directly in `directory` (small ones) whose text contains `secret`."""
    found = []
    for path in directory.iterdir():
        try:
            if path.is_file() and path.stat().st_size < 1 << 20 and secret in path.read_text():
                found.append(path)
        except (OSError, UnicodeDecodeError):  # another process's file, gone or binary
            continue
    return found


def test_a_run_keeps_the_kubeconfig_it_writes_private_and_the_next_run_removes_it(
    deployed: object,
) -> None:
    key = _client_key()
    before = set(RUNS.iterdir())
    stack.pulumi("preview", check=True, capture=True)
    runs = set(RUNS.iterdir()) - before
    # The provider did write the kubeconfig, in the run's own directory (mode 0700) ...
    written = [f for run in runs for f in _holding(run, key)]
    assert written, f"no run directory of {sorted(runs)} holds the provider's kubeconfig"
    assert all((f.parent.stat().st_mode & 0o777) == 0o700 for f in written)
    # ... never in the machine's temporary directory ...
    shared = Path(tempfile.gettempdir())
    assert not _holding(shared, key), f"the cluster's client key is in {shared}"
    # ... and the next run removes the directories of runs that have ended.
    stack._pulumi(["stack", "ls"], capture=True)
    assert not any(f.exists() for f in written)
