"""What a rehearsal (and a what-if replay) deploys, and the deploy itself: the stack's own
file with only the sandbox's connection (and, when the stack's Kueue manifest cannot be read
here, the rendered release of its version) substituted, the policy pack config its deploy
workflow uses, and `pulumi up` through the real CLI (sandbox.pulumi_stack).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import yaml

from gpu_queues import keys, yamlio
from gpu_queues.config.model import StackConfig
from gpu_queues.files import read_text
from gpu_queues.release.module import rendered_path
from gpu_queues.tools.policy_configs import policy_config
from sandbox import pulumi_stack as stack
from sandbox.paths import ROOT, STATE

DEPLOY_WORKFLOW = ROOT / ".github" / "workflows" / "deploy.yml"
WORK = STATE / "rehearse"
POLICY_PACK = "policies"


def deploy_policy_config(stack_name: str, workflow: Path = DEPLOY_WORKFLOW) -> tuple[str, str]:
    """The policy pack config the stack's deploy uses, and where that comes from."""
    shown = workflow.relative_to(ROOT) if workflow.is_relative_to(ROOT) else workflow
    jobs = (yaml.safe_load(workflow.read_text()) or {}).get("jobs") or {}
    for job_name, job in jobs.items():
        given = (job or {}).get("with") or {}
        if given.get("stack") == stack_name and given.get("policy-config"):
            return str(given["policy-config"]), f"job {job_name} of {shown}"
    return (
        policy_config(stack_name),
        f"{shown} does not deploy it; the preview rule "
        "(policies/config/<stack>.json, else prod.json)",
    )


def sandbox_stack_file(
    stack_name: str,
    path: Path,
    cfg: StackConfig,
    out_dir: Path = WORK,
    rendered: Path | None = None,
) -> tuple[Path, list[str]]:
    """The stack file as the sandbox deploys it, and what was substituted: the connection
    (the sandbox's kubeconfig is added as a secret by sandbox.pulumi_stack), and the Kueue manifest
    only when the stack's cannot be read here. Everything else is the stack's own config."""
    doc = yamlio.load(read_text(path, path.name), path.name) or {}
    values = dict(doc.get("config") or {})
    notes = []
    connection = f"{keys.PROJECT}:{keys.KEY_KUBERNETES}"  # as the notes name it
    if values.pop(keys.stack_file_key(values, keys.KEY_KUBERNETES), None) is not None:
        notes.append(f"{connection} (kubeconfig, context) -> the sandbox's kubeconfig (secret)")
    else:
        notes.append(f"{connection}.kubeconfig (unset: $KUBECONFIG) -> the sandbox's (secret)")
    manifest = cfg.kueue.manifest
    if cfg.kueue.install and (manifest.path is None or not (ROOT / manifest.path).is_file()):
        rendered = rendered or rendered_path(cfg.kueue.version)
        was = manifest.path or cfg.kueue.manifest_url
        kueue_key = keys.stack_file_key(values, keys.KEY_KUEUE)
        kueue = dict(values.get(kueue_key) or {})
        where = rendered.relative_to(ROOT) if rendered.is_relative_to(ROOT) else rendered
        kueue["manifest"] = {
            "path": str(where),
            "sha256": hashlib.sha256(rendered.read_bytes()).hexdigest(),
        }
        values[kueue_key] = kueue
        notes.append(
            f"kueue.manifest {was} (cannot be read in the sandbox) -> "
            f"{where}, the same release rendered from the pinned module"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"Pulumi.{stack_name}.yaml"
    out.write_text(yaml.safe_dump({"config": values}, sort_keys=False))
    return out, notes


def tail(done: subprocess.CompletedProcess[str], lines: int = 40) -> str:
    """The last lines, after the first error lines (the cause scrolls out of a long tail)."""
    out = (done.stdout + done.stderr).splitlines()
    errors = list(dict.fromkeys(line.strip() for line in out if "error:" in line))[:6]
    return "\n".join([*errors, "...", *out[-lines:]] if errors else out[-lines:])


class DeployFailed(Exception):
    """`pulumi up` failed; the message has its exit status and what it said."""


def deploy(stack_name: str, source: Path, *options: str) -> None:
    """`pulumi up` of the stack file on the running sandbox, through the real CLI
    (sandbox/pulumi_stack.py, with the sandbox's kubeconfig as the connection secret). DeployFailed
    names the exit status, the first error lines and the tail of the output."""
    done = stack.pulumi(
        "up", "--yes", "--skip-preview", *options,
        stack=stack_name, source=source, check=False, capture=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise DeployFailed(
            f"pulumi up of stack {stack_name} ({source}) exited {done.returncode}:\n{tail(done)}"
        )
