"""Config problems: a key path plus a message, gathered into one ConfigError.

Also turns pydantic's validation errors into such problems: the key path as the user wrote it
(`gpu-queues:teams[0].resourceGroups`), and for a misspelt key the allowed keys and the
nearest match. Secrets (anything under `kubernetes`, any `kubeconfig`) are never echoed.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BaseModel, ValidationError

from gpu_queues import keys

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config, at a key path."""

    loc: Loc
    message: str

    @property
    def path(self) -> str:
        return format_loc(self.loc)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(Exception):
    """The stack config is invalid; `problems` lists every problem found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid stack config ({len(self.problems)} problem(s)):\n{lines}")

    @property
    def messages(self) -> list[str]:
        return [str(p) for p in self.problems]


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def format_loc(loc: Loc) -> str:
    """`('teams', 0, 'resourceGroups')` -> `gpu-queues:teams[0].resourceGroups`."""
    out = f"{keys.PROJECT}:"
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += part if i == 0 else f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def _strip_optional(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class that owns the key at `loc` (for listing allowed keys)."""
    current: Any = root
    parts = list(loc)
    while parts:
        current = _strip_optional(current)
        part = parts.pop(0)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next(
                (f for n, f in current.model_fields.items() if (f.alias or n) == part), None
            )
            if field is None:
                return None
            current = field.annotation
        elif typing.get_origin(current) is list:
            current = typing.get_args(current)[0]
        elif typing.get_origin(current) is dict:
            current = typing.get_args(current)[1]
        else:
            return None
    current = _strip_optional(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


def _describe_error(root: type[BaseModel], err: Mapping[str, Any]) -> str:
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    if kind == "extra_forbidden":
        owner = _model_at(root, loc[:-1])
        allowed = _allowed_keys(owner) if owner else []
        bad = str(loc[-1])
        hint = difflib.get_close_matches(bad, allowed, n=1)
        msg = f"unknown key {bad!r}"
        if hint:
            msg += f" (did you mean {hint[0]!r}?)"
        if allowed:
            msg += f"; allowed keys: {', '.join(allowed)}"
        return msg
    if kind == "missing":
        return "required key is missing"
    message = str(err["msg"])
    secret = bool(loc) and (loc[0] == keys.KEY_KUBERNETES or "kubeconfig" in loc)
    value = err.get("input")
    show = value is None or isinstance(value, str | int | float | bool)
    prefixes = ("literal_error", "int_", "bool_", "string_", "list_", "dict_", "model_")
    if kind.startswith(prefixes) and show and not secret:
        message += f" (got {value!r})"
    return message


def problems_from_validation(root: type[BaseModel], exc: ValidationError) -> list[Problem]:
    """One Problem per pydantic error of a `root` model's validation."""
    problems = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        if loc[-1:] == ("[key]",):
            loc = loc[:-1]  # a refused map key: the message names it, the path ends at it
        problems.append(Problem(loc, _describe_error(root, err)))
    return problems


def key_path(loc: Loc) -> str:
    """A key path without the project prefix, for use inside a message."""
    return format_loc(loc).split(":", 1)[1]
