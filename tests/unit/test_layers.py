"""Imports point one way (issue 22, item 3; issue 38, item 1): read every module's imports from
its source (ast, function-level imports included) and fail on a cycle between modules or between
packages, and on an import against the order below.

The order, bottom to top, written once, here. Why this way: Kueue's own facts (quantities,
field and object rules, release facts, the client) need nothing of ours; the stack config is
validated with those rules; a Kueue release is prepared against the config (and which release
a stack runs is decided there, for every tool); the Pulumi components and the policy pack
build or judge what those produce; the what-if reads config and releases, and replays a mix
on the fast engine with no cluster (its mix, the engine's input, the driver, the outcome
rules both engines share, the sides, the command and the report), so a library user has all
of it; the tools (promote, diffs, status and its start-time estimates, record, CI glue)
combine all of it; the quota advisor judges candidates with the what-if and checks them with
the policy pack and the tools' preview; the library's public face and the `gpuq` command sit
on top. The sandbox harness runs clusters for the rehearsal and for the what-if's sandbox
engine (which hands itself to the library's what-if command), and benchmarks drive both; the
Pulumi program and the design card's components/ face use the library last. A module may
import its own package and anything on a lower floor; two packages on one floor do not import
each other.

One edge is by module name, not an import, so the source does not show it: `gpuq what-if`
runs the sandbox's what-if command (sandbox.replay.cli, the library's command with the
sandbox engine passed in) where the checkout has it. BY_NAME declares it and the test below
checks that gpuq names no other module above the library.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import ignored_folders

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FLOORS: list[tuple[str, ...]] = [
    (
        "gpu_queues.keys",
        "gpu_queues.pins",
        "gpu_queues.values",
        "gpu_queues.files",
        "gpu_queues.yamlio",
        "gpu_queues.escape",
        "gpu_queues.progress",
        "gpu_queues.invoked",
    ),
    ("gpu_queues.kueue",),
    ("gpu_queues.config",),
    ("gpu_queues.release",),
    ("gpu_queues.components", "policies"),
    ("gpu_queues.whatif",),
    ("gpu_queues.tools",),
    ("gpu_queues.advise",),  # the quota advisor: fast replays (gpu_queues.whatif) as its judge
    ("gpu_queues",),  # the library's public face (gpu_queues/__init__.py) and gpuq (cli.py)
    ("sandbox",),
    ("sandbox.rehearse",),
    ("sandbox.replay",),
    ("sandbox.crosscheck",),  # the engines' randomized cross-check: drives both (sandbox.replay)
    ("sandbox.bench",),
    ("components", "__main__", "package"),  # package/: the component package's plugin
]
TOP = ("gpu_queues", "sandbox", "policies", "components", "package", "__main__")
# Edges by module name (importlib), which the source's imports do not show: (from, to).
BY_NAME = {("gpu_queues.cli", "sandbox.replay.cli")}


def modules() -> dict[str, Path]:
    """The project's modules by name: its top-level packages' files, but those in the folders
    tools make there (package/venv, the component package's virtualenv)."""
    found = {"__main__": ROOT / "__main__.py"}
    made = tuple(f"{f}/" for f in ignored_folders(ROOT))
    for top in TOP[:-1]:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.relative_to(ROOT).as_posix().startswith(made):
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports, anywhere in its source."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            names = [f"{base}.{a.name}" for a in node.names]
            # `from package import module` imports the module; anything else is the package's
            targets = [n for n in names if n in known] or [base]
            if len(targets) < len(names):
                targets.append(base)
        else:
            continue
        for target in targets:
            # the longest known module the target names (a name imported from a package is
            # either a module of it or a name in its __init__)
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def floor(name: str) -> tuple[int, str]:
    """(floor, package) of the longest declared package prefix that holds `name`."""
    best: tuple[int, str] | None = None
    for level, packages in enumerate(FLOORS):
        for package in packages:
            holds = name == package or name.startswith(package + ".")
            if holds and (best is None or len(package) > len(best[1])):
                best = (level, package)
    assert best is not None, f"{name} is on no floor: add its package to FLOORS"
    return best


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def against_the_order(edges: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, targets in sorted(edges.items()):
        level, package = floor(name)
        for target in sorted(targets):
            t_level, t_package = floor(target)
            if t_package == package:
                continue
            if t_level >= level:
                wrong.append(f"{name} (floor {level}) imports {target} (floor {t_level})")
    return wrong


def named_by_gpuq() -> set[tuple[str, str]]:
    """The modules gpuq (gpu_queues/cli.py) runs by name: each command's, and the checkout's."""
    from gpu_queues import cli

    edges = set()
    for command in cli.COMMANDS.values():
        for module in (command.module, *command.when.values(), command.checkout):
            if module:
                edges.add(("gpu_queues.cli", module))
    return edges


def test_no_module_imports_against_the_order():
    assert against_the_order(graph()) == []


def test_gpuq_runs_the_library_by_name_and_above_it_only_what_is_declared():
    """gpuq loads each command's module when asked for (so `gpuq --help` imports none): those
    edges must keep the order too, all but the one declared by name (BY_NAME)."""
    known = set(modules())
    named = named_by_gpuq()
    assert {target for _, target in named} <= known
    upward = {edge for edge in named if against_the_order({edge[0]: {edge[1]}})}
    assert upward == BY_NAME


def test_no_two_modules_import_each_other_in_a_circle():
    assert cycles(graph()) == []


def test_no_two_packages_import_each_other_in_a_circle():
    edges: dict[str, set[str]] = defaultdict(set)
    for name, targets in graph().items():
        for target in targets:
            a, b = floor(name)[1], floor(target)[1]
            if a != b:
                edges[a].add(b)
    assert cycles(edges) == []


def test_a_fast_replay_needs_nothing_above_the_whatif():
    """Following a mix through the fast engine's replay stays on the what-if's floor and below:
    a library user has all of it, with no sandbox, tools or advisor."""
    edges = graph()
    start = "gpu_queues.whatif.fast"
    seen, todo = {start}, [start]
    while todo:
        for target in edges[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    assert sorted(m for m in seen if floor(m)[0] > floor(start)[0]) == []
    assert {"gpu_queues.whatif.nodes", "gpu_queues.config.model"} <= seen  # it was followed


def generated(path: Path) -> bool:
    """Made by `make schema` from the config models (checked for staleness by their tests),
    not written: its length is the models'."""
    head = "\n".join(path.read_text().splitlines()[:5])
    return "by `make schema`" in head and "do not edit" in head


def test_no_module_is_over_600_lines():
    lengths = {
        name: len(path.read_text().splitlines())
        for name, path in modules().items()
        if not generated(path)
    }
    assert {name: n for name, n in lengths.items() if n > 600} == {}


def test_the_checks_catch_what_they_are_about():
    """A cycle and an upward import, made up, are found: the checks can fail."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    made_up = {"gpu_queues.kueue.clusterqueue": {"gpu_queues.config.model"}}
    assert against_the_order(made_up) == [
        "gpu_queues.kueue.clusterqueue (floor 1) imports gpu_queues.config.model (floor 2)"
    ]
    assert against_the_order({"policies.rules": {"gpu_queues.components.queues"}})
    src = ROOT / "gpu_queues" / "config" / "model.py"
    assert "gpu_queues.config.errors" in imports("gpu_queues.config.model", src, set(modules()))
