"""The what-if's sandbox engine, and the command with it: `make what-if` (and `gpuq what-if`
in a checkout) runs this, the library's command (gpu_queues/whatif/cli.py, whose --help says
it all) with the sandbox passed in, so `--engine sandbox` can replay a side here.

    python -m sandbox.replay.cli --stack staging --workloads workloads/staging [--base REV]
        [--engine fast|sandbox] [--out DIR] [--until 24h] [--quiet SECONDS] [--keep] ...

The fast engine, the default, needs no sandbox and no root (gpu_queues.whatif.fast). With
--engine sandbox each side gets a sandbox of its own, the rehearsal's
(sandbox.host.fresh_sandbox): started fresh, shaped like the side's stack file (its Kueue
release included; a sandbox already running in this checkout is stopped first) and stopped
afterwards (--keep leaves the last one up). The replay itself runs inside the sandbox's
network namespace (sandbox/replay/engine.py). That needs root, like the sandbox, and the
built toolchain (`make toolchain`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gpu_queues.whatif import cli as whatif
from gpu_queues.whatif.report import Run
from gpu_queues.whatif.sides import ReplaySide, WhatIfError
from sandbox import shape as fake_cluster
from sandbox.host import SandboxError, fresh_sandbox, in_sandbox
from sandbox.paths import STATE
from sandbox.rehearse.deploy import sandbox_stack_file

DEFAULT_OUT = STATE / "what-if"


def unbuilt_release(side: ReplaySide) -> str | None:
    """Why this machine cannot run the side's Kueue release (its controller binary is not
    linked: `make toolchain` builds only the pin, `make toolchain-all` every supported release),
    else None. Checked for every side before any sandbox is touched: a side is never
    replayed on another release than its own."""
    version = side.config.kueue.version
    missing = fake_cluster.kueue_binary_problem(version)
    if missing is None:
        return None
    return (
        f"{side.label} runs Kueue {version} (from {side.kueue_from}), which is not built here: "
        f"{missing}"
    )


def replay_side(side: ReplaySide, stack: str, workloads: Path, work: Path, args: Any) -> Run:
    """The side replayed in a fresh sandbox of its own, its stack file deployed there first."""
    folder = work / side.name
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "run.json"
    out.unlink(missing_ok=True)
    print(f"what-if: {side.label}: fresh sandbox, deploy, replay", file=sys.stderr, flush=True)
    # The rehearsal's fresh sandbox, shaped like the side's stack file (its Kueue release
    # included); the new side's is left up with --keep.
    try:
        with fresh_sandbox(stack, side.stack_file, keep=args.keep and side.name == "new"):
            # What the rehearsal deploys: the connection and (when unreadable here) the Kueue
            # manifest substituted; the sandbox has rendered its release by now.
            stack_file, substituted = sandbox_stack_file(
                stack, side.stack_file, side.config, out_dir=folder
            )
            command = [
                sys.executable, "-m", "sandbox.replay.engine", "--stack", stack,
                "--stack-file", str(stack_file), "--workloads", str(workloads), "--out", str(out),
                "--deploy", "--label", side.label,
            ]  # fmt: skip
            # The connection's substitution goes without saying; a substituted manifest does not.
            for note in [*side.notes, *(n for n in substituted if n.startswith("kueue."))]:
                command += ["--note", note]
            if args.until:
                command += ["--until", args.until]
            if args.quiet:
                command += ["--quiet", str(args.quiet)]
            if side.changes:
                changes = folder / "changes.json"
                changes.write_text(json.dumps([c.to_json() for c in side.changes], indent=1))
                command += ["--changes", str(changes)]
            command += ["--max-workloads", str(args.max_workloads)]
            command += ["--max-bytes", str(args.max_bytes)]
            code = in_sandbox(*command)
    except SandboxError as exc:
        raise WhatIfError(str(exc)) from None
    if code != 0:
        raise WhatIfError(f"the replay of {side.label} failed (exit {code}); its output is above")
    return Run.from_json(json.loads(out.read_text()))


class Sandbox:
    """The sandbox's engine, as the what-if command takes it (gpu_queues.whatif.cli)."""

    def unbuilt(self, side: ReplaySide) -> str | None:
        return unbuilt_release(side)

    def replay(self, side: ReplaySide, stack: str, workloads: Path, work: Path, args: Any) -> Run:
        return replay_side(side, stack, workloads, work, args)


def main(argv: list[str] | None = None) -> int:
    return whatif.main(argv, Sandbox(), DEFAULT_OUT, prog="python -m sandbox.replay.cli")


if __name__ == "__main__":
    sys.exit(main())
