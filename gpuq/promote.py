"""Promote what was tested in one stack to the next: `make promote FROM=dev TO=staging`.

    python -m gpuq.promote FROM TO [--dry-run] [--outputs FILE]

Copied from FROM's stack file to TO's (present or absent alike, so an unset value in FROM
means "follow the default" in TO as well):
  gpu-queues:kueue.version           the Kueue release (unset: toolchain/pins.env)
  gpu-queues:kueue.manifest.sha256   the checksum that goes with it
  gpu-queues:kueue.manager           Kueue's manager Configuration
Everything else is the environment's own and is left as it is: quotas, flavors and their
capacities, teams, cohort, shared storage, the Kubernetes connection, the manifest's url or
path (a mirror or an air-gapped copy), controller placement and size, readiness timeout and
whether Kueue is installed at all. The policy pack has no per-stack version: it is versioned
with the repository (policies/PulumiPolicy.yaml) and reaches a stack with the commit deployed.

FROM must have deployed the Kueue version it promotes: its `kueueVersion` stack output
(`pulumi stack output --json -s FROM`) must equal the version its stack file configures.
The target file is edited in place, keeping its comments, order and layout outside the
`gpu-queues:kueue` block; the unified diff is printed.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from components import keys
from components.config import ConfigError, load_config
from gpuq.stackfile import ROOT, StackFileError, parse_config, read_text, stack_file_name

KUEUE_KEY = f"{keys.PROJECT}:{keys.KEY_KUEUE}"
# Paths under gpu-queues:kueue that promotion copies.
PROMOTED: tuple[tuple[str, ...], ...] = (("version",), ("manifest", "sha256"), ("manager",))
# Dropping one of these from the target needs --allow-unset: a source that never set it has
# not tested the target's setting, it has tested Kueue's defaults.
KEEP_UNLESS_ALLOWED: tuple[tuple[str, ...], ...] = (("manager",),)
POLICY_PACK = ROOT / "policies" / "PulumiPolicy.yaml"

Outputs = Mapping[str, Any]
FetchOutputs = Callable[[str], Outputs]


class PromotionError(Exception):
    """Promotion refused or impossible; nothing was written."""


@dataclass
class Plan:
    """What a promotion would do; `new_text` is the target file after it."""

    source: str
    target: str
    old_text: str
    new_text: str
    version: str
    changes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def noop(self) -> bool:
        return self.old_text == self.new_text

    def diff(self) -> str:
        name = stack_file_name(self.target)
        return "".join(
            difflib.unified_diff(
                self.old_text.splitlines(keepends=True),
                self.new_text.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


# --- YAML editing that keeps the file's own layout ---------------------------------------

_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4))


def _yaml(layout: tuple[int, int, int]) -> YAML:
    y = YAML()
    y.preserve_quotes = True
    y.indent(mapping=layout[0], sequence=layout[1], offset=layout[2])
    y.width = 4096
    return y


def _dump(y: YAML, doc: Any) -> str:
    buf = io.StringIO()
    y.dump(doc, buf)
    return buf.getvalue()


def _closest_layout(text: str) -> tuple[int, int, int]:
    """The indentation style under which a round trip changes the fewest lines."""

    def distance(layout: tuple[int, int, int]) -> int:
        y = _yaml(layout)
        out = _dump(y, y.load(text)).splitlines()
        matcher = difflib.SequenceMatcher(a=text.splitlines(), b=out, autojunk=False)
        return len(out) - sum(b.size for b in matcher.get_matching_blocks())

    return min(_LAYOUTS, key=distance)


def _block(lines: list[str], key: str) -> tuple[int, int] | None:
    """[start, end) of the lines of top-level config key `key` (its line and its body)."""
    pattern = re.compile(rf"^(\s*)['\"]?{re.escape(key)}['\"]?\s*:")
    for i, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        indent = len(match[1])
        last = end = i + 1
        while end < len(lines):
            body = lines[end]
            stripped = body.strip()
            depth = len(body) - len(body.lstrip())
            if stripped:
                # a `- item` at the key's own indent is still its value (compact sequences)
                inside = depth > indent or (depth == indent and stripped.startswith("- "))
                if not inside:
                    break
                last = end + 1
            end += 1
        return i, last
    return None


def _splice(old_text: str, new_full: str, key: str) -> str:
    """`old_text` with the block of `key` taken from `new_full` (added, replaced or removed)."""
    old = old_text.splitlines(keepends=True)
    new = new_full.splitlines(keepends=True)
    old_span, new_span = _block(old, key), _block(new, key)
    block = new[new_span[0] : new_span[1]] if new_span else []
    if old_span:
        return "".join(old[: old_span[0]] + block + old[old_span[1] :])
    # New key: right after the `config:` line, where ruamel put it too.
    at = next(i for i, line in enumerate(old) if re.match(r"^config\s*:", line)) + 1
    return "".join(old[:at] + block + old[at:])


def _get(node: Any, path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _set(root: CommentedMap, path: Sequence[str], value: Any) -> None:
    """Set `path` to `value`, or remove it when value is None (pruning emptied parents)."""
    parents = [root]
    node = root
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, CommentedMap):
            if value is None:
                return
            child = CommentedMap()
            node[part] = child
        parents.append(child)
        node = child
    if value is None:
        node.pop(path[-1], None)
        for parent, part in zip(reversed(parents[:-1]), reversed(path[:-1]), strict=True):
            if len(parent[part]) == 0:
                del parent[part]
    else:
        node[path[-1]] = copy.deepcopy(value)


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, Mapping | list):
        return "{...} (see the diff)"
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# --- the promotion ------------------------------------------------------------------------


def policy_pack_version(path: Path = POLICY_PACK) -> str | None:
    """The repo-wide policy pack version, printed for the record (not a per-stack value)."""
    try:
        doc = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    version = doc.get("version") if isinstance(doc, Mapping) else None
    return str(version) if version is not None else None


def _validated(stack: str, text: str) -> str:
    """The effective Kueue version of a stack file; PromotionError when the file is invalid."""
    try:
        config = load_config(parse_config(text, stack_file_name(stack)))
    except (ConfigError, StackFileError) as error:
        raise PromotionError(
            f"{stack_file_name(stack)} is not a valid stack config:\n{error}"
        ) from None
    return config.kueue.version


def plan(source: str, target: str, root: Path = ROOT, allow_unset: bool = False) -> Plan:
    """Compute the promotion of `source` into `target` without writing anything."""
    if source == target:
        raise PromotionError("FROM and TO are the same stack")
    try:
        source_text = read_text(source, root)
        target_text = read_text(target, root)
    except StackFileError as error:
        raise PromotionError(str(error)) from None
    version = _validated(source, source_text)
    _validated(target, target_text)

    src_doc = YAML().load(source_text) or {}
    src_kueue = _get(src_doc, ("config", KUEUE_KEY)) or {}
    layout = _closest_layout(target_text)
    y = _yaml(layout)
    doc = y.load(target_text)
    if not isinstance(doc, CommentedMap):
        raise PromotionError(f"{stack_file_name(target)} must be a mapping")
    config = doc.setdefault("config", CommentedMap())
    if KUEUE_KEY not in config:
        config.insert(0, KUEUE_KEY, CommentedMap())
    kueue = config[KUEUE_KEY]

    result = Plan(source, target, target_text, target_text, version)
    for path in PROMOTED:
        before, after = _get(kueue, path), _get(src_kueue, path)
        if _plain(before) == _plain(after):
            continue
        _set(kueue, path, after)
        dotted = ".".join(("kueue", *path))
        result.changes.append(f"{dotted}: {_show(before)} -> {_show(after)}")
        if after is None and path in KEEP_UNLESS_ALLOWED and not allow_unset:
            raise PromotionError(
                f"{source} does not set {dotted} but {target} does: promoting would drop "
                f"{target}'s {dotted} and fall back to Kueue's defaults. Set it in "
                f"{stack_file_name(source)} (and deploy it there), or pass --allow-unset"
            )
        if after is None:
            result.warnings.append(
                f"{dotted} is removed from {target}: {source} does not set it (default applies)"
            )
    if not result.changes:
        return result
    if len(kueue) == 0:
        del config[KUEUE_KEY]

    old_version = _validated(target, target_text)
    url = _get(kueue, ("manifest", "url"))
    if isinstance(url, str) and old_version != version and old_version in url:
        result.warnings.append(
            f"{target}'s kueue.manifest.url still names {old_version}; point it at the "
            f"{version} mirror (the url is the environment's own and is not promoted)"
        )
    result.new_text = _splice(target_text, _dump(y, doc), KUEUE_KEY)
    _validated(target, result.new_text)
    return result


def check_deployed(source: str, version: str, outputs: Outputs) -> None:
    """Refuse unless `source` has deployed `version` (its kueueVersion output)."""
    deployed = outputs.get(keys.OUT_KUEUE_VERSION)
    if deployed is None:
        raise PromotionError(
            f"refusing to promote: stack {source!r} has no {keys.OUT_KUEUE_VERSION} output, so "
            f"Kueue {version} was never deployed there; run `pulumi up -s {source}` first"
        )
    if deployed != version:
        raise PromotionError(
            f"refusing to promote Kueue {version}: stack {source!r} has deployed {deployed} "
            f"(its {keys.OUT_KUEUE_VERSION} output); deploy {version} to {source} first "
            f"(`pulumi up -s {source}`), then promote"
        )


def fetch_outputs(stack: str, root: Path = ROOT) -> Outputs:
    """`pulumi stack output --json -s STACK` through toolchain/run."""
    result = subprocess.run(
        [
            str(root / "toolchain" / "run"),
            "pulumi",
            "--non-interactive",
            "stack",
            "output",
            "--json",
            "-s",
            stack,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise PromotionError(
            f"refusing to promote: cannot read the outputs of stack {stack!r} "
            f"(is it deployed?): {result.stderr.strip() or result.stdout.strip()}"
        )
    try:
        outputs = json.loads(result.stdout or "{}")
    except ValueError as exc:
        raise PromotionError(f"stack output of {stack!r} is not JSON: {exc}") from None
    if not isinstance(outputs, dict):
        raise PromotionError(f"stack output of {stack!r} is not a JSON object")
    return outputs


def promote(
    source: str,
    target: str,
    outputs: FetchOutputs | Outputs,
    root: Path = ROOT,
    dry_run: bool = False,
    allow_unset: bool = False,
) -> Plan:
    """Plan, check that `source` deployed what it promotes, then write the target file.

    `outputs` is the source's stack outputs, or a function fetching them (called only when
    there is something to promote)."""
    result = plan(source, target, root, allow_unset)
    if result.noop:
        return result
    fetched = outputs(source) if callable(outputs) else outputs
    check_deployed(source, result.version, fetched)
    if not dry_run:
        (root / stack_file_name(target)).write_text(result.new_text, encoding="utf-8")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpuq.promote",
        description="Copy the Kueue version, manifest checksum and manager configuration "
        "from one stack file to the next (dev -> staging -> prod).",
    )
    parser.add_argument("source", metavar="FROM", help="stack that deployed and tested it")
    parser.add_argument("target", metavar="TO", help="stack to promote to")
    parser.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    parser.add_argument(
        "--outputs",
        type=Path,
        help="FROM's stack outputs as JSON (default: `pulumi stack output --json -s FROM`)",
    )
    parser.add_argument(
        "--allow-unset",
        action="store_true",
        help="let a manager configuration that FROM does not set be removed from TO",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="project directory")
    args = parser.parse_args(argv)

    outputs: FetchOutputs | Outputs
    if args.outputs is not None:
        try:
            outputs = json.loads(args.outputs.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"promote: cannot read outputs file {args.outputs}: {exc}", file=sys.stderr)
            return 2
    else:

        def outputs(stack: str) -> Outputs:
            return fetch_outputs(stack, args.root)

    try:
        result = promote(
            args.source, args.target, outputs, args.root, args.dry_run, args.allow_unset
        )
    except PromotionError as error:
        print(f"promote: {error}", file=sys.stderr)
        return 1
    if result.noop:
        print(f"{args.target} already has what {args.source} promotes: nothing to do")
        return 0
    print(result.diff(), end="")
    for line in result.changes:
        print(f"  {line}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    pack = policy_pack_version()
    verb = "would promote" if args.dry_run else "promoted"
    print(
        f"{verb} {args.source} -> {args.target} (Kueue {result.version}; policy pack "
        f"{pack or 'unknown'} is repo-wide). Next: open a PR with {stack_file_name(args.target)}"
        f"; its preview shows `pulumi preview -s {args.target}`."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
