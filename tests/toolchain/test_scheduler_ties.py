"""The sandbox's kube-scheduler (toolchain/go/kubernetes/scheduler): the pinned release's, with
two score plugins that break ties between equally scored nodes by name, enabled by the
configuration sandbox/control_plane.py writes. The configuration must scale every score
plugin the release enables by default, or one left at its weight could be outweighed by the
tie-breakers and ties would no longer be all they decide."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from sandbox.control_plane import (
    DEFAULT_SCORE_WEIGHTS,
    TIE_BREAKERS,
    TIE_SCALE,
    scheduler_config,
)

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
SCHEDULER = ROOT / ".toolchain" / "bin" / "kube-scheduler"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {}}]
"""


def effective(tmp_path: Path, config: dict[str, object]) -> dict[str, object]:
    """The configuration the scheduler runs with, defaults filled in (--write-config-to)."""
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    given, out = tmp_path / "given.yaml", tmp_path / "out.yaml"
    given.write_text(json.dumps(config))
    done = subprocess.run(
        [str(SCHEDULER), f"--config={given}", f"--write-config-to={out}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = yaml.safe_load(out.read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_the_release_s_default_score_plugins_are_the_ones_scaled(tmp_path: Path):
    plain = effective(tmp_path, {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(tmp_path / "kubeconfig")},
    })  # fmt: skip
    enabled = plain["profiles"][0]["plugins"]["multiPoint"]["enabled"]  # type: ignore[index]
    weighted = {p["name"]: p["weight"] for p in enabled if p.get("weight")}
    assert weighted == DEFAULT_SCORE_WEIGHTS


def test_the_sandbox_s_scheduler_scores_with_the_tie_breakers(tmp_path: Path):
    ours = effective(tmp_path, scheduler_config(tmp_path / "kubeconfig"))
    score = ours["profiles"][0]["plugins"]["score"]["enabled"]  # type: ignore[index]
    weights = {p["name"]: p["weight"] for p in score}
    assert weights == {
        **{n: w * TIE_SCALE for n, w in DEFAULT_SCORE_WEIGHTS.items()},
        **TIE_BREAKERS,
    }
    # At most one point of the defaults' total outweighs everything the tie-breakers add.
    assert sum(100 * w for w in TIE_BREAKERS.values()) < TIE_SCALE


def test_the_tie_breakers_own_go_tests_pass():
    done = subprocess.run(
        ["go", "test", "-count=1", "./scheduler/"],
        cwd=ROOT / "toolchain" / "go" / "kubernetes",
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"},
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ok" in done.stdout
