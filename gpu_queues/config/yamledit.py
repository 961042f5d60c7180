"""Edit keys of a YAML file in place: every byte outside the edited entries stays as it was.

`edit(text, {path: value or REMOVE})` applies the edits to a round-trip (ruamel.yaml) copy of
the document, dumps it in the indentation style closest to the file's, and then splices into
the original text only the entries (key line to the end of the value's content) of the keys
that changed, found by the parser's positions, never by matching lines. Comments, quoting,
line endings and the layout of everything else are kept; a change inside a flow collection
rewrites that collection's entry. What cannot be spliced (a key behind an alias, a key that
does not start its line) raises EditError; the caller still parses the result back and
compares it with the intended document, since a splice is only as good as that check.

A path's parts are mapping keys (str) or indexes (int) into block sequences, such as
`("config", "gpu-queues:teams", 0, "resourceGroups", 0, "flavors", 1, "resources", "cpu")`:
an edit goes through existing items of a list, but never adds or removes one (EditError).
"""

from __future__ import annotations

import copy
import difflib
import functools
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gpu_queues import yamlio

Path = tuple[str | int, ...]


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE = _Remove()
"""An edit's value that deletes the key (and the mappings it leaves empty, see `keep`)."""

_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (3, 3, 0), (4, 4, 0))


class EditError(Exception):
    """The file cannot be edited in place; nothing was changed."""


def _yaml(layout: tuple[int, int, int]) -> YAML:
    y = YAML()
    y.preserve_quotes = True
    y.indent(mapping=layout[0], sequence=layout[1], offset=layout[2])
    y.width = 4096
    return y


def _dump(y: YAML, doc: Any) -> str:
    """The dump with "\n" line breaks only: comments copied from a CRLF file keep their "\r"
    (a scalar's is escaped), and the caller converts to the edited file's line breaks."""
    buf = io.StringIO()
    y.dump(doc, buf)
    return buf.getvalue().replace("\r\n", "\n").replace("\r", "")


def _distance(lines: list[str], y: YAML, doc: Any) -> int:
    out = _dump(y, doc).splitlines()
    matcher = difflib.SequenceMatcher(a=lines, b=out, autojunk=False)
    return len(out) - sum(b.size for b in matcher.get_matching_blocks())


def _observed_layouts(text: str, root: Node | None) -> list[tuple[int, int, int]]:
    """The styles that agree with how the file indents its nested block mappings (mapping)
    and the sequences under a key (offset of the dash, sequence: of the item). All of them
    when the file shows nothing, or two different habits."""
    mapping: set[int] = set()
    sequence: set[tuple[int, int]] = set()
    todo = [root] if isinstance(root, MappingNode) and not root.flow_style else []
    while todo:
        node = todo.pop()
        for key, value in node.value:
            column = key.start_mark.column
            if isinstance(value, MappingNode) and not value.flow_style and value.value:
                mapping.add(value.value[0][0].start_mark.column - column)
                todo.append(value)
            elif isinstance(value, SequenceNode) and not value.flow_style:
                for item in value.value:
                    start = item.start_mark.index
                    lead = text[_line_start(text, start) : start]
                    if lead.strip() == "-":
                        dash = lead.index("-")
                        sequence.add((item.start_mark.column - column, dash - column))
                    if isinstance(item, MappingNode) and not item.flow_style:
                        todo.append(item)
    return [
        layout
        for layout in _LAYOUTS
        if len(mapping) <= 1
        and len(sequence) <= 1
        and all(m == layout[0] for m in mapping)
        and all(s == (layout[1], layout[2]) for s in sequence)
    ] or list(_LAYOUTS)


def _closest(text: str, doc: Any, root: Node | None) -> YAML:
    """The dumper, among the indentation styles, under which `doc` (`text` loaded) comes back
    with the fewest lines changed. Only styles that agree with the file's own indentation are
    tried (most files show one), and the document is loaded once: a pin or promotion spent
    most of its time loading and dumping the same text once per style."""
    layouts = _observed_layouts(text, root)
    if len(layouts) == 1:
        return _yaml(layouts[0])
    lines = text.splitlines()
    return min((_yaml(layout) for layout in layouts), key=lambda y: _distance(lines, y, doc))


