"""The tests themselves (issue 27): kinds of test that pass whatever the code does are not
written again. Read from the test files' syntax trees:

- a test function with no assert, no pytest.raises/fail/warns and no call to a helper that
  has one (it only checks that nothing raised);
- pytest.raises(Exception) or raises(BaseException) without match= (any error passes);
- pytest.raises(SystemExit) whose exit code is never read in that test (argparse exits 2
  for an unknown option too);
- a module-level Counter that is only ever incremented (counted, never checked).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.unit

TESTS = ROOT / "tests"
CHECKING_CALLS = {"raises", "fail", "warns", "deprecated_call"}


@functools.cache
def _files(root: Path = TESTS) -> list[tuple[Path, str, ast.Module]]:
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        out.append((path, text, ast.parse(text)))
    return out


def _called(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name:
                names.add(name)
    return names


def _checks_itself(node: ast.AST) -> bool:
    if any(isinstance(n, ast.Assert) for n in ast.walk(node)):
        return True
    return any(n in CHECKING_CALLS or n.startswith("assert") for n in _called(node))


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def unchecked_tests(files: list[tuple[Path, str, ast.Module]]) -> list[str]:
    # Helpers that check, by name, across the suite (tests import them from each other).
    checking = {
        name for _, _, tree in files for name, f in _functions(tree).items() if _checks_itself(f)
    }
    found = []
    for path, _, tree in files:
        functions = _functions(tree)
        local = {n for n in functions if n in checking}
        changed = True
        while changed:  # a helper calling a checking helper checks
            changed = False
            for name, f in functions.items():
                if name not in local and _called(f) & (local | checking):
                    local.add(name)
                    changed = True
        found += [
            f"{path.relative_to(TESTS)}:{f.lineno} {name}"
            for name, f in functions.items()
            if name.startswith("test") and name not in local
        ]
    return found


def _enclosing(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    """Each node's innermost enclosing function (the module for top-level code)."""
    owner: dict[ast.AST, ast.AST] = {}

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            owner[child] = scope
            visit(
                child, child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else scope
            )

    visit(tree, tree)
    return owner


def weak_raises(files: list[tuple[Path, str, ast.Module]]) -> list[str]:
    found = []
    for path, _, tree in files:
        owner = _enclosing(tree)
        for item in (n for n in ast.walk(tree) if isinstance(n, ast.withitem)):
            call = item.context_expr
            if not isinstance(call, ast.Call) or not call.args:
                continue
            func = call.func
            if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) != (
                "raises"
            ):
                continue
            raised = ast.unparse(call.args[0])
            where = f"{path.relative_to(TESTS)}:{call.lineno}"
            if raised in ("Exception", "BaseException") and not any(
                k.arg == "match" for k in call.keywords
            ):
                found.append(f"{where} raises({raised}) without match")
            if raised == "SystemExit":
                var = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
                # read in the same function: another test's read of its own `.value.code`
                # proves nothing here
                scope = ast.unparse(owner[item])
                if var is None or not re.search(rf"\b{var}\.value\.code\b", scope):
                    found.append(f"{where} raises(SystemExit), the exit code never read")
    return found


def counters_never_read(files: list[tuple[Path, str, ast.Module]]) -> list[str]:
    found = []
    for path, _, tree in files:
        for node in tree.body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            value = getattr(node, "value", None)
            if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
                continue
            if ast.unparse(value.func) not in ("Counter", "collections.Counter"):
                continue
            name = target.id
            reads = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            ]
            # `NAME[key] += 1` loads NAME too: count only loads outside such increments
            increments = [
                n.target.value
                for n in ast.walk(tree)
                if isinstance(n, ast.AugAssign)
                and isinstance(n.target, ast.Subscript)
                and isinstance(n.target.value, ast.Name)
                and n.target.value.id == name
            ]
            if len(reads) <= len(increments):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} {name}")
    return found


def test_every_test_checks_something():
    assert unchecked_tests(_files()) == []


def test_no_raises_that_any_error_or_exit_passes():
    assert weak_raises(_files()) == []


def test_no_counter_is_only_counted():
    assert counters_never_read(_files()) == []


def test_the_readers_find_each_kind(tmp_path):
    """Each reader on a file with one of each kind (the suite itself has none left)."""
    text = """
from collections import Counter
import pytest
SEEN = Counter()
def helper():
    assert True
def test_calls_a_checking_helper():
    helper()
def test_only_runs():
    SEEN["x"] += 1
def test_any_error():
    with pytest.raises(Exception):
        pass
def test_any_exit():
    with pytest.raises(SystemExit) as stop:
        pass
def test_exit_two():
    with pytest.raises(SystemExit) as stop:
        pass
    assert stop.value.code == 2
"""
    path = TESTS / "unit" / "test_example.py"  # a path under TESTS, never written
    files = [(path, text, ast.parse(text))]
    assert unchecked_tests(files) == ["unit/test_example.py:9 test_only_runs"]
    assert weak_raises(files) == [
        "unit/test_example.py:12 raises(Exception) without match",
        "unit/test_example.py:15 raises(SystemExit), the exit code never read",
    ]
    assert counters_never_read(files) == ["unit/test_example.py:4 SEEN"]
    # the exit code read by test_exit_two does not count for test_any_exit
    read = text + "def test_read():\n    assert SEEN['x'] == 1\n"
    assert counters_never_read([(path, read, ast.parse(read))]) == []
