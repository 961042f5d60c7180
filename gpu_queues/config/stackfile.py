"""Reads Pulumi.<stack>.yaml files from the work tree or from a git revision.

A stack file is read the way the Pulumi CLI reads it: YAML 1.2 (its parser, go-yaml v3,
takes `yes` and `on` as strings), one document, no duplicate keys. A value Pulumi wrote with
`pulumi config set --secret` is read as an opaque `gpu_queues.config.secure.Secure`, which the
tools never
decrypt and never print, wherever it appears.
"""

from __future__ import annotations

import copy
import functools
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from gpu_queues import keys, yamlio
from gpu_queues.config.model import ConfigError
from gpu_queues.config.secure import mark_secure, prepare
from gpu_queues.files import NotReadable, read_bytes

ROOT = Path(__file__).resolve().parents[2]

# The order changes are promoted in; other stacks (local sandboxes) come after, by name.
PROMOTION_ORDER = ("dev", "staging", "prod")
_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[^/]+)\.yaml$")


class StackFileError(Exception):
    """A stack file cannot be found or read; the message says which and why."""


_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]+$")


class _GoYamlConstructor(SafeConstructor):
    """YAML 1.2 as go-yaml v3 reads it: an integer with a leading zero is octal (Go's
    strconv.ParseInt with base 0), or a decimal float when it has an 8 or 9 (`08` is 8)."""

    def construct_yaml_int(self, node: Any) -> Any:
        text = str(self.construct_scalar(node))
        if _LEADING_ZERO.match(text):
            digits = text.replace("_", "")
            try:
                return int(digits, 8)
            except ValueError:
                return float(digits)
        return super().construct_yaml_int(node)


_GoYamlConstructor.add_constructor("tag:yaml.org,2002:int", _GoYamlConstructor.construct_yaml_int)


def _loader() -> YAML:
    # YAML 1.2 (`yes`, `on` are strings) like go-yaml v3; duplicate keys are an error there too.
    y = YAML(typ="safe", pure=True)
    y.Constructor = _GoYamlConstructor
    y.allow_duplicate_keys = False
    return y


@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> Any:
    # The pure-Python YAML 1.2 parser costs ~20 ms for a stack file of a few teams, and one
    # process may read the same text many times (the unit suite parsed the committed stack
    # files ~360 times: 2.6 s). Only the parse is shared: each caller gets a deep copy.
    return mark_secure(_loader().load(text))


# A stack file of a hundred teams is about 100 KB; the pure-Python parser takes ~5 s a MB.
STACK_BOUNDS = yamlio.Bounds(max_bytes=1_000_000)


def parse_yaml(text: str, where: str) -> Any:
    """The YAML document in `text`, with secure values marked; StackFileError naming `where`,
    also when the text is over the reading bounds (gpu_queues.yamlio), checked before it is
    parsed: an alias bomb under any key would be expanded while secure values are marked."""
    try:
        yamlio.check(text, where, STACK_BOUNDS, yaml12=True)
        return copy.deepcopy(_parsed(text))
    except yamlio.YamlRefused as exc:
        raise StackFileError(str(exc)) from None
    except MarkedYAMLError as exc:
        problem = " ".join(" ".join(str(p) for p in (exc.context, exc.problem) if p).split())
        # A duplicate key's message quotes both values: a `secure:` one is never shown.
        problem = re.sub(r' with value ".*?" \(original value: ".*"\)', "", problem)
        mark = exc.problem_mark or exc.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise StackFileError(f"{where} is not valid YAML: {problem}{at}") from None
    except YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise StackFileError(f"{where} is not valid YAML: {detail}") from None
    except RecursionError:
        raise StackFileError(f"{where} is nested too deeply to read") from None


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
        names = git_output(root, "ls-tree", "--name-only", resolve_commit(root, rev)).splitlines()
    return ordered({s for n in names if (s := stack_of(n))})


def git_output(root: Path, *args: str) -> str:
    """`git ARGS` in `root`, its output; StackFileError with git's message when it fails."""
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


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StackFileError(
            f"{where} is not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from None


def read_text(stack: str, root: Path = ROOT, rev: str | None = None) -> str:
    """The exact text of Pulumi.<stack>.yaml (line endings kept), in the work tree or at `rev`."""
    name = stack_file_name(stack)
    if rev is None:
        path = root / name
        if not path.exists():
            known = ", ".join(list_stacks(root)) or "none"
            raise StackFileError(f"unknown stack {stack!r}: no {name} in {root} (stacks: {known})")
        try:
            return _decode(read_bytes(path, name, STACK_BOUNDS.max_bytes), name)
        except NotReadable as exc:
            raise StackFileError(str(exc)) from None
    commit = resolve_commit(root, rev)
    result = subprocess.run(
        ["git", "show", f"{commit}:{name}"], cwd=root, capture_output=True, check=False
    )
    if result.returncode != 0:
        known = ", ".join(list_stacks(root, commit)) or "none"
        raise StackFileError(
            f"unknown stack {stack!r} at revision {rev!r}: no {name} there (stacks: {known})"
        )
    return _decode(result.stdout, f"{name} at {rev}")


def parse_document(text: str, where: str) -> dict[str, Any]:
    """The whole stack file (`config`, `encryptionsalt`, ...), secure values marked."""
    doc = parse_yaml(text, where)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise StackFileError(f"{where} must be a mapping with a `config:` mapping")
    config = doc.get("config")
    if config is not None and not isinstance(config, dict):
        raise StackFileError(f"{where} must be a mapping with a `config:` mapping")
    return doc


def config_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The `gpu-queues:*` keys of a parsed stack file's `config:`, without the project prefix.
    A key without a namespace is the project's own, as the Pulumi CLI reads it (`flavors` is
    `gpu-queues:flavors`; other namespaces, `kubernetes:context`, are not ours); both forms of
    one key are a StackFileError naming them (the CLI would take one and drop the other)."""
    prefix = f"{keys.PROJECT}:"
    config: dict[str, Any] = doc.get("config") or {}
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    for k, v in config.items():
        if not isinstance(k, str) or (":" in k and not k.startswith(prefix)):
            continue
        name = k.removeprefix(prefix)
        if name in written:
            raise StackFileError(
                f"config keys {written[name]!r} and {k!r} are one key ({prefix}{name}: a key "
                "without a namespace is the project's own); keep one of them"
            )
        out[name], written[name] = v, k
    return out


def parse_config(text: str, where: str) -> dict[str, Any]:
    """The `gpu-queues:*` keys of a stack file's `config:`, without the project prefix, ready
    for gpu_queues.config.model.load_config: a secret where the models take one (the kubeconfig)
    is a placeholder that validates as set; a secret anywhere else is a StackFileError naming
    the key (the tools would need its plain value). Secure values themselves: parse_document."""
    prepared, problems, _ = prepare(config_of(parse_document(text, where)))
    if problems:
        raise StackFileError(f"{where}: {ConfigError(problems)}")
    return prepared


def read_config(stack: str, root: Path = ROOT, rev: str | None = None) -> dict[str, Any]:
    where = stack_file_name(stack) + (f" at {rev}" if rev else "")
    return parse_config(read_text(stack, root, rev), where)
