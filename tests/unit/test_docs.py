"""The docs name only what exists: in README.md, docs/ and the other Markdown of the project,
every relative link reaches a file and, with `#anchor`, a heading of it; every repo path they
mention is in the tree; every `make` target they name is the Makefile's; every `gpuq` command
is one `gpuq --help` lists, with options it has; the `python -m` tools they show exist with
their options. Each problem is reported as file:line. (The README's real-cluster steps are run
for real by tests/sandbox/test_readme_real_cluster.py.)"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shlex
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import ignored_folders

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
# Not docs: the outputs pinned byte for byte (tests/golden/data), and what tools make.
NOT_DOCS = ("tests/golden/data",)


def documents(root: Path = ROOT) -> list[Path]:
    """README.md, docs/ (every folder), then the rest of the project's Markdown: the folders'
    READMEs. Dot folders and the ignored ones (.gitignore's folders, such as the component
    package's virtualenv) are not the project's."""
    ignored = ignored_folders(root)
    found = []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and (rel / d).as_posix() not in ignored
            and (rel / d).as_posix() not in NOT_DOCS
        )
        found += [Path(folder) / f for f in files if f.endswith(".md")]
    first = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in first if p.exists()] + sorted(set(found) - set(first))


def ignored_top_level(root: Path) -> set[str]:
    """The top-level folders .gitignore names (`/.venv/`, `/mutants/`): made by tools."""
    return {f for f in ignored_folders(root) if "/" not in f}


FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Doc:
    path: Path
    text: str
    root: Path = ROOT

    @cached_property
    def split(self) -> tuple[str, list[tuple[int, str]]]:
        """(the prose: the text with each fenced block's lines blank, so offsets keep their
        line; every line inside a fenced block, with its line number)."""
        prose, code = [], []
        fence = ""
        for number, line in enumerate(self.text.split("\n"), 1):
            opening = FENCE.match(line)
            if not fence and opening:
                fence = opening[1]
                prose.append("")
            elif fence and re.fullmatch(rf" {{0,3}}{fence[0]}{{{len(fence)},}}\s*", line):
                fence = ""
                prose.append("")
            elif fence:
                code.append((number, line))
                prose.append("")
            else:
                prose.append(line)
        return "\n".join(prose), code

    @property
    def prose(self) -> str:
        return self.split[0]

    @property
    def code_lines(self) -> list[tuple[int, str]]:
        return self.split[1]

    def line_of(self, offset: int) -> int:
        """The line of an offset into the prose (which has the text's lines)."""
        return self.prose.count("\n", 0, offset) + 1

    def where(self, offset_or_line: int, *, line: bool = False) -> str:
        """file:line, the file from the repository's root."""
        number = offset_or_line if line else self.line_of(offset_or_line)
        return f"{self.path.relative_to(self.root)}:{number}"

    def code_spans(self) -> Iterator[tuple[int, str]]:
        """(offset, content) of each inline code span of the prose (one or more backticks; it
        may run over a line end)."""
        for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", self.prose, re.S):
            yield m.start(2), m[2].strip()

    def prose_without_code(self) -> str:
        """The prose with inline code spans blanked (offsets kept): a link inside one is text."""
        return re.sub(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", lambda m: " " * len(m[0]), self.prose)


def read(path: Path, root: Path = ROOT) -> Doc:
    return Doc(path, path.read_text(), root)


# --- links and anchors ------------------------------------------------------------------------


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text as rendered (code spans, links and emphasis
    reduced to their text), lowercased, every character but letters, digits, `_`, `-` and
    spaces dropped, spaces turned into `-` (github-slugger)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(doc: Doc) -> set[str]:
    """Every anchor a document's headings (and `<a name|id="...">` tags) produce; a repeated
    heading gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    for m in re.finditer(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", doc.prose, re.M):
        base = slug(m[1])
        anchor, n = base, 0
        while anchor in found:
            n += 1
            anchor = f"{base}-{n}"
        found.add(anchor)
    found.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", doc.prose))
    return found


LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\))?)>?(?:\s+\"[^\"]*\")?\s*\)"
)
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:


def links(doc: Doc) -> Iterator[tuple[int, str]]:
    """(offset, target) of each Markdown link, image and reference definition in the prose."""
    prose = doc.prose_without_code()
    for pattern in (LINK, REFERENCE):
        for m in pattern.finditer(prose):
            yield m.start(1), m[1]


def link_problems(doc: Doc) -> list[str]:
    root = doc.root
    problems = []
    cache: dict[Path, set[str]] = {}
    for offset, target in links(doc):
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        path = unquote(path)
        file = (root / path.lstrip("/")) if path.startswith("/") else (doc.path.parent / path)
        file = file.resolve() if path else doc.path
        where = doc.where(offset)
        if not file.exists():
            problems.append(f"{where}: link to {target}: no such file")
            continue
        if root not in (file, *file.parents):
            problems.append(f"{where}: link to {target}: outside the repository")
            continue
        if anchor and file.suffix == ".md":
            if file not in cache:
                cache[file] = anchors(read(file, root))
            if unquote(anchor) not in cache[file]:
                problems.append(
                    f"{where}: link to {target}: no heading of "
                    f"{file.relative_to(root)} makes #{anchor}"
                )
    return problems


# --- paths the prose mentions -------------------------------------------------------------------


def path_problems(doc: Doc) -> list[str]:
    """A path mentioned in prose or inline code from one of the repository's top-level folders
    (`gpu_queues/whatif/fast.py`, `sandbox/README.md`, `.github/workflows/preview.yml`) must
    exist. Not checked: placeholders (`<version>`, `*`, `{a,b}`, `$VAR`), the folders tools
    make (dot folders, .gitignore's), and fenced blocks (commands and their output)."""
    root = doc.root
    tops = sorted(
        d.name
        for d in root.iterdir()
        if d.is_dir()
        and d.name not in ignored_top_level(root)
        and (not d.name.startswith(".") or d.name in (".github", ".ci"))
        and d.name != ".git"
    )
    if not tops:
        return []
    mention = re.compile(r"(?<![\w./<>$~-])((?:" + "|".join(map(re.escape, tops)) + r")/[\w./-]*)")
    problems = []
    for m in mention.finditer(doc.prose):
        path, start = m[1].rstrip(".-"), m.start(1)
        after = doc.prose[m.end(1) : m.end(1) + 2]
        if after[:1] in ("<", "*", "{", "$") or doc.prose[start - 3 : start].endswith(
            ("](", "]: ")
        ):
            continue  # a placeholder; a link's target (link_problems)
        candidates = [root / path]
        if after == "::":  # a pytest id; tables of them name paths from tests/ (kueue-manifest)
            candidates.append(root / "tests" / path)
        stem, dot, attribute = path.rpartition(".")
        if dot and "/" not in attribute:  # a module's attribute: `tests/properties.examples(n)`
            candidates.append(root / f"{stem}.py")
        if not any(c.exists() for c in candidates):
            problems.append(f"{doc.where(start)}: {path}: no such path")
    return problems


# --- commands: make targets, gpuq, python -m tools ----------------------------------------------


def command_segments(command: str) -> list[str]:
    """The simple commands of one line: comments dropped, split at && || ; | (a prompt `$ `
    before the line dropped)."""
    command = re.sub(r"^\s*\$\s+", "", command)
    command = re.split(r"\s#", command, maxsplit=1)[0]
    return [s.strip() for s in re.split(r"&&|\|\||;|\|", command) if s.strip()]


def shown_commands(doc: Doc) -> Iterator[tuple[str, str]]:
    """(file:line, command) for every simple command on a line of a fenced block (a line ended
    by a backslash joined with the next) and in every inline code span."""
    pending, first = "", 0
    for number, line in doc.code_lines:
        if not pending:
            first = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        for segment in command_segments(pending + line):
            yield doc.where(first, line=True), segment
        pending = ""
    for offset, span in doc.code_spans():
        for segment in command_segments(" ".join(span.split())):
            yield doc.where(offset), segment


def makefile_targets(root: Path = ROOT) -> set[str]:
    """The Makefile's targets: every name before a rule's `:` (phony or file targets; not a
    variable's `:=`), `.PHONY` and targets made of variables left out."""
    text = (root / "Makefile").read_text()
    targets = set()
    for m in re.finditer(r"^([^\s#:=$][^:=\n]*?)[ \t]*::?(?!=)", text, re.M):
        targets.update(t for t in m[1].split() if not t.startswith((".", "$")))
    return targets


TARGET = re.compile(r"^[A-Za-z0-9][\w.-]*$")


def make_targets_named(command: str) -> list[str] | None:
    """The targets a `make ...` command names: the words after make (and its options) up to the
    first that is not a plain name (`STACK=x`, `[TEAMS=...]`, `test-<suite>`, ...)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if words[:1] != ["make"]:
        return None
    named = []
    for word in words[1:]:
        if word.startswith("-"):
            continue
        if not TARGET.match(word):
            break
        named.append(word)
    return named


def make_problems(doc: Doc) -> tuple[list[str], set[str]]:
    """(the `make` commands naming a target the Makefile does not have, the targets found)."""
    targets = makefile_targets(doc.root)
    problems, seen = [], set()
    for where, command in shown_commands(doc):
        named = make_targets_named(command)
        for target in named or []:
            seen.add(target)
            if target not in targets:
                problems.append(f"{where}: `{command}`: the Makefile has no target {target!r}")
    return problems, seen


def gpuq_listing() -> set[str]:
    """The commands `gpuq --help` lists."""
    from gpu_queues import cli as gpuq

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert gpuq.main(["--help"]) == 0
    _, _, listing = out.getvalue().partition("\ncommands:\n")
    return set(re.findall(r"^  (\S+)  ", listing, re.M))


def gpuq_problems(doc: Doc, listed: set[str]) -> tuple[list[str], set[str]]:
    """(the `gpuq <command>` lines whose command `gpuq --help` does not list, or whose
    options that command does not have; the commands found)."""
    from gpu_queues import cli as gpuq

    problems, seen = [], set()
    for where, command in shown_commands(doc):
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        if words[:1] != ["gpuq"] or len(words) < 2 or words[1] in ("--help", "-h"):
            continue
        name, rest = words[1], words[2:]
        if not TARGET.match(name):  # `gpuq <command>`: a placeholder
            continue
        seen.add(name)
        if name not in listed:
            problems.append(f"{where}: `{command}`: `gpuq --help` lists no command {name!r}")
            continue
        if name == gpuq.COMPLETION:  # gpuq's own: tests/unit/test_gpuq.py
            continue
        shown = gpuq.options(gpuq.help_text(gpuq.module_for(name, rest)))
        for option in (w.split("=", 1)[0] for w in rest if w.startswith("--")):
            if option not in shown:
                problems.append(f"{where}: `{command}`: gpuq {name} has no option {option}")
    return problems, seen


def run_as_main(module: str, *args: str) -> tuple[object, str, str]:
    """`python -m module args` in this interpreter, the way `-m` runs it (runpy, as __main__):
    its exit code, stdout and stderr. (A new interpreter per tool cost ~0.3 s each.)"""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = [module, *args]
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            warnings.catch_warnings(),
        ):
            # runpy warns that the module was imported before (by other tests): the copy it
            # runs as __main__ is a fresh one all the same.
            warnings.simplefilter("ignore", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        code: object = 0
    except SystemExit as exit:
        code = exit.code or 0
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


# --- the tests ------------------------------------------------------------------------------


DOCS = [read(p) for p in documents()]


def fail_with(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_the_docs_are_found() -> None:
    names = {d.path.relative_to(ROOT).as_posix() for d in DOCS}
    assert {"README.md", "docs/what-if.md", "docs/development.md", "sandbox/README.md"} <= names
    assert not any(n.startswith(NOT_DOCS) for n in names)


def test_every_relative_link_reaches_a_file_and_a_heading() -> None:
    fail_with([p for doc in DOCS for p in link_problems(doc)])


def test_every_path_the_docs_mention_exists() -> None:
    fail_with([p for doc in DOCS for p in path_problems(doc)])


def test_every_make_target_the_docs_name_exists() -> None:
    problems, seen = [], set()
    for doc in DOCS:
        found, named = make_problems(doc)
        problems += found
        seen |= named
    fail_with(problems)
    # The docs' commands were found and read: the everyday targets are among those checked.
    assert {"demo", "test", "test-unit", "promote", "what-if", "lint"} <= seen, seen


def test_every_gpuq_command_the_docs_name_is_listed_with_its_options() -> None:
    listed = gpuq_listing()
    problems, seen = [], set()
    for doc in DOCS:
        found, named = gpuq_problems(doc, listed)
        problems += found
        seen |= named
    fail_with(problems)
    assert {"status", "record", "what-if"} <= seen, seen


def test_shown_tool_commands_exist_with_their_options() -> None:
    helps: dict[str, str] = {}
    for doc in DOCS:
        for where, command in shown_commands(doc):
            words = command.split()
            if words[:2] != ["python", "-m"] or len(words) < 3:
                continue
            if not words[2].startswith("gpu_queues.tools."):
                continue
            if words[2] not in helps:
                code, stdout, stderr = run_as_main(words[2], "--help")
                assert code == 0, f"{where}: `{command}`: {stderr}"
                helps[words[2]] = stdout
            for option in (w.split("=", 1)[0] for w in words[3:] if w.startswith("--")):
                assert option in helps[words[2]], f"{where}: `{command}`: no {option}"
    assert {"gpu_queues.tools.quota_diff", "gpu_queues.tools.promote"} <= set(helps)


def test_the_readme_stays_a_front_door() -> None:
    """The README is the package's description too (pyproject.toml): what a user reads first,
    the rest in docs/ (issue 38: at most 15 KB, no table cell of a page's length)."""
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 15 * 1024, f"README.md is {len(readme):,} bytes: move detail to docs/"
    doc = Doc(ROOT / "README.md", readme.decode())
    for number, line in enumerate(doc.prose.split("\n"), 1):
        if line.startswith("|"):
            longest = max(len(cell.strip()) for cell in line.strip("|").split("|"))
            assert longest <= 300, f"README.md:{number}: a table cell of {longest} characters"


# --- the checks can fail ------------------------------------------------------------------------


BROKEN = """\
# A made-up doc

## Its `second` heading: a -> b

## Its `second` heading: a -> b

See [the guide](docs/guide.md), [a heading](docs/guide.md#how-it-works),
[a missing heading](docs/guide.md#how-it-fails), [here](#its-second-heading-a---b-1),
[not here](#its-second-heading-a---b-2), [a folder](docs/), and [the web](https://example.com).
A [missing file](docs/gone.md) and `[in code](docs/gone.md)` (code, not a link).
[ref]: docs/also-gone.md

The fast engine is in docs/guide.md and docs/engine.py, the mix in `docs/<stack>/mix.yaml`.

```sh
make demo STACK=x   # fine
make dmeo
gpuq status --stack x
gpuq statsu
gpuq what-if --no-such-option
```

Run `make test-<suite>`, `make test SERIAL=1`, `make
lint lnit` and `gpuq whatif`.
"""


@pytest.fixture
def broken_tree(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## How it works\n")
    (tmp_path / "Makefile").write_text(
        ".PHONY: demo test lint\nVENV := .venv\ndemo: venv\n\ttrue\ntest lint:\n\ttrue\n"
    )
    (tmp_path / "README.md").write_text(BROKEN)
    return tmp_path


def test_the_checks_name_every_made_up_problem_by_file_and_line(broken_tree: Path) -> None:
    doc = read(broken_tree / "README.md", broken_tree)
    assert documents(broken_tree) == [broken_tree / "README.md", broken_tree / "docs/guide.md"]
    assert link_problems(doc) == [
        "README.md:8: link to docs/guide.md#how-it-fails: no heading of docs/guide.md makes "
        "#how-it-fails",
        "README.md:9: link to #its-second-heading-a---b-2: no heading of README.md makes "
        "#its-second-heading-a---b-2",
        "README.md:10: link to docs/gone.md: no such file",
        "README.md:11: link to docs/also-gone.md: no such file",
    ]
    assert path_problems(doc) == ["README.md:13: docs/engine.py: no such path"]
    problems, seen = make_problems(doc)
    assert problems == [
        "README.md:17: `make dmeo`: the Makefile has no target 'dmeo'",
        "README.md:23: `make lint lnit`: the Makefile has no target 'lnit'",
    ]
    assert seen == {"demo", "dmeo", "test", "lint", "lnit"}
    problems, seen = gpuq_problems(doc, gpuq_listing())
    assert problems == [
        "README.md:19: `gpuq statsu`: `gpuq --help` lists no command 'statsu'",
        "README.md:20: `gpuq what-if --no-such-option`: gpuq what-if has no option "
        "--no-such-option",
        "README.md:24: `gpuq whatif`: `gpuq --help` lists no command 'whatif'",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("What `make demo` shows", "what-make-demo-shows"),
        ("Example: metrics (`kueue.metrics`)", "example-metrics-kueuemetrics"),
        ("v0.18.3 → v0.18.4 (patch)", "v0183--v0184-patch"),
        ("5. How long a PR waits for its preview", "5-how-long-a-pr-waits-for-its-preview"),
        ("`PULUMI_SKIP_CHECKPOINTS` and _emphasis_", "pulumi_skip_checkpoints-and-emphasis"),
        ("[Links](x.md) keep their text", "links-keep-their-text"),
    ],
)
def test_anchors_are_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