# --- positions ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _compose(text: str) -> Node | None:
    # The tree is only read (positions and structure), never changed, so a process that edits
    # the same text again shares it (~20 ms a stack file; the unit suite pins and promotes
    # the committed stack files, and composes their edited results, over and over).
    node: Node | None = YAML(typ="safe", pure=True).compose(text)
    return node


@dataclass(frozen=True)
class _Entry:
    """Where a key's entry sits in a text: its key node and its value node."""

    key: Node
    value: Node


def _entries(node: Node) -> Iterator[tuple[str, _Entry]]:
    if isinstance(node, MappingNode):
        for k, v in node.value:
            if isinstance(k, ScalarNode):
                yield str(k.value), _Entry(k, v)


def _item(node: Node, index: int) -> _Entry | None:
    """A block sequence's item as an entry (key and value both the item's node)."""
    if isinstance(node, SequenceNode) and not node.flow_style and 0 <= index < len(node.value):
        item: Node = node.value[index]
        return _Entry(item, item)
    return None


def _find(root: Node | None, path: Path) -> list[_Entry | None]:
    """The entry of each prefix of `path` (None from the first one that is absent)."""
    found: list[_Entry | None] = []
    node = root
    for part in path:
        entry = None
        if node is not None and isinstance(part, int):
            entry = _item(node, part)
        elif node is not None:
            entry = next((e for k, e in _entries(node) if k == part), None)
        if entry is not None and entry.value.start_mark.index < entry.key.start_mark.index:
            raise EditError(f"{_dotted(path)} is reached through an alias; edit its anchor")
        found.append(entry)
        node = entry.value if entry is not None else None
    return found


def _content_end(node: Node) -> int:
    """Offset just past the last character of a value's content. A block collection's own end
    mark lies past the comments that follow it, so only its leaves and flow parts count."""
    if isinstance(node, MappingNode | SequenceNode) and not node.flow_style:
        children: list[Node] = []
        for item in node.value:
            children.extend(item if isinstance(item, tuple) else (item,))
        ends = [_content_end(c) for c in children]
        return max(ends) if ends else int(node.start_mark.index)
    return int(node.end_mark.index)


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """Offset past the line break ending the line that holds text[index - 1]."""
    if index == 0 or text[index - 1] == "\n":
        return index
    nl = text.find("\n", index)
    return len(text) if nl < 0 else nl + 1


def _span(text: str, entry: _Entry) -> tuple[int, int]:
    """[start, end) of an entry: from the start of its key's line to the end of the line its
    content ends on (a comment there goes with it; comment lines after it do not)."""
    start = _line_start(text, entry.key.start_mark.index)
    if text[start : entry.key.start_mark.index].strip(" "):
        raise EditError(f"key {entry.key.value!r} does not start its line")
    return start, _line_end(text, _content_end(entry.value))


def _block(node: Node) -> bool:
    return isinstance(node, MappingNode) and not node.flow_style


def _holds(node: Node, part: str | int) -> bool:
    """Whether `part` can be looked up inside `node` in place: a key of a block mapping, an
    index of a block sequence."""
    if isinstance(part, int):
        return isinstance(node, SequenceNode) and not node.flow_style
    return _block(node)


def _dotted(path: Path) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")


# --- the edit -----------------------------------------------------------------------------


def _strip_anchors(value: Any) -> Any:
    """A deep copy with no anchor names of its own (they could clash in another file)."""
    value = copy.deepcopy(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, CommentedMap | CommentedSeq):
            if node.anchor.value is not None:
                node.anchor.value = None
            stack.extend(node.values() if isinstance(node, CommentedMap) else node)
    return value


