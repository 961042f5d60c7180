"""Reads Pulumi.<stack>.yaml files from the work tree or from a git revision."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from components import keys

ROOT = Path(__file__).resolve().parent.parent

# The order changes are promoted in; other stacks (local sandboxes) come after, by name.
PROMOTION_ORDER = ("dev", "staging", "prod")
_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[^/]+)\.yaml$")


class StackFileError(Exception):
    """A stack file cannot be found or read; the message says which and why."""


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def stack_of(path: str) -> str | None:
    """`Pulumi.dev.yaml` -> `dev`; None for any other path (including Pulumi.yaml)."""
    match = _STACK_FILE.match(path)
    return match["stack"] if match else None


def ordered(stacks: set[str] | list[str]) -> list[str]:
    unique = set(stacks)
    first = [s for s in PROMOTION_ORDER if s in unique]
    return first + sorted(unique - set(PROMOTION_ORDER))


def list_stacks(root: Path = ROOT, rev: str | None = None) -> list[str]:
    """Stacks with a Pulumi.<stack>.yaml at the project root, in the work tree or at `rev`."""
    if rev is None:
        names = [p.name for p in root.glob("Pulumi.*.yaml")]
    else:
        names = _git(root, "ls-tree", "--name-only", resolve_commit(root, rev)).splitlines()
    return ordered({s for n in names if (s := stack_of(n))})


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StackFileError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def resolve_commit(root: Path, rev: str) -> str:
    """The commit id `rev` names; StackFileError when it names none."""
    result = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not result.stdout.strip():
        raise StackFileError(
            f"cannot read revision {rev!r}: it is not a commit in {root} "
            "(fetch it first, e.g. `git fetch origin main`, or check the spelling)"
        )
    return result.stdout.strip()


def read_text(stack: str, root: Path = ROOT, rev: str | None = None) -> str:
    """The text of Pulumi.<stack>.yaml in the work tree, or at git revision `rev`."""
    name = stack_file_name(stack)
    if rev is None:
        path = root / name
        if not path.is_file():
            known = ", ".join(list_stacks(root)) or "none"
            raise StackFileError(f"unknown stack {stack!r}: no {name} in {root} (stacks: {known})")
        return path.read_text(encoding="utf-8")
    commit = resolve_commit(root, rev)
    result = subprocess.run(
        ["git", "show", f"{commit}:{name}"], cwd=root, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        known = ", ".join(list_stacks(root, commit)) or "none"
        raise StackFileError(
            f"unknown stack {stack!r} at revision {rev!r}: no {name} there (stacks: {known})"
        )
    return result.stdout


def parse_config(text: str, where: str) -> dict[str, Any]:
    """The `gpu-queues:*` keys of a stack file's `config:`, without the project prefix."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise StackFileError(f"{where} is not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise StackFileError(f"{where} must be a mapping with a `config:` mapping")
    prefix = f"{keys.PROJECT}:"
    config: dict[str, Any] = doc.get("config") or {}
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}


def read_config(stack: str, root: Path = ROOT, rev: str | None = None) -> dict[str, Any]:
    where = stack_file_name(stack) + (f" at {rev}" if rev else "")
    return parse_config(read_text(stack, root, rev), where)
