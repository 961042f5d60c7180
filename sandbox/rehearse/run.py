"""Rehearse a stack on a fresh sandbox shaped like its cluster, before it reaches the cluster.

From the host (`make rehearse STACK=staging [STACK_FILE=path]`):
  python -m sandbox.rehearse.run STACK [--stack-file FILE] [--down]
stops any running sandbox, starts one shaped like the stack (sandbox.shape), and runs
the rehearsal inside its network namespace (`run`, below); --down stops the sandbox after.

Inside the namespace (`python -m sandbox.rehearse.run run STACK [--stack-file FILE]`):
1. deploys the stack's own file with only the sandbox's kubeconfig (and, when the stack's
   Kueue manifest cannot be read here, the rendered release of its version) substituted, with
   the policy pack and the pack config its deploy workflow uses;
2. per team: a job within its nominal quota is admitted to the flavor Kueue must pick and its
   pods run on that flavor's nodes; a job needing more than the team may use is held with
   Kueue's message naming the resource, each flavor and the team's ceiling there; a single pod
   bigger than a node (when the quota is) is admitted but never scheduled; a job within quota
   sent through each of the team's other LocalQueues, in its namespace, is admitted and runs
   the same; each submitter may create Jobs in the team's namespaces only, and may not edit
   queues;
3. `pulumi preview --expect-no-changes`.
It prints one table and exits 1 when any row fails, with what the cluster said.
Jobs and expectations come from sandbox.rehearse.plan.

The rehearsal's parts: what it deploys and the deploy (sandbox/rehearse/deploy.py), its view of
the cluster and which Kueue release runs (kube.py), the Jobs it submits (jobs.py), the checks
per team (team_checks.py) and the table (results.py). The fresh sandbox shaped like a stack
(sandbox/host.py), the deploy and the check of the Kueue release are the what-if's too
(sandbox/replay/cli.py, sandbox/replay/engine.py): one code for both.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kubernetes import client

from gpu_queues.config.model import StackConfig
from sandbox import pulumi_stack as stack
from sandbox import shape as fake_cluster
from sandbox.host import SandboxError, fresh_sandbox, in_sandbox
from sandbox.rehearse.deploy import (
    POLICY_PACK,
    DeployFailed,
    deploy,
    deploy_policy_config,
    sandbox_stack_file,
    tail,
)
from sandbox.rehearse.kube import CheckFailed, RehearsalClient, running_kueue
from sandbox.rehearse.plan import plan
from sandbox.rehearse.results import Cell, Row, table
from sandbox.rehearse.team_checks import Rehearsal
from sandbox.shape import ShapeError

T = TypeVar("T")


@dataclass
class Timings:
    steps: dict[str, float] = field(default_factory=dict)

    def timed(self, what: str, fn: Callable[[], T]) -> T:
        started = time.monotonic()
        try:
            return fn()
        finally:
            self.steps[what] = time.monotonic() - started

    def line(self) -> str:
        return ", ".join(f"{k} {v:.1f}s" for k, v in self.steps.items())


def say(text: str) -> None:
    print(f"rehearse: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Prepared:
    """A stack ready to rehearse: its file, config, what the sandbox deploys and with which
    policy pack options."""

    stack: str
    path: Path
    cfg: StackConfig
    source: Path
    pack: list[str]


def prepare(stack_name: str, stack_file: Path | None) -> Prepared | int:
    """The stack read and the sandbox's stack file written; an exit status (2) when the stack
    cannot be read or the running sandbox is not shaped like it."""
    try:
        path = fake_cluster.stack_path(stack_name, stack_file)
        cfg = fake_cluster.load_stack(path)
    except ShapeError as e:
        print(f"rehearse: {e}", file=sys.stderr)
        return 2
    why = fake_cluster.mismatch(stack_name, path)
    if why:
        print(f"rehearse: the sandbox is not shaped like this stack: {why}", file=sys.stderr)
        return 2
    source, notes = sandbox_stack_file(stack_name, path, cfg)
    pack_config, chosen = deploy_policy_config(stack_name)
    say(f"stack {stack_name} from {path}")
    for n in notes:
        say(f"substituted {n}")
    say(f"policy pack {POLICY_PACK} with {pack_config} ({chosen})")
    pack = ["--policy-pack", POLICY_PACK, "--policy-pack-config", pack_config]
    return Prepared(stack_name, path, cfg, source, pack)


def kueue_cell(k: RehearsalClient, cfg: StackConfig) -> Cell:
    """Whether the stack's Kueue release plays the controller."""
    try:
        return Cell(True, running_kueue(k, cfg.kueue.version).describe())
    except CheckFailed as e:
        return Cell(False, f"not Kueue {cfg.kueue.version}", str(e))


