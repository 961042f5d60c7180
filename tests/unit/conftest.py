"""Temporary projects with Pulumi.<stack>.yaml files (optionally in a git repo) for gpuq."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

Write = Callable[..., Path]


def stack_yaml(
    teams: list[dict[str, Any]],
    flavors: list[dict[str, Any]],
    kueue: dict[str, Any] | None = None,
    cohort: str | None = "pool",
) -> str:
    config: dict[str, Any] = {}
    if kueue is not None:
        config["gpu-queues:kueue"] = kueue
    config["gpu-queues:flavors"] = flavors
    if cohort:
        config["gpu-queues:cohort"] = {"name": cohort}
    config["gpu-queues:teams"] = teams
    return yaml.safe_dump({"config": config}, sort_keys=False)


def team(
    name: str, quotas: dict[str, dict[str, Any]], cohort: str | None = "pool"
) -> dict[str, Any]:
    """quotas: flavor -> {"gpu": nominal, "borrow": ..., "lend": ...}."""
    flavors = []
    for flavor, q in quotas.items():
        gpu: dict[str, Any] = {"nominalQuota": q["gpu"]}
        if "borrow" in q:
            gpu["borrowingLimit"] = q["borrow"]
        if "lend" in q:
            gpu["lendingLimit"] = q["lend"]
        flavors.append(
            {
                "name": flavor,
                "resources": {
                    "cpu": {"nominalQuota": 8},
                    "memory": {"nominalQuota": "64Gi"},
                    "nvidia.com/gpu": gpu,
                },
            }
        )
    out: dict[str, Any] = {
        "name": name,
        "namespace": f"team-{name}",
        "clusterQueue": f"{name}-cq",
        "localQueue": "gpu-queue",
        "resourceGroups": [
            {"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}
        ],
    }
    if cohort:
        out["cohort"] = cohort
    return out


def flavor(name: str, gpus: int) -> dict[str, Any]:
    return {"name": name, "capacity": {"cpu": 256, "memory": "2Ti", "nvidia.com/gpu": gpus}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def write(project: Path) -> Write:
    def _write(stack: str, text: str) -> Path:
        path = project / f"Pulumi.{stack}.yaml"
        path.write_text(text)
        return path

    return _write


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    return project
