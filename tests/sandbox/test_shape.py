"""`make sandbox-up STACK=...` from the host: the fake cluster is shaped like the stack, a
running sandbox is never reused for another stack, and the shape goes when it goes down."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpu_queues.whatif.nodes import FLAVOR_ANNOTATION, SYSTEM_NODE
from sandbox.shape import SHAPE_FILE

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]
KUBECTL = str(ROOT / ".toolchain" / "bin" / "kubectl")


def sandbox(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*SANDBOX, *args], capture_output=True, text=True, timeout=300)
    assert (done.returncode == 0) == ok, done.stdout + done.stderr
    return done


def get(*args: str) -> dict:  # type: ignore[type-arg]
    out = sandbox("exec", KUBECTL, "get", *args, "-o", "json").stdout
    loaded: dict = json.loads(out)  # type: ignore[type-arg]
    return loaded


def test_the_sandbox_is_shaped_like_the_stack_and_never_reused_for_another() -> None:
    sandbox("down")
    try:
        sandbox("up")  # the default: local
        refused = sandbox("up", "staging", ok=False)
        assert "refusing to use it for stack 'staging'" in refused.stderr
        assert "shaped like stack 'local'" in refused.stderr
        assert "make sandbox-down" in refused.stderr
        assert "already up" in sandbox("up", "local").stdout
        sandbox("down")
        assert not SHAPE_FILE.exists()

        up = sandbox("up", "staging")
        assert "shaped like stack 'staging'" in up.stdout
        nodes = {n["metadata"]["name"]: n for n in get("nodes")["items"]}
        assert sorted(nodes) == ["a100-0", "h100-0", SYSTEM_NODE]
        h100 = nodes["h100-0"]
        assert h100["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert h100["metadata"]["annotations"][FLAVOR_ANNOTATION] == "h100"
        assert h100["spec"]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
        ]
        assert h100["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        volumes = sorted(v["metadata"]["name"] for v in get("pv")["items"])
        assert volumes == [
            "shared-volume-staging-nlp",
            "shared-volume-staging-research",
            "shared-volume-staging-research-eval",
            "shared-volume-staging-vision",
        ]
        assert json.loads(SHAPE_FILE.read_text())["stack"] == "staging"
        # A stack file elsewhere, under the same name, is another shape.
        refused = sandbox("up", "staging", str(ROOT / "Pulumi.prod.yaml"), ok=False)
        assert "shaped like stack 'staging'" in refused.stderr
    finally:
        sandbox("down")
    assert not SHAPE_FILE.exists()


def test_a_stack_that_cannot_shape_a_sandbox_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    sandbox("down")
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  gpu-queues:flavors: 3\n")
    refused = sandbox("up", "bad", str(bad), ok=False)
    assert "gpu-queues:flavors" in refused.stderr
    assert (
        sandbox("name").stdout.strip()
        not in subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, check=True
        ).stdout
    )
