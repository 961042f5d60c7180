"""Promote what was tested in one stack to the next: `make promote FROM=dev TO=staging`.

    python -m gpu_queues.tools.promote FROM TO [--dry-run] [--outputs FILE] [--allow-unset]

Each key under `gpu-queues:kueue` has a rule (RULES, and the table in docs/promotion.md):
  version                       travels, unset included (unset: both follow toolchain/pins.env)
  manifest.path/.url, .sha256   travel together when FROM and TO read their version's manifest
                                from the same place (the same path or url once the version in
                                it is taken out, e.g. .kueue/<version>/manifests.yaml, or both
                                the release URL); otherwise TO keeps its own
  manager.integrations, .waitForPodsReady, .fairSharing, .featureGates, .multiKueue
  (but its origin)              travel when FROM sets them; when FROM does not, TO keeps its
                                own (reported), or loses it with --allow-unset
  everything else               stays: the environment's own (install, controller, readiness
                                timeout, managedJobsNamespaceSelector, manageJobsWithoutQueueName,
                                multiKueue.origin;
                                outside the block: the kubeconfig, flavors, cohort, teams,
                                quotas, shared storage)
A promotion that would leave one of TO's own keys stale (a manifest path or url of its own
that names the old version, a checksum of the old release) refuses and names the key.

All or nothing: FROM must have deployed the Kueue version it promotes (its `kueueVersion`
output); the new text of TO's file is parsed back and must equal TO's old document with the
promoted keys changed and nothing else; the file is then replaced atomically. Only the
entries of the changed keys are rewritten, every other byte stays; the diff is printed.
Secrets (`secure:` values) are never decrypted and never copied between stacks.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import enum
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpu_queues import keys
from gpu_queues.config import yamledit
from gpu_queues.config.model import ConfigError, StackConfig
from gpu_queues.config.secure import find_secure, load_stack_config
from gpu_queues.config.stackfile import (
    ROOT,
    StackFileError,
    config_of,
    parse_document,
    read_text,
    stack_file_name,
)
from gpu_queues.tools import pulumi_cli

KUEUE_KEY = f"{keys.PROJECT}:{keys.KEY_KUEUE}"
POLICY_PACK = ROOT / "policies" / "PulumiPolicy.yaml"
MISSING = yamledit.REMOVE

Outputs = Mapping[str, Any]
FetchOutputs = Callable[[str], Outputs]
KeyPath = tuple[str, ...]


class Rule(enum.Enum):
    VERSION = "travels, unset included"
    CHECKSUM = "travels with the manifest it verifies"
    LOCATION = "stays, unless it is FROM's place for another version"
    TRAVELS = "travels when FROM sets it"
    STAYS = "stays: the environment's own"


@dataclass(frozen=True)
class KeyRule:
    path: KeyPath  # under gpu-queues:kueue
    rule: Rule
    why: str

    @property
    def dotted(self) -> str:
        return ".".join(("kueue", *self.path))


RULES: tuple[KeyRule, ...] = (
    KeyRule(
        ("version",),
        Rule.VERSION,
        "the release FROM deployed and tested; unset means toolchain/pins.env in both",
    ),
    KeyRule(
        ("manifest", "sha256"),
        Rule.CHECKSUM,
        "a property of the manifest bytes: copied when FROM and TO read their version's "
        "manifest from the same place",
    ),
    KeyRule(
        ("manifest", "url"),
        Rule.LOCATION,
        "an environment's mirror; a url that differs from FROM's only by the version follows it",
    ),
    KeyRule(
        ("manifest", "path"),
        Rule.LOCATION,
        "where an environment keeps its copy; .kueue/<version>/manifests.yaml follows the version",
    ),
    KeyRule(("install",), Rule.STAYS, "whether that cluster's Kueue is preinstalled"),
    KeyRule(("readinessTimeoutSeconds",), Rule.STAYS, "how long that cluster takes"),
    KeyRule(("controller",), Rule.STAYS, "replicas, resources and placement on its nodes"),
    KeyRule(("manager", "integrations"), Rule.TRAVELS, "which job kinds Kueue manages"),
    KeyRule(("manager", "waitForPodsReady"), Rule.TRAVELS, "admission behaviour"),
    KeyRule(("manager", "fairSharing"), Rule.TRAVELS, "preemption behaviour"),
    KeyRule(("manager", "featureGates"), Rule.TRAVELS, "Kueue features"),
    KeyRule(("manager", "multiKueue", "gcInterval"), Rule.TRAVELS, "MultiKueue's cleanup"),
    KeyRule(
        ("manager", "multiKueue", "workerLostTimeout"),
        Rule.TRAVELS,
        "how long work survives a lost worker",
    ),
    KeyRule(("manager", "multiKueue", "dispatcherName"), Rule.TRAVELS, "how workers are nominated"),
    KeyRule(
        ("manager", "multiKueue", "origin"),
        Rule.STAYS,
        "each manager's own mark on its workers' objects (docs/multikueue.md)",
    ),
    KeyRule(
        ("manager", "managedJobsNamespaceSelector"),
        Rule.STAYS,
        "lists that environment's team namespaces",
    ),
    KeyRule(
        ("manager", "manageJobsWithoutQueueName"),
        Rule.STAYS,
        "whether Kueue suspends that cluster's jobs without a queue (inside the selector "
        "above): depends on who else runs jobs there",
    ),
)


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
    kept: list[str] = field(default_factory=list)
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


# --- reading ------------------------------------------------------------------------------


def rule_for(path: KeyPath) -> KeyRule | None:
    """The rule of a key under gpu-queues:kueue (a rule on a mapping covers its keys)."""
    return next((r for r in RULES if path[: len(r.path)] == r.path), None)


def _unruled(kueue: Any, prefix: KeyPath = ()) -> Iterator[KeyPath]:
    """Keys under gpu-queues:kueue that no rule covers (a model field added since)."""
    if not isinstance(kueue, Mapping):
        return
    for key, value in kueue.items():
        path = (*prefix, str(key))
        if rule_for(path) is not None:
            continue
        if any(r.path[: len(path)] == path for r in RULES) and isinstance(value, Mapping):
            yield from _unruled(value, path)
        else:
            yield path


def _get(node: Any, path: KeyPath) -> Any:
    value = yamledit.get(node, path)
    return MISSING if value is None else value  # `key:` with no value is unset, as in the models


def _dotted(path: KeyPath) -> str:
    return ".".join(("kueue", *path))


def _show(value: Any) -> str:
    if value is MISSING:
        return "unset"
    if isinstance(value, Mapping | list):
        text = json.dumps(value, default=str, separators=(", ", ": "))
        return text if len(text) <= 60 else text[:57] + "..."
    return str(value)


@dataclass(frozen=True)
class _Stack:
    name: str
    text: str
    doc: dict[str, Any]
    config: StackConfig

    @property
    def kueue(self) -> Any:
        return (self.doc.get("config") or {}).get(KUEUE_KEY) or {}


def _read(stack: str, root: Path) -> _Stack:
    name = stack_file_name(stack)
    try:
        text = read_text(stack, root)
        doc = parse_document(text, name)
        config = load_stack_config(config_of(doc))
    except StackFileError as error:
        raise PromotionError(str(error)) from None
    except ConfigError as error:
        raise PromotionError(f"{name} is not a valid stack config:\n{error}") from None
    return _Stack(stack, text, doc, config)


def policy_pack_version(path: Path = POLICY_PACK) -> str | None:
    """The repo-wide policy pack version, printed for the record (not a per-stack value)."""
    try:
        doc = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    version = doc.get("version") if isinstance(doc, Mapping) else None
    return str(version) if version is not None else None


# --- deciding -----------------------------------------------------------------------------


def _location(stack: _Stack) -> tuple[str, str]:
    """Where a stack reads its manifest: ("path", p), ("url", u) or ("release", "")."""
    manifest = stack.config.kueue.manifest
    if manifest.path is not None:
        return "path", manifest.path
    if manifest.url is not None:
        return "url", manifest.url
    return "release", ""


def _described(kind: str, where: str) -> str:
    return "the release URL" if kind == "release" else f"{kind} {where}"


def _names(text: str, version: str) -> bool:
    return _place(text, version) != text


def _place(where: str, version: str) -> str:
    """A manifest location with its version taken out: the place, for any version."""
    return re.sub(rf"(?<![0-9A-Za-z]){re.escape(version)}(?![0-9A-Za-z])", "{version}", where)


def _manifest(src: _Stack, dst: _Stack, result: Plan, changes: dict[KeyPath, Any]) -> None:
    """The manifest's place (path or url) and checksum. They travel together when FROM and TO
    read their version's manifest from the same place (the same path or url once the version
    is taken out, or both the release URL): the checksum is a property of those bytes. Else
    TO keeps its own, and a version move that would leave them certainly stale refuses."""
    path = ("manifest", "sha256")
    new_version, old_version = src.config.kueue.version, dst.config.kueue.version
    s, t = _get(src.kueue, path), _get(dst.kueue, path)
    (src_kind, src_where), (kind, where) = _location(src), _location(dst)
    name = stack_file_name(dst.name)
    if src_kind == kind and _place(src_where, new_version) == _place(where, old_version):
        if kind != "release" and src_where != where:
            changes[("manifest", kind)] = src_where
        if s is not MISSING:
            if s != t:
                changes[path] = s
        elif t is not MISSING and (new_version != old_version or src_where != where):
            raise PromotionError(
                f"refusing to promote: {name} pins kueue.manifest.sha256 for the "
                f"{old_version} manifest and {src.name} pins none for {new_version}; pin the "
                f"{new_version} checksum in {stack_file_name(src.name)} (and deploy it there), "
                "then promote"
            )
        elif t is not MISSING:
            result.kept.append(
                f"kueue.manifest.sha256: {src.name} pins none; {dst.name} keeps its own"
            )
        return
    if new_version == old_version:
        if s != t and s is not MISSING:
            result.kept.append(
                f"kueue.manifest.sha256: not copied; {src.name}'s verifies "
                f"{_described(src_kind, src_where)}, {dst.name} reads {_described(kind, where)}"
            )
        return
    if kind in ("path", "url") and _names(where, old_version) and not _names(where, new_version):
        raise PromotionError(
            f"refusing to promote Kueue {new_version}: {name}'s kueue.manifest.{kind} "
            f"({where}) names {old_version}, and it is {dst.name}'s own place, not "
            f"{src.name}'s ({_described(src_kind, src_where)}), so promotion does not change "
            f"it. Re-pin {dst.name}'s manifest for {new_version} (its {kind} and sha256) "
            "first, then promote"
        )
    if kind == "release" and t is not MISSING:
        raise PromotionError(
            f"refusing to promote Kueue {new_version}: {name}'s kueue.manifest.sha256 verifies "
            f"the {old_version} release manifest, and {src.name} reads another manifest, so "
            f"its checksum does not apply. Pin {dst.name}'s checksum of the {new_version} "
            "release manifest first, then promote"
        )
    if kind in ("path", "url") and not _names(where, new_version):
        result.warnings.append(
            f"{dst.name} reads its manifest from {where} (its own kueue.manifest.{kind}): "
            f"make sure it is the {new_version} manifest"
            + (" and kueue.manifest.sha256 its checksum" if t is not MISSING else "")
        )


def _decide(src: _Stack, dst: _Stack, allow_unset: bool, result: Plan) -> dict[KeyPath, Any]:
    """The changes to TO's gpu-queues:kueue (path -> value or MISSING); refusals raise."""
    for stack in (src, dst):
        for path in _unruled(stack.kueue):
            raise PromotionError(
                f"{stack_file_name(stack.name)} sets {_dotted(path)}, which has no promotion "
                "rule: decide whether it travels (gpu_queues/tools/promote.py RULES, "
                "docs/promotion.md)"
            )
    changes: dict[KeyPath, Any] = {}
    for rule in RULES:
        s, t = _get(src.kueue, rule.path), _get(dst.kueue, rule.path)
        if rule.rule is Rule.VERSION:
            if s != t:
                changes[rule.path] = s
        elif rule.rule is Rule.CHECKSUM:
            _manifest(src, dst, result, changes)
        elif rule.rule is Rule.TRAVELS:
            if s is not MISSING and s != t:
                changes[rule.path] = s
            elif s is MISSING and t is not MISSING:
                if allow_unset:
                    changes[rule.path] = MISSING
                else:
                    result.kept.append(
                        f"{rule.dotted}: {src.name} does not set it; {dst.name} keeps its own "
                        "(--allow-unset removes it)"
                    )
    for path, value in changes.items():
        if any(True for _ in find_secure(value)):
            raise PromotionError(
                f"refusing to promote {_dotted(path)}: {src.name}'s value holds a secret, "
                "and secrets are encrypted with each stack's own key; set it in "
                f"{stack_file_name(dst.name)} with `pulumi config set --secret --path`"
            )
    return changes