def _apply(doc: CommentedMap, path: Path, value: Any, keep: int) -> None:
    """Set or remove `path` in the round-trip document. A key added directly under one of the
    `keep` levels that are never pruned goes first (like `gpu-queues:kueue` in `config:`);
    deeper ones go last."""
    parents: list[Any] = [doc]
    node: Any = doc
    for depth, part in enumerate(path[:-1]):
        if isinstance(part, int) or isinstance(path[depth + 1], int):
            child = _step(node, part)
            if isinstance(path[depth + 1], int) and not isinstance(child, CommentedSeq):
                raise EditError(f"{_dotted(path[: depth + 1])} is not a list")
            if isinstance(path[depth + 1], str) and not isinstance(child, CommentedMap):
                raise EditError(f"{_dotted(path[: depth + 1])} is not a mapping")
            parents.append(child)
            node = child
            continue
        child = node.get(part)
        if not isinstance(child, CommentedMap):
            if value is REMOVE:
                return
            child = CommentedMap()
            _put(node, part, child, first=depth == keep)
        elif len(child) == 0:
            child.fa.set_block_style()
        parents.append(child)
        node = child
    if isinstance(path[-1], int):
        raise EditError(f"{_dotted(path)}: list items are edited inside, never set or removed")
    if value is REMOVE:
        node.pop(path[-1], None)
        for depth in range(len(path) - 1, keep, -1):
            if len(parents[depth]) != 0 or isinstance(path[depth - 1], int):
                break
            del parents[depth - 1][path[depth - 1]]
    else:
        _put(node, path[-1], _strip_anchors(value), first=len(path) - 1 == keep)


def _step(node: Any, part: str | int) -> Any:
    """The child of a round-trip node at a key or an existing index (EditError otherwise)."""
    if isinstance(part, int):
        if isinstance(node, CommentedSeq) and 0 <= part < len(node):
            return node[part]
        raise EditError(f"no item {part} in the list")
    if isinstance(node, CommentedMap) and part in node:
        return node[part]
    raise EditError(f"no key {part!r}")


def _put(node: CommentedMap, key: str, value: Any, first: bool) -> None:
    if key in node or not first:
        node[key] = value
    else:
        node.insert(0, key, value)


def _indent(block: str, delta: int) -> str:
    if delta == 0:
        return block
    out = []
    for line in block.splitlines(keepends=True):
        if delta > 0 and line.strip():
            line = " " * delta + line
        elif delta < 0 and line.startswith(" " * -delta):
            line = line[-delta:]
        out.append(line)
    return "".join(out)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


@dataclass(frozen=True)
class _Splice:
    start: int
    end: int
    text: str


def _unit(old_root: Node | None, new_root: Node | None, path: Path) -> Path:
    """The entry to rewrite for an edit of `path`: the path itself, or its nearest ancestor
    that is absent on one side (added or removed as a whole) or not a block mapping."""
    old, new = _find(old_root, path), _find(new_root, path)
    for depth in range(1, len(path) + 1):
        o, n = old[depth - 1], new[depth - 1]
        if o is None or n is None:
            return _keyed(path[:depth])
        nxt = path[depth] if depth < len(path) else None
        if nxt is not None and not (_holds(o.value, nxt) and _holds(n.value, nxt)):
            return _keyed(path[:depth])
    return _keyed(path)


def _keyed(unit: Path) -> Path:
    """A unit must end in a key (its entry has a key line); an item is rewritten only
    through its keys."""
    if isinstance(unit[-1], int):
        raise EditError(f"{_dotted(unit)}: a list item cannot be added, removed or replaced")
    return unit


def _entry_text(new_text: str, entry: _Entry, column: int, nl: str) -> str:
    """An entry of the dump, moved to `column` and given the file's line breaks."""
    start, end = _span(new_text, entry)
    block = new_text[start:end]
    if not block.endswith("\n"):
        block += "\n"
    return _indent(block, column - entry.key.start_mark.column).replace("\n", nl)


