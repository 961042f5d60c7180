"""The what-if side of `make bench-kueue-harness` (sandbox/bench/kueue_harness.py): `make
what-if`'s own command (sandbox.replay.cli, fast engine) run whole, with the Run of its side
kept as it comes out of the replay and written to --run-file once the command is done (the
report has no per-workload timelines, which the harness's figures need).

    python -m sandbox.bench.kueue_harness_child --run-file FILE -- <sandbox.replay.cli args>

Prints `kept-run-seconds S` on stderr: the time writing the run file took, after the command,
which the bench takes off the process's wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from gpu_queues.whatif import cli as whatif
from gpu_queues.whatif.report import Run
from sandbox.replay import cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.bench.kueue_harness_child")
    parser.add_argument("--run-file", type=Path, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    kept: dict[str, Run] = {}
    replay_sides = whatif.replay_sides

    def keep(*a: Any, **k: Any) -> dict[str, Run]:
        runs = replay_sides(*a, **k)
        kept.update(runs)
        return runs

    whatif.replay_sides = keep  # the command's own lookup of its replay, so the path is whole
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    rc = cli.main(command)
    started = time.monotonic()
    if rc == 0:
        args.run_file.write_text(json.dumps(kept["new"].to_json()))
    print(f"kept-run-seconds {time.monotonic() - started:.3f}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
