"""Which stacks a pull request's preview replays a what-if for: those the change touches
(gpu_queues.tools.changed_stacks: the stack file, or the program and what every stack shares) or
whose
mix under workloads/<stack>/ it changes, and that have a mix at the head.

    python -m gpu_queues.tools.whatif_ci --base BASE_SHA --head HEAD_SHA     # JSON list of stack
    names
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from gpu_queues.config.stackfile import (
    ROOT,
    StackFileError,
    git_output,
    list_stacks,
    ordered,
    resolve_commit,
)
from gpu_queues.tools.changed_stacks import changed_stacks, diff_paths, is_deployable

WORKLOADS = "workloads"


def mix_stacks(root: Path, head: str | None) -> set[str]:
    """Stacks with a workloads/<stack>/ folder holding files, in the work tree or at `head`."""
    if head is None:
        return {p.parent.name for p in (root / WORKLOADS).glob("*/*") if p.is_file()}
    listed = git_output(
        root, "ls-tree", "-r", "--name-only", resolve_commit(root, head), "--", f"{WORKLOADS}/"
    )
    return {p.split("/")[1] for p in listed.splitlines() if p.count("/") >= 2}


def whatif_stacks(paths: Iterable[str], stacks: Sequence[str], with_mix: set[str]) -> list[str]:
    """Deployable stacks with a mix that the change touches, through their config or mix."""
    listed = list(paths)
    touched = set(changed_stacks(listed, stacks))
    for path in listed:
        parts = path.strip().split("/")
        if len(parts) >= 3 and parts[0] == WORKLOADS and parts[1] in stacks:
            touched.add(parts[1])
    return ordered({s for s in touched if s in with_mix and is_deployable(s)})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_queues.tools.whatif_ci", description=__doc__
    )
    parser.add_argument("--base", required=True, help="git revision the change is compared with")
    parser.add_argument("--head", help="git revision of the change (default: the work tree)")
    parser.add_argument("--root", type=Path, default=ROOT, help="project directory")
    args = parser.parse_args(argv)
    try:
        paths = diff_paths(args.root, args.base, args.head)
        stacks = list_stacks(args.root, args.head)
        found = whatif_stacks(paths, stacks, mix_stacks(args.root, args.head))
    except StackFileError as error:
        print(f"whatif_ci: {error}", file=sys.stderr)
        return 2
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
