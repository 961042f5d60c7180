"""Secrets in a stack file, for the tools that read one: which keys may hold a `secure:` value,
and validation that counts such a secret as set without ever decrypting it.

A value `pulumi config set --secret` wrote is a mapping with the single key `secure` and a
string value (Pulumi's own rule, sdk/go/common/resource/config); gpu_queues.config.stackfile reads
each
one as an opaque `Secure`, wherever it appears (any key, nested with --path, in lists).

The config models say which keys are secrets: a field typed `SecretStr` (today only
`kubernetes.kubeconfig`). A secure value there validates as "a secret is set". Anywhere else
it is refused with a message naming the key, because the tools (quota diff, promotion) need
that value in plain text and must not decrypt it.

Not even the ciphertext is shown: a diff of a stack file that a tool prints or writes
(`make promote`'s, the advisor's advice.md) is made by `shown_diff`, which shows each line of
a secure value as a note.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BaseModel, SecretStr

from gpu_queues.config.model import ConfigError, Problem, StackConfig, format_loc, load_config

Loc = tuple[str | int, ...]
SECURE_KEY = "secure"


@dataclass(frozen=True)
class Secure:
    """A `secure:` value: Pulumi ciphertext, encrypted with its own stack's key.

    It is carried as is: never decrypted, never shown (repr hides even the ciphertext)."""

    ciphertext: str

    def __repr__(self) -> str:
        return "Secure(...)"

    def to_yaml(self) -> dict[str, str]:
        """The mapping Pulumi writes for it."""
        return {SECURE_KEY: self.ciphertext}


def is_secure_mapping(value: object) -> bool:
    """Pulumi's test: a mapping with exactly one key, `secure`, whose value is a string."""
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get(SECURE_KEY), str)


def mark_secure(value: Any) -> Any:
    """`value` with every `{secure: ciphertext}` mapping replaced by a `Secure`."""
    if is_secure_mapping(value):
        return Secure(value[SECURE_KEY])
    if isinstance(value, Mapping):
        return {k: mark_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_secure(v) for v in value]
    return value


class _Any:
    """Matches any list index or mapping key in a secret path pattern."""

    def __repr__(self) -> str:
        return "*"


ANY = _Any()
Pattern = tuple["str | _Any", ...]
# What an allowed secret validates as: set, content unknown (SecretStr never shows it).
PLACEHOLDER = "<secret: set, not decrypted>"


