"""toolchain/build.sh from several checkouts at once into one binary cache: each binary is
built once, under its lock, and renamed into place whole; every build succeeds."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_queues.pins import read_pins

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
CHECKOUTS = 3


def test_concurrent_builds_into_one_empty_cache_build_once_and_all_succeed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"  # GPU_QUEUES_CACHE: never the machine's shared cache here
    env = {**os.environ, "GPU_QUEUES_CACHE": str(cache)}
    checkouts = []
    for i in range(CHECKOUTS):
        checkout = tmp_path / f"checkout-{i}"
        shutil.copytree(ROOT / "toolchain", checkout / "toolchain")
        checkouts.append(checkout)
    # actionlint: the quickest binary to build once the Go build cache is warm.
    runs = [
        subprocess.Popen(
            ["bash", str(c / "toolchain" / "build.sh"), "actionlint"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for c in checkouts
    ]
    outputs = [(r.wait(timeout=900), *r.communicate()) for r in runs]
    for code, out, err in outputs:
        assert code == 0, out + err
    logs = "".join(err for _, _, err in outputs)
    assert logs.count("building actionlint") == 1, logs  # the others waited, then linked

    entries = sorted(p.name for p in (cache / "toolchain").iterdir())
    binaries = [n for n in entries if not n.endswith(".lock")]
    assert len(binaries) == 1 and binaries[0].startswith("actionlint-"), entries
    assert entries == [binaries[0], f"{binaries[0]}.lock"]  # no temporary left behind
    cached = cache / "toolchain" / binaries[0]
    version = read_pins()["ACTIONLINT_VERSION"]
    for c in checkouts:
        linked = c / ".toolchain" / "bin" / "actionlint"
        assert linked.stat().st_ino == cached.stat().st_ino
        done = subprocess.run([str(linked), "-version"], capture_output=True, text=True)
        assert version in done.stdout, done.stdout + done.stderr
