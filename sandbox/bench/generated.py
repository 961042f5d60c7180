"""The scale benchmark's generated stacks (N teams in one cohort, one flavor) and where the
benchmark keeps its files."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_queues import keys
from sandbox.paths import ROOT, STATE

BENCH = STATE / "bench"
TRIVIAL_PROGRAM = ROOT / "sandbox" / "bench" / "scale_trivial.py"


def team_config(teams: int, prefix: str) -> dict[str, Any]:
    """Raw stack config (keys without the project prefix) of `teams` teams in one cohort."""
    flavor, cohort = f"{prefix}-gpu", f"{prefix}-pool"
    return {
        keys.KEY_KUEUE: {"install": False, "readinessTimeoutSeconds": 120},
        keys.KEY_FLAVORS: [
            {
                "name": flavor,
                "capacity": {"cpu": teams, "memory": f"{4 * teams}Gi", "nvidia.com/gpu": teams},
            }
        ],
        keys.KEY_COHORT: {"name": cohort},
        keys.KEY_TEAMS: [
            {
                "name": f"{prefix}-t{i:03d}",
                "namespace": f"{prefix}-t{i:03d}",
                "clusterQueue": f"{prefix}-t{i:03d}-cq",
                "localQueue": "queue",
                "cohort": cohort,
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": {
                                    "cpu": {"nominalQuota": 1},
                                    "memory": {"nominalQuota": "4Gi"},
                                    "nvidia.com/gpu": {"nominalQuota": 1, "borrowingLimit": 1},
                                },
                            }
                        ],
                    }
                ],
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
                "submitters": [{"kind": "User", "name": f"user-{prefix}-{i:03d}"}],
            }
            for i in range(teams)
        ],
    }


def stack_file(raw: dict[str, Any]) -> str:
    """A Pulumi.<stack>.yaml holding `raw` under the project's config namespace."""
    return yaml.safe_dump(
        {"config": {f"{keys.PROJECT}:{k}": v for k, v in raw.items()}}, sort_keys=False
    )


def objects_per_stack(teams: int) -> int:
    """Kubernetes objects of a generated stack: 7 per team, the flavor and the cohort."""
    return 7 * teams + 2
