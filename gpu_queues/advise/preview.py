"""`pulumi preview` of the proposal, where this checkout can run one: the stack's state in the
checkout's Pulumi backend (what `make promote` and the PR previews compare with) and its
cluster reachable. The proposal goes in with `--config-file` (a copy: the CLI may write an
encryption salt into it), through gpu_queues.tools.pulumi_cli like every other command. Where
it cannot run, the answer says why and the command to run where it can; never a pass.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpu_queues.tools import pulumi_cli

TIMEOUT = 600.0
UNREACHABLE = ("unreachable", "connection refused", "no such host", "kubeconfig", "dial tcp")
# a policy the proposal violates that fails the preview, as the CLI lists it
MANDATORY = re.compile(r"\[mandatory\]\s+([a-z0-9-]+)")


def command(stack: str, proposal: Path, pack_config: str) -> str:
    return (
        "toolchain/run pulumi preview --diff --policy-pack policies --policy-pack-config "
        f"{pack_config} --config-file {proposal} -s {stack}"
    )


def preview(stack: str, proposal: Path, pack_config: str, root: Path) -> tuple[bool | None, str]:
    """(True: passed, False: failed, None: not run) and the line advice.md shows."""
    how = f"`{command(stack, proposal, pack_config)}`"
    if not (root / ".toolchain" / "bin" / "pulumi").exists():
        return None, f"not run: the Pulumi CLI is not built here (`make toolchain`); run {how}"
    try:
        listed = pulumi_cli.run(
            ["stack", "ls", "--json"], cwd=root, root=root, check=False, timeout=120
        )
        names = {s.get("name") for s in json.loads(listed.stdout or "[]")}
    except (subprocess.TimeoutExpired, ValueError, AttributeError):
        names = set()
    if stack not in names:
        return None, (
            f"not run: this checkout's Pulumi backend has no stack `{stack}`, and a preview "
            "compares the proposal with the stack's state on its cluster (docs/promotion.md), "
            f"which the advisor cannot reach from here; where they are, run {how}"
        )
    with tempfile.TemporaryDirectory(prefix="advise-preview-") as tmp:
        copy = Path(tmp) / proposal.name
        shutil.copyfile(proposal, copy)
        args = ["preview", "--diff", "--policy-pack", "policies"]
        args += ["--policy-pack-config", pack_config, "--config-file", str(copy)]
        try:
            done = pulumi_cli.run(
                args, stack=stack, cwd=root, root=root, check=False, timeout=TIMEOUT
            )
        except subprocess.TimeoutExpired:
            return False, f"did not finish within {TIMEOUT:.0f}s (is the cluster reachable?)"
    if done.returncode == 0:
        return True, "passed, policy pack included"
    reason = failure(f"{done.stdout or ''}\n{done.stderr or ''}", done.returncode)
    if any(word in (done.stderr or "").lower() for word in UNREACHABLE):
        return (
            None,
            f"not run to the end: the stack's cluster cannot be reached from here ({reason})",
        )
    return False, f"failed: {reason}"


def failure(said: str, returncode: int) -> str:
    """Why a preview failed, from what the CLI printed: the mandatory policies the proposal
    violates, by name, else the CLI's first `error:` line, else its last line. (The CLI's
    last line after a policy failure is the policy host's own shutdown, not the reason.)"""
    names = list(dict.fromkeys(MANDATORY.findall(said)))
    errors = [line.strip() for line in said.splitlines() if line.strip().startswith("error:")]
    if names:
        return f"mandatory policy violated: {', '.join(names)}" + (
            f" ({errors[0]})" if errors else ""
        )
    if errors:
        return errors[0]
    lines = said.strip().splitlines()
    return lines[-1].strip() if lines else f"exit {returncode}"
