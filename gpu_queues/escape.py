"""Text from a mix, a stack file or a cluster, made inert in GitHub Markdown: the one home of
the rule every Markdown writer (report.md and the PR comment, the quota diff, the advisor's
advice.md) follows for a string it did not write itself.

A workload, team, flavor or file name and a message are read, not trusted: written as they
are, one could close the comment's `<details>` block, start a heading or a list, open an HTML
comment that hides every row after it (or forge the PR comment's section markers), split a
table row, or end a Mermaid label. Each function here keeps the text readable and takes its
meaning away:

- `text`: inline prose and table cells. One line (line breaks and other whitespace runs are
  one space, control characters shown as escapes); `&` and `<` as HTML entities, so no tag or
  comment can open; every character Markdown or GitHub reads as syntax (emphasis, code,
  links, tables, headings, math, strikethrough, and a block's start) after a backslash.
- `code`: a name shown in monospace: a code span when nothing in it can end one, else the
  same as `<code>` around `text`.
- `fence`: a fenced block (a diff) whose fence is longer than any run of backticks inside.
- `mermaid`: a quoted Mermaid label, with Mermaid's entity codes for what it reads as syntax.
"""

from __future__ import annotations

import re
from typing import Final

# What CommonMark and GitHub's extensions read as syntax inside a line: emphasis, code, links
# and images, table cells, headings (after a list marker), math, strikethrough. A backslash
# before each makes it a plain character; `(`, `!`, `-` and the like mean nothing without them.
_SYNTAX: Final = re.compile(r"([\\`*_\[\]|~$#])")
_HTML: Final = {"&": "&amp;", "<": "&lt;"}  # `<` opens tags and comments; `>` alone does not
# What starts a block at the head of a line: a list item, a quote, a rule, a setext
# underline, an ordered item (`#` is escaped wherever it is).
_LEADING: Final = re.compile(r"(?:[-+]|[0-9]{1,9}[.)])(?=\s|$)|[-=]+$|>")
_CODE_SAFE: Final = re.compile(r"[^`<>&|\\]*")


def one_line(value: object) -> str:
    """`value` as one line: whitespace runs (line breaks too) one space, other characters
    that do not print as their escapes (\\x00, \\u202e)."""
    flat = " ".join(str(value).split())
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in flat)


def text(value: object, width: int | None = None) -> str:
    """`value` as inert inline Markdown (prose or a table cell), at most `width` characters
    of it kept (an ellipsis ends what is cut)."""
    flat = one_line(value)
    if width is not None and len(flat) > width:
        flat = flat[: width - 1] + "…"
    escaped = _SYNTAX.sub(r"\\\1", "".join(_HTML.get(c, c) for c in flat))
    start = _LEADING.match(escaped)
    if start is None:
        return escaped
    at = start.end() - 1 if escaped[0].isdigit() else 0  # 1. -> 1\. ; - -> \-
    return escaped[:at] + "\\" + escaped[at:]


def code(value: object) -> str:
    """`value` in monospace: `value` when nothing in it ends a code span, reads as HTML or
    splits a table; else `<code>` around its inert text."""
    flat = one_line(value)
    if flat and _CODE_SAFE.fullmatch(flat) and flat.strip() == flat:
        return f"`{flat}`"
    return f"<code>{text(flat)}</code>"


def fence(body: str, info: str = "") -> list[str]:
    """The lines of a fenced block showing `body` literally: its fence is longer than any run
    of backticks in it, so no line of it can close the block."""
    runs = [len(r) for r in re.findall(r"`+", body)]
    mark = "`" * max(3, max(runs, default=0) + 1)
    return [f"{mark}{info}", *body.splitlines(), mark]


def mermaid(value: object) -> str:
    """`value` as a quoted Mermaid label: one line, and Mermaid's entity codes (#quot;, #lt;,
    ...) for what it reads as syntax, so a label cannot end its string or add markup."""
    flat = one_line(value)
    codes = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "`": "#96;", "%": "#37;"}
    return '"' + "".join(codes.get(c, c) for c in flat) + '"'
