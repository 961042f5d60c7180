"""The one rule for reading YAML (and JSON) that a user or a cluster wrote: stack files, mixes,
manifests, kubeconfigs, a cluster's answers. Before anything is built, the text is scanned
as parser events, which costs about as much as reading it once and never expands an alias;
`YamlRefused` names the file, the line and the key when the text is

- larger than `Bounds.max_bytes` (characters),
- nested deeper than `Bounds.max_depth` (a 20,000-deep list was a RecursionError),
- an integer longer than `Bounds.max_int_digits` characters (Python refuses to convert one
  over 4,300 digits: it was a ValueError traceback), or
- a document whose aliases would expand it by more than `Bounds.alias_factor` times the nodes
  it writes (or `Bounds.alias_nodes` when it is small): a 1 KB alias bomb was 10^7 nodes,
  while a list of Jobs sharing one anchored template stays well within it.

Loading is then libyaml where PyYAML has it: the same safe constructor and resolver as
`yaml.safe_load`, about ten times faster. Text libyaml refuses is read again by the
pure-Python parser, so an error reads as it always did: the same problem, the same line.
Readers that keep a file's layout (ruamel.yaml: stack files, promote, pin) call `check`
before they load.

`load` and `load_all` skip the event scan for text that can break no bound but depth (`_plain`:
no anchor, alias or tag, no run of characters an over-long integer is made of), and hold the
nodes libyaml composes of it to the depth bound instead (`_shallow`); any other text, and any
such text that fails either way, takes the scan, whose refusal names the line and the key. The
scan of the 15,000 Jobs of Kueue's harness baseline was most of reading them."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import yaml

_CLoader: Any = getattr(yaml, "CSafeLoader", None)


class YamlRefused(ValueError):
    """The text is over one of the reading bounds; the message names the file, the line and
    the key, never a value (a kubeconfig's values are keys and tokens)."""


@dataclass(frozen=True)
class Bounds:
    """How much a reader takes. The defaults hold every file the project ships and every
    object Kubernetes stores (an object is at most 1.5 MB in etcd; the release's CRDs nest
    about 30 deep)."""

    max_bytes: int = 16_000_000
    max_depth: int = 100
    max_int_digits: int = 100
    alias_nodes: int = 10_000
    alias_factor: int = 10


DEFAULT: Final = Bounds()

# An integer as YAML 1.1 (PyYAML) or 1.2 (ruamel.yaml) may resolve a plain scalar: decimal,
# 0x/0o/0b, sexagesimal, with underscores. Only long ones are checked, so this is cheap.
_INTEGER = re.compile(r"[-+]?(0[xob])?[0-9a-f_:]+", re.IGNORECASE)
_INT_TAG = "tag:yaml.org,2002:int"


@dataclass
class _Open:
    """A mapping or sequence being read: where its next item goes, and its size so far."""

    mapping: bool
    anchor: str | None
    key: str = "?"
    index: int = -1
    at_key: bool = True
    nodes: int = 1


def _path(stack: list[_Open]) -> str:
    """`spec.template.spec.containers[0].image`; a deep one as its first and last keys."""
    parts: list[str] = []
    for frame in stack:
        if frame.mapping:
            parts.append(("." if parts else "") + frame.key[:60])
        elif frame.index >= 0:
            parts.append(f"[{frame.index}]")
    if len(parts) > 10:
        parts = [*parts[:6], "...", *parts[-3:]]
    return "".join(parts)


class _Scan:
    """The bounds over one stream of events; `refuse` builds the error at an event."""

    def __init__(self, where: str, bounds: Bounds) -> None:
        self.where, self.bounds = where, bounds
        self.stack: list[_Open] = []
        self.anchors: dict[str, int] = {}
        self.written = self.extra = 0
        self.first_big: tuple[int, str] | None = None

    def refuse(self, line: int, path: str, problem: str) -> YamlRefused:
        at = f" (key {path})" if path else ""
        return YamlRefused(f"{self.where}: line {line}{at}: {problem}")

    def _place(self, event: Any) -> tuple[int, str]:
        mark = getattr(event, "start_mark", None)
        return (mark.line + 1 if mark is not None else 0), _path(self.stack)

    def _node(self, event: Any, size: int) -> None:
        """A node starts (or an alias or scalar is read whole) in the innermost collection."""
        self.written += 1
        if self.stack:
            top = self.stack[-1]
            if top.mapping:
                if top.at_key:
                    value = getattr(event, "value", None)
                    top.key = value if isinstance(value, str) and len(value) < 200 else "?"
                top.at_key = not top.at_key
            else:
                top.index += 1
            top.nodes += size

    def event(self, event: Any) -> None:
        kind = type(event).__name__
        if kind == "ScalarEvent":
            self._scalar(event)
        elif kind in ("MappingStartEvent", "SequenceStartEvent"):
            self._node(event, 0)
            if len(self.stack) >= self.bounds.max_depth:
                line, path = self._place(event)
                raise self.refuse(line, path, f"nested deeper than {self.bounds.max_depth} levels")
            anchor = getattr(event, "anchor", None)
            self.stack.append(_Open(kind == "MappingStartEvent", anchor))
        elif kind in ("MappingEndEvent", "SequenceEndEvent"):
            frame = self.stack.pop()
            if frame.anchor:
                self.anchors[frame.anchor] = frame.nodes
            if self.stack:
                self.stack[-1].nodes += frame.nodes
        elif kind == "AliasEvent":
            self._alias(event)
        elif kind == "DocumentEndEvent":
            self._document_end()

    def _scalar(self, event: Any) -> None:
        self._node(event, 1)
        value, tag = event.value, str(event.tag or "")
        limit = self.bounds.max_int_digits
        if len(value) > limit and (
            tag == _INT_TAG or (event.implicit[0] and _INTEGER.fullmatch(value))
        ):
            line, path = self._place(event)
            raise self.refuse(
                line, path, f"an integer of {len(value):,} characters (at most {limit})"
            )
        if event.anchor:
            self.anchors[event.anchor] = 1

    def _alias(self, event: Any) -> None:
        size = self.anchors.get(event.anchor, 1)
        self._node(event, size)
        self.extra += size
        if self.first_big is None and self.extra > self.bounds.alias_nodes:
            self.first_big = self._place(event)

    def _document_end(self) -> None:
        allowed = max(self.bounds.alias_nodes, self.bounds.alias_factor * self.written)
        if self.extra > allowed and self.first_big is not None:
            line, path = self.first_big
            size = (
                f"{self.extra:,}" if self.extra < 10**15 else f"about 10^{len(str(self.extra)) - 1}"
            )
            raise self.refuse(
                line,
                path,
                f"its aliases would expand the document by {size} nodes, over the "
                f"{allowed:,} it may ({self.bounds.alias_factor} times the nodes it writes, "
                f"or {self.bounds.alias_nodes:,})",
            )
        self.anchors.clear()
        self.written = self.extra = 0
        self.first_big = None


def _scan(events: Iterable[Any], where: str, bounds: Bounds) -> None:
    scan = _Scan(where, bounds)
    for event in events:
        scan.event(event)


def _yaml12_events(text: str) -> Iterator[Any]:
    from ruamel.yaml import YAML

    return iter(YAML(typ="safe", pure=True).parse(text))


def check(text: str | bytes, where: str, bounds: Bounds = DEFAULT, yaml12: bool = False) -> None:
    """YamlRefused when `text` is over `bounds`. Text that does not parse is left to the
    reader, whose own error names the problem; `yaml12`: the reader is ruamel.yaml (YAML 1.2),
    whose parser takes some text PyYAML's does not, so that text is scanned with it."""
    if len(text) > bounds.max_bytes:
        raise YamlRefused(
            f"{where}: {len(text):,} characters, over the limit of {bounds.max_bytes:,}"
        )
    try:
        _scan(yaml.parse(text, Loader=_CLoader or yaml.SafeLoader), where, bounds)
        return
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own bound, at 1,000 levels
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark is not None else 0
            raise YamlRefused(
                f"{where}: line {line}: nested deeper than {bounds.max_depth} levels"
            ) from None
    from ruamel.yaml.error import YAMLError as Yaml12Error

    try:
        if yaml12:
            _scan(
                _yaml12_events(str(text) if isinstance(text, str) else text.decode()), where, bounds
            )
        else:
            _scan(yaml.parse(text, Loader=yaml.SafeLoader), where, bounds)
    except (yaml.YAMLError, Yaml12Error, UnicodeDecodeError):
        pass


def _plain(text: str | bytes, bounds: Bounds) -> bool:
    """Whether `text` holds nothing but depth that the scan could refuse: no anchor (`&`),
    alias (`*`) or explicit tag (`!`: a tagged quoted scalar may be an integer written with
    escapes) anywhere, not even inside a string, and no run of more than
    `bounds.max_int_digits` of the characters `_INTEGER` takes (a plain scalar's value is its
    text, so an over-long integer is such a run). Bytes are left to the scan."""
    if not isinstance(text, str) or "&" in text or "*" in text or "!" in text:
        return False
    return _long_run(bounds.max_int_digits).search(text) is None


@functools.lru_cache(maxsize=16)
def _long_run(digits: int) -> re.Pattern[str]:
    """A run of more than `digits` of the characters an integer (YAML 1.1's sexagesimal and
    hex included) is written with."""
    return re.compile(f"[-+0-9a-fox_:]{{{digits + 1},}}", re.IGNORECASE)


def _shallow(node: Any, bounds: Bounds) -> bool:
    """Whether no mapping or sequence of the document `node` (libyaml's composed nodes, the
    events' own structure: a key a later duplicate replaces is still there; `_plain` text has no
    aliases to share a node) is nested deeper than `bounds.max_depth`, the scan's bound (the
    document's node is at depth 1); a deeper one sends the text to the scan, which names it."""
    todo: list[tuple[Any, int]] = [(node, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > bounds.max_depth:
            return False
        if isinstance(item, yaml.MappingNode):
            children = [n for pair in item.value for n in pair]
        else:
            children = item.value
        todo.extend((c, depth + 1) for c in children if isinstance(c, yaml.CollectionNode))
    return True


def _fast(text: str | bytes, bounds: Bounds, every: bool) -> list[Any] | None:
    """Every document (`every`) or the one of `_plain` text by libyaml, None when the text is
    not plain, when libyaml refuses it, or when a document is deeper than `_shallow` allows:
    the caller then scans and loads as the rule says. Each document's nodes are held to the
    depth bound before they are built into values."""
    if _CLoader is None or len(text) > bounds.max_bytes or not _plain(text, bounds):
        return None
    loader = _CLoader(text)
    try:
        # One document at a time, as yaml.load_all: composing them all first keeps every node
        # alive at once, and the collector's passes over them took longer than the scan.
        documents: list[Any] = []
        while loader.check_node() if every else not documents:
            node = loader.get_node() if every else loader.get_single_node()
            if node is not None and not _shallow(node, bounds):
                return None
            documents.append(None if node is None else loader.construct_document(node))
        return documents
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    finally:
        loader.dispose()


def load(text: str | bytes, where: str, bounds: Bounds = DEFAULT) -> Any:
    """yaml.safe_load(text), once `text` is within `bounds` (YamlRefused)."""
    fast = _fast(text, bounds, every=False)
    if fast is not None:
        return fast[0]
    check(text, where, bounds)
    if _CLoader is not None:
        try:
            return yaml.load(text, Loader=_CLoader)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def load_all(text: str | bytes, where: str, bounds: Bounds = DEFAULT) -> list[Any]:
    """list(yaml.safe_load_all(text)), once `text` is within `bounds` (YamlRefused)."""
    fast = _fast(text, bounds, every=True)
    if fast is not None:
        return fast
    check(text, where, bounds)
    if _CLoader is not None:
        try:
            return list(yaml.load_all(text, Loader=_CLoader))
        except yaml.YAMLError:
            pass
    return list(yaml.safe_load_all(text))


def _int(where: str, bounds: Bounds) -> Any:
    def parse(digits: str) -> int:
        if len(digits) > bounds.max_int_digits:
            raise YamlRefused(
                f"{where}: an integer of {len(digits):,} characters "
                f"(at most {bounds.max_int_digits})"
            )
        return int(digits)

    return parse


def _depth(value: Any, where: str, bounds: Bounds) -> None:
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        if children and depth >= bounds.max_depth:
            raise YamlRefused(f"{where}: nested deeper than {bounds.max_depth} levels")
        todo.extend((child, depth + 1) for child in children)


def load_json(text: str | bytes, where: str, bounds: Bounds = DEFAULT) -> Any:
    """json.loads(text) under the same bounds (JSON has no aliases); a text that is not JSON
    raises json.JSONDecodeError as before."""
    if len(text) > bounds.max_bytes:
        raise YamlRefused(
            f"{where}: {len(text):,} characters, over the limit of {bounds.max_bytes:,}"
        )
    try:
        value = json.loads(text, parse_int=_int(where, bounds))
    except RecursionError:
        raise YamlRefused(f"{where}: nested deeper than {bounds.max_depth} levels") from None
    _depth(value, where, bounds)
    return value


def events(text: str | bytes, where: str, bounds: Bounds = DEFAULT) -> Iterator[yaml.Event]:
    """yaml.parse(text): the parser's events, without building the documents, once `text` is
    within `bounds` (YamlRefused)."""
    check(text, where, bounds)
    return yaml.parse(text, Loader=_CLoader or yaml.SafeLoader)