def team_rows(cfg: StackConfig, k: RehearsalClient) -> list[Row]:
    """A row per team of the plan; a team whose checks broke gets a failed row, the others
    still run."""
    rehearsal = Rehearsal(cfg, k)
    rows: list[Row] = []
    for p in plan(cfg):
        say(f"team {p.team.name} ...")
        try:
            rows.append(rehearsal.team(p))
        except (CheckFailed, client.ApiException) as e:
            # Cleaning up after a check failed too: the row fails, the others still run.
            broken = Cell(False, "FAIL", f"{type(e).__name__}: {e}")
            t = p.team
            rows.append(Row(t.name, t.cluster_queue, "-", "-", broken, broken, None, broken))
    return rows


def print_result(
    s: Prepared,
    kueue_ran: Cell,
    rows: list[Row],
    preview: subprocess.CompletedProcess[str],
    timings: Timings,
) -> int:
    """The table, every failure with what the cluster said, the timings; the exit status."""
    print(f"\nRehearsal of stack {s.stack} ({s.path}) on the sandbox, {kueue_ran.text}:\n")
    print(table(rows))
    failed = 0
    if not kueue_ran.ok:
        failed += 1
        print(f"\nFAIL Kueue release: {kueue_ran.said}")
    for r in rows:
        for column, c in r.cells().items():
            if not c.ok:
                failed += 1
                print(f"\nFAIL team {r.team}, {column}: {c.said}")
    if preview.returncode != 0:
        failed += 1
        print(f"\nFAIL preview --expect-no-changes:\n{tail(preview)}")
    else:
        print("\npulumi preview --expect-no-changes: no changes")
    print(f"timings: {timings.line()}")
    if failed:
        print(f"\nrehearsal of {s.stack}: {failed} check(s) failed")
        return 1
    print(f"\nrehearsal of {s.stack}: every row passed")
    return 0


def run(stack_name: str, stack_file: Path | None) -> int:
    """The rehearsal inside the sandbox: deploy, the Kueue release, every team, a preview."""
    timings = Timings()
    s = prepare(stack_name, stack_file)
    if isinstance(s, int):
        return s
    say("pulumi up ...")
    try:
        timings.timed("pulumi up", lambda: deploy(stack_name, s.source, *s.pack))
    except DeployFailed as e:
        print(f"FAIL deploy: {e}")
        return 1
    k = RehearsalClient()
    kueue_ran = kueue_cell(k, s.cfg)
    say(kueue_ran.text)
    rows = timings.timed("team checks", lambda: team_rows(s.cfg, k))
    say("pulumi preview --expect-no-changes ...")
    preview = timings.timed(
        "preview",
        lambda: stack.pulumi(
            "preview", "--expect-no-changes", "--diff", *s.pack,
            stack=stack_name, source=s.source, check=False, capture=True,
        ),
    )  # fmt: skip
    return print_result(s, kueue_ran, rows, preview, timings)


def fresh(stack_name: str, stack_file: Path | None, down_after: bool) -> int:
    """Stop any sandbox, start one shaped like the stack, rehearse inside it."""
    extra = ["--stack-file", str(stack_file.resolve())] if stack_file else []
    try:
        with fresh_sandbox(stack_name, stack_file, keep=not down_after):
            return in_sandbox(
                sys.executable, "-m", "sandbox.rehearse.run", "run", stack_name, *extra
            )
    except SandboxError as e:
        say(str(e))
        return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.rehearse.run", description=__doc__)
    parser.add_argument("stack", nargs="+", help="[run] STACK")
    parser.add_argument("--stack-file", type=Path, help="default: Pulumi.<STACK>.yaml")
    parser.add_argument("--down", action="store_true", help="stop the sandbox afterwards")
    args = parser.parse_args(argv)
    if args.stack[0] == "run" and len(args.stack) == 2:
        return run(args.stack[1], args.stack_file)
    if len(args.stack) != 1:
        parser.error("give one stack name")
    return fresh(args.stack[0], args.stack_file, args.down)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