def _strip(annotation: Any) -> list[Any]:
    """The concrete types an annotation allows (Optional and Annotated unwrapped)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _strip(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [t for a in typing.get_args(annotation) if a is not type(None) for t in _strip(a)]
    return [annotation]


def _walk(annotation: Any, prefix: Pattern, seen: frozenset[type]) -> Iterator[Pattern]:
    for kind in _strip(annotation):
        origin = typing.get_origin(kind)
        if isinstance(kind, type) and issubclass(kind, SecretStr):
            yield prefix
        elif isinstance(kind, type) and issubclass(kind, BaseModel) and kind not in seen:
            for name, field in kind.model_fields.items():
                yield from _walk(field.annotation, (*prefix, field.alias or name), seen | {kind})
        elif origin in (list, tuple, set, frozenset, dict) or (
            isinstance(origin, type) and issubclass(origin, Mapping)
        ):
            args = typing.get_args(kind)
            item = args[-1] if args else Any
            yield from _walk(item, (*prefix, ANY), seen)


def secret_patterns(model: type[BaseModel] = StackConfig) -> tuple[Pattern, ...]:
    """Key paths (ANY for an index or key) where the model takes a secret."""
    return tuple(_walk(model, (), frozenset()))


def show_pattern(pattern: Pattern) -> str:
    out = format_loc(tuple(p for p in pattern if isinstance(p, str)))
    return out if ANY not in pattern else out + " (and the same key in every item)"


def matches(loc: Loc, pattern: Pattern) -> bool:
    return len(loc) == len(pattern) and all(
        p is ANY or p == part for part, p in zip(loc, pattern, strict=True)
    )


def find_secure(value: Any, loc: Loc = ()) -> Iterator[tuple[Loc, Secure]]:
    """Every secure value in a parsed config, with its key path."""
    if isinstance(value, Secure):
        yield loc, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from find_secure(item, (*loc, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from find_secure(item, (*loc, i))


def _refusal(loc: Loc, patterns: tuple[Pattern, ...]) -> str:
    allowed = ", ".join(show_pattern(p) for p in patterns) or "no key"
    dotted = tuple(str(loc[0]).split(".")) + loc[1:] if loc and isinstance(loc[0], str) else loc
    if dotted != loc and any(matches(dotted, p) for p in patterns):
        return (
            "is one key with dots in its name, set without --path; set the nested secret with "
            f"`pulumi config set --secret --path {format_loc(dotted)}` and remove this key"
        )
    if any(len(p) > len(loc) and matches(loc, p[: len(loc)]) for p in patterns):
        return (
            "is one encrypted value around keys that are not all secrets; set the secret keys "
            f"one by one with `pulumi config set --secret --path` ({allowed} may be secrets)"
        )
    return (
        f"is a secret (`secure:`), but only {allowed} may be one: the tools read this value "
        "and never decrypt secrets; set it in plain text (`pulumi config set --path`)"
    )


def prepare(
    raw: Mapping[str, Any], model: type[BaseModel] = StackConfig
) -> tuple[dict[str, Any], list[Problem], list[Loc]]:
    """`raw` with each allowed secret replaced by PLACEHOLDER; a Problem and the key path of
    each secret the model does not allow (those stay Secure objects, which never validate)."""
    patterns = secret_patterns(model)
    problems: list[Problem] = []
    refused: list[Loc] = []
    allowed: list[Loc] = []
    for loc, _ in find_secure(raw):
        if any(matches(loc, p) for p in patterns):
            allowed.append(loc)
        else:
            refused.append(loc)
            problems.append(Problem(loc, _refusal(loc, patterns)))
    prepared = dict(raw)
    for loc in allowed:
        prepared = _replaced(prepared, loc, PLACEHOLDER)
    return prepared, problems, refused


def _replaced(value: Any, loc: Loc, new: Any) -> Any:
    if not loc:
        return new
    head, rest = loc[0], loc[1:]
    if isinstance(value, Mapping):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    if isinstance(value, list):
        return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(value)]
    return value


def _under(loc: Loc, refused: list[Loc]) -> bool:
    return any(loc[: len(r)] == r for r in refused)


def load_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """load_config for a config read from a stack file: secure values are set but unknown.

    Raises ConfigError listing every problem; a refused secret is reported once, by its key,
    instead of the type errors the models would give for it."""
    prepared, problems, refused = prepare(raw)
    try:
        config = load_config(prepared)
    except ConfigError as error:
        rest = [p for p in error.problems if not _under(p.loc, refused)]
        raise ConfigError(problems + rest) from None
    if problems:
        raise ConfigError(problems)
    return config


# A `secure` key (plain or quoted) in block or flow style: the line holds a secure value, and so
# do the lines after it that are indented deeper (a value continued, a block scalar).
_SECURE_KEY = re.compile(r"""(?:^|[\s{,?-])["']?secure["']?\s*:(?:\s|$)""")
HIDDEN = "(a secure value: not shown)"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def secret_lines(text: str, ciphertexts: Iterable[str] = ()) -> set[int]:
    """The lines of a stack file's `text` (0-based) that hold any of a secure value: a line
    with a `secure:` key and those continuing it, and any line with a part of one of
    `ciphertexts` (spelt some other way: an alias, an escaped key, a folded string)."""
    lines = text.splitlines()
    parts = [c for c in ciphertexts if len(c) >= 8]
    hidden: set[int] = set()
    for i, line in enumerate(lines):
        bare = line.strip().strip("\"'").rstrip("\"'}],")
        if any(c in line for c in parts) or (len(bare) >= 8 and any(bare in c for c in parts)):
            hidden.add(i)
        if not _SECURE_KEY.search(line):
            continue
        hidden.add(i)
        for j in range(i + 1, len(lines)):
            if lines[j].strip() and _indent(lines[j]) <= _indent(line):
                break
            hidden.add(j)
    return hidden


def shown_diff(old: str, new: str, name: str, docs: Iterable[Any] = ()) -> str:
    """The unified diff of two texts of the stack file `name`, as a tool may show it: every
    line of a secure value (secret_lines; `docs`, the parsed documents, name the
    ciphertexts) is a note in its place, never the line."""
    ciphertexts = {s.ciphertext for doc in docs for _, s in find_secure(doc)}
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    hidden_old, hidden_new = secret_lines(old, ciphertexts), secret_lines(new, ciphertexts)
    out = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag in ("equal", "replace", "delete"):
                sign = " " if tag == "equal" else "-"
                out += [_line(sign, old_lines[i], i in hidden_old) for i in range(i1, i2)]
            if tag in ("replace", "insert"):
                out += [_line("+", new_lines[j], j in hidden_new) for j in range(j1, j2)]
    if not out:
        return ""
    return f"--- a/{name}\n+++ b/{name}\n" + "".join(out)


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diff writes it."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _line(sign: str, line: str, hidden: bool) -> str:
    text = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    if hidden:
        text = " " * _indent(line) + f"# {HIDDEN}\n"
    return sign + text