# --- writing ------------------------------------------------------------------------------


def _set_plain(doc: dict[str, Any], path: KeyPath, value: Any) -> None:
    """The promoted change on a parsed document, as yamledit.edit makes it (keep=1)."""
    parents = [doc]
    node: Any = doc
    for part in path[:-1]:
        child = node.get(part) if isinstance(node, dict) else None
        if not isinstance(child, dict):
            if value is MISSING:
                return
            child = {}
            node[part] = child
        parents.append(child)
        node = child
    if value is MISSING:
        node.pop(path[-1], None)
        for depth in range(len(path) - 1, 1, -1):
            if parents[depth]:
                break
            del parents[depth - 1][path[depth - 1]]
    else:
        node[path[-1]] = copy.deepcopy(value)


def _normal(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "config": doc.get("config") or {}} if "config" in doc else doc


def _differences(a: Any, b: Any, path: KeyPath = ()) -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                yield ".".join((*path, str(key)))
            else:
                yield from _differences(a[key], b[key], (*path, str(key)))
    elif a != b or type(a) is not type(b):
        yield ".".join(path) or "(the whole document)"


def _verified(dst: _Stack, new_text: str, changes: Mapping[KeyPath, Any], src: _Stack) -> None:
    """Refuse unless `new_text` is TO's document with exactly the promoted changes."""
    name = stack_file_name(dst.name)
    expected = copy.deepcopy(dst.doc)
    for path, value in changes.items():
        promoted = value if value is MISSING else _get(src.kueue, path)
        _set_plain(expected, ("config", KUEUE_KEY, *path), promoted)
    try:
        actual = parse_document(new_text, name)
    except StackFileError as error:
        raise PromotionError(
            f"refusing to promote: the edited {name} would not be readable ({error}); "
            "nothing was written"
        ) from None
    wrong = list(_differences(_normal(expected), _normal(actual)))
    if wrong:
        shown = ", ".join(wrong[:5]) + (" ..." if len(wrong) > 5 else "")
        raise PromotionError(
            f"refusing to promote: editing {name} in place would also change or miss {shown}; "
            "nothing was written. Its layout there is one promotion cannot edit safely: "
            "make the gpu-queues:kueue block plain block-style YAML, or promote by hand"
        )
    try:
        load_stack_config(config_of(actual))
    except ConfigError as error:  # the models refuse the combination (e.g. a version pin)
        raise PromotionError(
            f"refusing to promote: {name} would not be a valid stack config:\n{error}"
        ) from None