def _splice_for(
    old_text: str, new_text: str, old_root: Node, new_root: Node, unit: Path
) -> _Splice:
    o, n = _find(old_root, unit)[-1], _find(new_root, unit)[-1]
    nl = _newline(old_text)
    if o is not None:  # replaced or removed
        start, end = _span(old_text, o)
        if n is None:
            return _Splice(start, end, "")
        block = _entry_text(new_text, n, o.key.start_mark.column, nl)
        if end == len(old_text) and not old_text.endswith("\n"):
            block = block.rstrip("\r\n")
        return _Splice(start, end, block)
    if n is None:
        return _Splice(0, 0, "")
    # Added: next to its siblings, where the round trip put it (first or last).
    old_parent = old_root if len(unit) == 1 else _find(old_root, unit[:-1])[-1]
    new_parent = new_root if len(unit) == 1 else _find(new_root, unit[:-1])[-1]
    old_node = old_parent.value if isinstance(old_parent, _Entry) else old_parent
    new_node = new_parent.value if isinstance(new_parent, _Entry) else new_parent
    siblings = [e for _, e in _entries(old_node)] if old_node is not None else []
    if old_node is None or not _block(old_node) or not siblings:
        raise EditError(f"cannot add {_dotted(unit)} to a flow-style or empty mapping")
    block = _entry_text(new_text, n, siblings[0].key.start_mark.column, nl)
    first = next((k for k, _ in _entries(new_node)), None) if new_node is not None else None
    if first == unit[-1]:
        return _Splice(_span(old_text, siblings[0])[0], _span(old_text, siblings[0])[0], block)
    at = _span(old_text, siblings[-1])[1]
    if at == len(old_text) and not old_text.endswith("\n"):
        block = nl + block.rstrip("\r\n")
    return _Splice(at, at, block)


def edit(
    text: str, edits: Mapping[Path, Any] | Mapping[tuple[str, ...], Any], keep: int = 1
) -> str:
    """`text` with each path set to its value (or removed: REMOVE), changing only the
    entries of the edited keys. Mappings a removal empties are removed too, except the first
    `keep` levels (1: never a top-level key). Raises EditError when it cannot edit in place."""
    if text.startswith("\ufeff"):  # positions below are counted without the byte-order mark
        return "\ufeff" + edit(text[1:], edits, keep)
    try:
        yamlio.check(text, "the file", yaml12=True)  # before ruamel.yaml expands anything
        doc = _yaml(_LAYOUTS[0]).load(text)
        old_root = _compose(text)
        y = _closest(text, doc, old_root)
    except YAMLError as exc:
        raise EditError(f"cannot parse: {' '.join(str(exc).split())}") from None
    except yamlio.YamlRefused as exc:
        raise EditError(str(exc).removeprefix("the file: ")) from None
    if doc is None:
        doc = CommentedMap()
    if not isinstance(doc, CommentedMap) or (old_root is not None and not _block(old_root)):
        raise EditError("the document is not a block mapping")
    for path, value in edits.items():
        _apply(doc, path, value, keep)
    new_text = _dump(y, doc)
    nl = _newline(text)
    if old_root is None:
        # Only comments (or nothing): keep them, then the new document.
        prefix = text if text.endswith("\n") or not text else text + nl
        body = "" if new_text.strip() == "{}" else new_text.replace("\n", nl)
        return prefix + (body if text.endswith("\n") or not text else body.rstrip("\r\n"))
    new_root = _compose(new_text)
    if new_root is None or not _block(new_root):
        raise EditError("the edited document is not a block mapping")
    units: list[Path] = []
    for path in edits:
        unit = _unit(old_root, new_root, path)
        if any(unit[: len(u)] == u for u in units):
            continue
        units = [u for u in units if u[: len(unit)] != unit] + [unit]
    # At one offset (the end of a mapping and of its parent's last entry), the deeper entry
    # goes first: it belongs to the inner mapping.
    splices = sorted(
        ((_splice_for(text, new_text, old_root, new_root, u), len(u)) for u in units),
        key=lambda s: (s[0].start, s[0].end, -s[1]),
    )
    out, at = [], 0
    for s, _ in splices:
        if s.start < at:
            raise EditError("edits overlap")
        out += [text[at : s.start], s.text]
        at = s.end
    out.append(text[at:])
    return "".join(out)


def get(doc: Any, path: Sequence[str | int]) -> Any:
    """The value at `path` in a parsed document, or REMOVE when absent."""
    node = doc
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or not 0 <= part < len(node):
                return REMOVE
        elif not isinstance(node, Mapping) or part not in node:
            return REMOVE
        node = node[part]
    return node
