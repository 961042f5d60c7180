"""Which stacks a change touches, for the PR preview matrix.

    python -m gpu_queues.tools.changed_stacks --base origin/main [--head HEAD] [--json]
    git diff --name-only A B | python -m gpu_queues.tools.changed_stacks --stdin

A stack file touches its own stack, and the MultiKueue managers that name it as a worker
(a manager's check reads its workers' teams); the program, its dependencies, the policy pack
and the pins touch every deployable stack; anything else (docs, tests, sandbox) touches none.
Sandbox stacks (`local*`) are never previewed by CI: the e2e tests run them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from gpu_queues import keys
from gpu_queues.config.multikueue_checks import worker_stack_name
from gpu_queues.config.stackfile import (
    ROOT,
    StackFileError,
    list_stacks,
    ordered,
    read_config,
    resolve_commit,
    stack_of,
)
from gpu_queues.tools.policy_configs import policy_config

# Paths whose change can change what every stack deploys or how it is checked.
SHARED_FILES = frozenset(
    {
        "Pulumi.yaml",
        "__main__.py",
        "requirements.txt",
        "requirements.lock",
        "toolchain/pins.env",
    }
)
SHARED_DIRS = ("components/", "gpu_queues/", "policies/")


def is_deployable(stack: str) -> bool:
    return not stack.startswith("local")


def managers_of(
    stacks: Sequence[str], root: Path = ROOT, rev: str | None = None
) -> dict[str, set[str]]:
    """worker stack -> the MultiKueue manager stacks among `stacks` that name it."""
    found: dict[str, set[str]] = {}
    for stack in stacks:
        try:
            config = read_config(stack, root, rev)
        except StackFileError:
            continue  # its own preview reports the file
        mk = config.get(keys.KEY_MULTI_KUEUE)
        manager = mk.get("manager") if isinstance(mk, dict) else None
        workers = manager.get("workers") if isinstance(manager, dict) else None
        for worker in workers if isinstance(workers, list) else []:
            reference = worker.get("stack") if isinstance(worker, dict) else None
            name = worker_stack_name(reference) if isinstance(reference, str) else None
            if name is not None:
                found.setdefault(name, set()).add(stack)
    return found


def changed_stacks(
    paths: Iterable[str],
    stacks: Sequence[str],
    managers: Mapping[str, Collection[str]] | None = None,
) -> list[str]:
    """The deployable stacks among `stacks` (those that exist at the head) that `paths` touch;
    `managers` (managers_of) adds the managers of a touched worker stack."""
    deployable = [s for s in stacks if is_deployable(s)]
    touched: set[str] = set()
    for path in paths:
        path = path.strip()
        if not path:
            continue
        if path in SHARED_FILES or path.startswith(SHARED_DIRS):
            return ordered(deployable)
        stack = stack_of(path)
        if stack is None:
            continue
        if stack in deployable:
            touched.add(stack)
        touched |= {m for m in (managers or {}).get(stack, ()) if m in deployable}
    return ordered(touched)


def matrix(stacks: Sequence[str], root: Path = ROOT) -> list[dict[str, str]]:
    """GitHub Actions matrix entries: the stack and its policy pack config."""
    return [{"stack": s, "policyConfig": policy_config(s, root)} for s in stacks]


def diff_paths(root: Path, base: str, head: str | None) -> list[str]:
    """Files changed between the merge base of `base` and `head` (the work tree when None)."""
    base_commit = resolve_commit(root, base)
    head_commit = resolve_commit(root, head) if head else None
    args = (
        ["git", "diff", "--name-only", f"{base_commit}...{head_commit}"]
        if head_commit
        else ["git", "diff", "--name-only", base_commit]
    )
    result = subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StackFileError(f"{' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.splitlines()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_queues.tools.changed_stacks",
        description="Print the deployable stacks whose config or code a change touches.",
    )
    parser.add_argument("--base", help="git revision the change is compared with")
    parser.add_argument("--head", help="git revision of the change (default: the work tree)")
    parser.add_argument("--stdin", action="store_true", help="read changed paths from stdin")
    parser.add_argument("--json", action="store_true", help="print a JSON list of stack names")
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="print a JSON list of {stack, policyConfig} for a GitHub Actions matrix",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="project directory")
    args = parser.parse_args(argv)
    if bool(args.base) == bool(args.stdin):
        parser.error("give exactly one of --base REV or --stdin")
    try:
        paths = (
            sys.stdin.read().splitlines()
            if args.stdin
            else diff_paths(args.root, args.base, args.head)
        )
        stacks = list_stacks(args.root, args.head)
    except StackFileError as error:
        print(f"changed_stacks: {error}", file=sys.stderr)
        return 2
    found = changed_stacks(paths, stacks, managers_of(stacks, args.root, args.head))
    if args.matrix:
        print(json.dumps(matrix(found, args.root)))
    else:
        print(json.dumps(found) if args.json else "\n".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
