"""Planning a promotion: read both stack files, decide by the rules
(gpu_queues/tools/promotion_rules.py) what changes in TO's `gpu-queues:kueue`, edit TO's text
in place, and verify the edit: the new text parsed back must equal TO's old document with the
promoted keys changed and nothing else, and be a valid stack config. Nothing is written here;
gpu_queues/tools/promote.py checks what FROM deployed and replaces the file.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpu_queues import keys
from gpu_queues.config import yamledit
from gpu_queues.config.model import ConfigError, StackConfig
from gpu_queues.config.secure import find_secure, load_stack_config, shown_diff
from gpu_queues.config.stackfile import (
    ROOT,
    StackFileError,
    config_of,
    parse_document,
    read_text,
    stack_file_name,
)
from gpu_queues.tools.promotion_rules import RULES, KeyPath, Rule, unruled


def _kueue_key(doc: Mapping[str, Any]) -> str:
    """The key `doc` holds the kueue block under (keys.stack_file_key: bare where the file
    writes it so)."""
    return keys.stack_file_key(doc.get("config"), keys.KEY_KUEUE)


MISSING = yamledit.REMOVE


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
    docs: list[Any] = field(default_factory=list, repr=False)
    """Both stack files parsed: which ciphertexts the diff must not show."""

    @property
    def noop(self) -> bool:
        return self.old_text == self.new_text

    def diff(self) -> str:
        """What the edit changes, as printed: no line of a secure value (shown_diff)."""
        return shown_diff(self.old_text, self.new_text, stack_file_name(self.target), self.docs)


# --- reading ------------------------------------------------------------------------------


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
        return (self.doc.get("config") or {}).get(_kueue_key(self.doc)) or {}


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
        for path in unruled(stack.kueue):
            raise PromotionError(
                f"{stack_file_name(stack.name)} sets {_dotted(path)}, which has no promotion "
                "rule: decide whether it travels (gpu_queues/tools/promotion_rules.py RULES, "
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
        _set_plain(expected, ("config", _kueue_key(dst.doc), *path), promoted)
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
    result.docs = [src.doc, dst.doc]
    changes = _decide(src, dst, allow_unset, result)
    if not changes:
        return result
    source_rt = YAML().load(src.text) or {}
    source_kueue = (source_rt.get("config") or {}).get(_kueue_key(src.doc)) or {}
    edits = {
        ("config", _kueue_key(dst.doc), *path): (
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
