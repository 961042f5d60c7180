"""The tools read stack files the way the real Pulumi CLI writes and reads them (toolchain)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.stackfile import StackFileError, parse_document
from gpu_queues.tools import promote, quota_diff
from tests.unit.config import pulumi_fixtures
from tests.unit.config.test_secure import check_cli_shapes

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".toolchain" / "bin"


@pytest.fixture
def cli_path(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (BIN / "pulumi").is_file(), "run `make toolchain` first"
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ['PATH']}")


def test_a_fresh_capture_has_the_shapes_the_unit_tests_rely_on(
    cli_path: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = pulumi_fixtures.capture()
    check_cli_shapes(files)
    # and the tools work on what the CLI just wrote, the README's secret step included
    shutil.copy(ROOT / "Pulumi.staging.yaml", tmp_path / "Pulumi.committed.yaml")
    (tmp_path / "Pulumi.staging.yaml").write_text(files["staging-kubeconfig"])
    (tmp_path / "Pulumi.dev.yaml").write_text(files["dev-kubeconfig"])
    assert quota_diff.main(["committed", "staging", "--root", str(tmp_path)]) == 0
    assert "No quota changes." in capsys.readouterr().out
    before = (tmp_path / "Pulumi.staging.yaml").read_text()
    plan = promote.plan("dev", "staging", tmp_path)
    assert plan.noop or "secure:" not in "".join(
        line for line in plan.diff().splitlines() if line.startswith(("+", "-"))
    )
    assert (tmp_path / "Pulumi.staging.yaml").read_text() == before


def _pulumi_config(tmp_path: Path, text: str) -> dict[str, Any]:
    """`pulumi config --json` of a stack file with `text` as its content."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    env = {
        **os.environ,
        "PULUMI_HOME": str(tmp_path / "home"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": "test",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }
    (tmp_path / "backend").mkdir(exist_ok=True)
    run = {"cwd": tmp_path, "env": env, "capture_output": True, "text": True}
    if not (tmp_path / "Pulumi.t.yaml").exists():
        subprocess.run(["pulumi", "stack", "init", "t"], check=True, **run)  # type: ignore[call-overload]
    salt = re.search(r"^encryptionsalt: (\S+)", (tmp_path / "Pulumi.t.yaml").read_text(), re.M)
    assert salt is not None
    (tmp_path / "Pulumi.t.yaml").write_text(f"encryptionsalt: {salt[1]}\n{text}")
    done = subprocess.run(["pulumi", "config", "--json", "-s", "t"], **run)  # type: ignore[call-overload]
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# Scalars whose reading differs between YAML 1.1 (PyYAML), YAML 1.2 and go-yaml v3.
SCALARS = (
    "010, 0o10, 0b11, 0x1F, +12, -010, 1_0, .5, 1., 1e3, -1E-2, 0, 00, 08, 0_7, 12:30, "
    "yes, No, on, OFF, y, n, true, True, FALSE, ~, null, '', 'x', \"8\", 12345, 1.10, v0.18.3"
)


def test_values_read_as_pulumi_reads_them(cli_path: None, tmp_path: Path) -> None:
    text = f"config:\n  gpu-queues:n:\n    a: [{SCALARS}]\n"
    theirs = _pulumi_config(tmp_path, text)["gpu-queues:n"]["objectValue"]["a"]
    ours = parse_document(text, "t")["config"]["gpu-queues:n"]["a"]
    assert len(ours) == len(theirs)
    for index, (mine, pulumis) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == pulumis and isinstance(mine, str) == isinstance(pulumis, str), SCALARS.split(
            ", "
        )[index]


def test_known_disagreements_are_refusals_or_unused(cli_path: None, tmp_path: Path) -> None:
    # A date: Pulumi passes Go's rendering of a time, we a date; no key takes a date, and both
    # refuse it where a name is expected.
    text = "config:\n  gpu-queues:n:\n    a: 2001-12-14\n"
    theirs = _pulumi_config(tmp_path, text)["gpu-queues:n"]["objectValue"]["a"]
    assert theirs == "2001-12-14 00:00:00 +0000 UTC"
    assert str(parse_document(text, "t")["config"]["gpu-queues:n"]["a"]) == "2001-12-14"
    # Pulumi reads only the first of two documents, and takes a tab after a colon; we refuse
    # both with the line, rather than guess.
    for text in ("config:\n  gpu-queues:a: 1\n---\nconfig: {}\n", "config:\n  gpu-queues:a:\t1\n"):
        assert _pulumi_config(tmp_path, text)["gpu-queues:a"]["value"] == "1"
        with pytest.raises(StackFileError, match="line"):
            parse_document(text, "t")
    # Duplicate keys: both refuse.
    with pytest.raises(StackFileError, match='duplicate key "gpu-queues:a"'):
        parse_document("config:\n  gpu-queues:a: 1\n  gpu-queues:a: 2\n", "t")