def plan(source: str, target: str, root: Path = ROOT, allow_unset: bool = False) -> Plan:
    """Compute the promotion of `source` into `target` without writing anything."""
    if source == target:
        raise PromotionError("FROM and TO are the same stack")
    src, dst = _read(source, root), _read(target, root)
    result = Plan(source, target, dst.text, dst.text, src.config.kueue.version)
    changes = _decide(src, dst, allow_unset, result)
    if not changes:
        return result
    source_rt = YAML().load(src.text) or {}
    source_kueue = (source_rt.get("config") or {}).get(KUEUE_KEY) or {}
    edits = {
        ("config", KUEUE_KEY, *path): (
            value if value is MISSING else yamledit.get(source_kueue, path)
        )
        for path, value in changes.items()
    }
    try:
        new_text = yamledit.edit(dst.text, edits, keep=1)
    except yamledit.EditError as error:
        raise PromotionError(
            f"refusing to promote: cannot edit {stack_file_name(target)} in place: {error}; "
            "nothing was written"
        ) from None
    _verified(dst, new_text, changes, src)
    result.new_text = new_text
    for path, value in changes.items():
        before = _get(dst.kueue, path)
        result.changes.append(f"{_dotted(path)}: {_show(before)} -> {_show(value)}")
        if value is MISSING:
            result.warnings.append(
                f"{_dotted(path)} is removed from {target}: {source} does not set it"
            )
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
    """`pulumi stack output --json -s STACK` through toolchain/run (gpu_queues.tools.pulumi_cli)."""
    try:
        return pulumi_cli.stack_outputs(stack, cwd=root, root=root)
    except pulumi_cli.PulumiError as exc:
        said = (exc.stderr or "").strip() or (exc.stdout or "").strip()
        raise PromotionError(
            f"refusing to promote: cannot read the outputs of stack {stack!r} "
            f"(is it deployed?): {said}"
        ) from None
    except pulumi_cli.PulumiOutputError as exc:
        raise PromotionError(str(exc)) from None


def write_atomically(path: Path, old_text: str, new_text: str) -> None:
    """Replace `path` with `new_text` in one rename, keeping its mode; refuse if it no longer
    holds `old_text` (edited meanwhile). A crash leaves the old file or the new one. A
    symbolic link stays one: the file it points to is replaced."""
    path = path.resolve()
    try:
        current = path.read_bytes()
    except OSError as exc:
        raise PromotionError(f"cannot read {path} again: {exc}") from None
    if current != old_text.encode("utf-8"):
        raise PromotionError(f"{path.name} changed while promoting; nothing was written")
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new_text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
        write_atomically(root / stack_file_name(target), result.old_text, result.new_text)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_queues.tools.promote",
        description="Copy what travels from one stack file to the next (dev -> staging -> "
        "prod): the Kueue version, the manifest checksum, the manager's behaviour settings.",
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
        help="remove from TO the manager settings FROM does not set (default: TO keeps them)",
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
    for line in result.kept:
        print(f"kept: {line}")
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
