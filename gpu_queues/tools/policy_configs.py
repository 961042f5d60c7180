"""Which policy pack config a stack is checked with: one rule for the PR previews' matrix
(gpu_queues.tools.changed_stacks), the quota advisor's previews (gpu_queues.advise) and the
rehearsals' deploys (sandbox.rehearse.deploy). Its own module so that the advisor, which the
package ships, does not import the CI's helpers, which it does not."""

from __future__ import annotations

from pathlib import Path

from gpu_queues.config.stackfile import ROOT


def policy_config(stack: str, root: Path = ROOT) -> str:
    """The policy pack config a stack is checked with: its own file, else the strict prod one."""
    own = Path("policies") / "config" / f"{stack}.json"
    return str(own if (root / own).is_file() else Path("policies") / "config" / "prod.json")
