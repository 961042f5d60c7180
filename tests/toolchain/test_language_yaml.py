"""pulumi-yaml's language host, built from its pin (toolchain/go/pulumi-language-yaml): the real
CLI runs a Pulumi YAML program with it. What a YAML program adding the component package
(package/) still needs is in docs/library.md."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "toolchain" / "run"


def test_the_cli_previews_a_yaml_program_with_the_pinned_language_host(tmp_path: Path) -> None:
    host = ROOT / ".toolchain" / "bin" / "pulumi-language-yaml"
    assert host.is_file(), f"{host} is missing: run `make toolchain`"
    (tmp_path / "Pulumi.yaml").write_text(
        "name: yaml-smoke\nruntime: yaml\nvariables:\n  greeting: hello\n"
        "outputs:\n  said: ${greeting}\n"
    )
    env = {**os.environ, "GPU_QUEUES_PULUMI_DIR": str(tmp_path / "state")}

    def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(RUN), "pulumi", *args], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert pulumi("stack", "init", "dev").returncode == 0
    done = pulumi("preview", "--non-interactive")
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'said: "hello"' in done.stdout, done.stdout
    assert "from $PATH" not in done.stdout + done.stderr  # the toolchain's, not another
