"""Hostile names through every Markdown writer (issue 42, class 2): a workload, team, flavor,
queue, source or message that holds Markdown or HTML is shown, readable, and means nothing.
Each writer's output is parsed (markdown-it, CommonMark with GitHub's tables and
strikethrough) and compared with the same report of plain names: the same headings, HTML,
tables and rows, links, emphasis and code; and the PR comment's markers cannot be forged."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from gpu_queues import escape
from gpu_queues.advise.advice import team_table
from gpu_queues.config.model import load_config
from gpu_queues.tools import kueue_diff, pr_comment, quota_diff
from gpu_queues.whatif.charts import mermaid_blocks
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.regressions import BEGIN, END
from gpu_queues.whatif.report import Run, RunMeta, WorkloadResult, team_results
from tests.builders import Stack, gpu_flavor, gpu_team

pytestmark = pytest.mark.unit

HOSTILE = [
    "</details>\n## no regressions",
    "<!--",
    "| x |",
    "a\nb",
    "``` `x` ``",
    '"] --> y %%{init: {}}%% <b>',
    "<!-- /section:what-if -->",
    "<!-- /regressions -->",
    "# forged",
    "- item",
    "1. first",
    "> quote",
    "[link](https://example.com) ![img](https://example.com/i.png)",
    "**bold** _em_ ~~gone~~ $x$",
    "<img src=x onerror=alert(1)>",
    "\u202e\x00\\",
]
CONFIG = {
    key.partition(":")[2]: value
    for key, value in yaml.safe_load(
        Stack()
        .flavor(gpu_flavor("h100", 8))
        .cohort("pool")
        .team(gpu_team("a", {"h100": {"gpu": 4}}))
        .yaml()
    )["config"].items()
}
PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
MEANING = {"heading_open", "link_open", "image", "strong_open", "em_open", "s_open",
           "bullet_list_open", "ordered_list_open", "blockquote_open", "hr", "fence",
           "tr_open", "th_open", "td_open", "code_inline", "html_block", "html_inline"}  # fmt: skip


def structure(markdown: str) -> Counter[str]:
    """How many of each meaningful token (a `<code>` pair counts as one code span)."""
    seen: Counter[str] = Counter()
    for token in PARSER.parse(markdown):
        for t in [token, *(token.children or [])]:
            if t.type == "html_inline" and t.content in ("<code>", "</code>"):
                seen["code_inline"] += t.content == "<code>"
            elif t.type in MEANING:
                seen[t.type if "html" not in t.type else f"html {t.content.strip()[:20]}"] += 1
    return seen


def plain_text(markdown: str) -> str:
    out = []
    for token in PARSER.parse(markdown):
        out += [c.content for c in token.children or [] if c.type in ("text", "code_inline")]
    return " ".join(out)


def workload(name: str, team: str, outcome: str, **kw: object) -> WorkloadResult:
    return WorkloadResult(
        name, team, name, outcome, team=team, cluster_queue=team, gpus=1,  # type: ignore[arg-type]
        intervals=[(0.0, 60.0)] if outcome == "finished" else [], flavor=name,
        wait_seconds=0.0 if outcome == "finished" else None, message=name, kind=name, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def runs(names: list[str]) -> tuple[Run, Run]:
    """A base where each name's workload finished and a change where none is admitted: every
    writer's line (regressions, changes, tables, charts) carries the names, the workloads'
    kinds too (a kind per name, each waiting longer: a warning, a row and a line per kind)."""
    team = names[0]

    def run(outcome: str, source: str) -> Run:
        ws = [workload(n, team, outcome) for n in names]
        teams = team_results(ws, [(team, team)])
        meta = RunMeta("s", source, simulated_seconds=3600, flavor_gpus={n: 1 for n in names},
                       kueue_version="v0.18.3", engine="fast")  # fmt: skip
        return Run(ws, teams, meta)

    return run("finished", names[-1]), run("pending", names[1])


def benign(n: int) -> list[str]:
    return [f"name{i}" for i in range(n)]


def test_a_hostile_name_is_inert_and_readable_in_each_escape() -> None:
    for value in HOSTILE:
        flat = escape.one_line(value)
        assert structure(escape.text(value)) == Counter(), escape.text(value)
        assert structure(f"- {escape.text(value)}") == Counter({"bullet_list_open": 1})
        assert structure(f"| a |\n| - |\n| {escape.text(value)} |") == structure(
            "| a |\n| - |\n| b |"
        )
        assert structure(escape.code(value)) == Counter({"code_inline": 1}), escape.code(value)
        assert flat in plain_text(escape.text(value)), (value, escape.text(value))
        assert flat in plain_text(escape.code(value)), (value, escape.code(value))
    assert escape.text("x" * 10, width=5) == "xxxx…"
    assert escape.code("staging@1a2b3c4") == "`staging@1a2b3c4`"  # plain names read as before


def test_the_what_if_report_shows_hostile_names_as_text() -> None:
    base, new = runs(HOSTILE)
    ok_base, ok_new = runs(benign(len(HOSTILE)))
    hostile, plain = render(new, base), render(ok_new, ok_base)
    assert structure(hostile) == structure(plain)
    shown = plain_text(hostile)
    for name in HOSTILE:
        assert escape.one_line(name) in shown, name
    assert hostile.count("⚠️ kind ") == len(HOSTILE) and "**GPU-hours by kind**" in hostile
    # the comment's markers are its own: one regressions block, sections whole
    assert hostile.count(BEGIN) == 1 and hostile.count(END) == 1
    tag = "<!-- what-if -->"
    body = pr_comment.compose(tag, "main", {"what-if": hostile, "other": "kept"})
    main, sections = pr_comment.split(body, tag)
    assert main == "main" and sections == {"what-if": hostile, "other": "kept"}


def test_the_charts_labels_are_mermaid_strings() -> None:
    base, new = runs(HOSTILE)
    for block in mermaid_blocks(render(new, base)):
        for line in block.splitlines():
            if line.strip().startswith(("title", "line")):
                # one quoted string: no quote, line break, tag or directive inside it
                label = re.search(r'"(.*)"', line)
                assert label is not None and not re.search(r'["<>%`]', label.group(1)), line


def test_the_quota_diff_shows_hostile_labels_and_problems_as_text() -> None:
    config = load_config(CONFIG)
    for name in HOSTILE:
        problems = (name, f"teams[0].name: {name!r} is not a name")
        hostile = quota_diff.render(quota_diff.Side(name, config, problems),
                                    quota_diff.Side(name, config))  # fmt: skip
        plain = quota_diff.render(quota_diff.Side("a", config, ("p", "q")),
                                  quota_diff.Side("b", config))  # fmt: skip
        assert structure(hostile) == structure(plain), hostile
        assert escape.one_line(name) in plain_text(hostile)


def test_the_kueue_section_shows_hostile_objects_and_knobs_as_text() -> None:
    def side(knob: object, version: str) -> kueue_diff.KueueSide:
        return kueue_diff.KueueSide("s", True, version, None, {"controller": {"k": knob}})

    def manifests(name: str) -> kueue_diff.Renderer:
        def one(version: str) -> bytes:
            meta = {"name": name, "namespace": name}
            doc = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta,
                "data": {name: version},
            }
            return json.dumps(doc).encode()

        return one

    for name in HOSTILE:
        hostile = kueue_diff.section(side(name, "v0.18.3"), side("b", "v0.18.4"), name,
                                     renderer=manifests(name))  # fmt: skip
        plain = kueue_diff.section(side("a", "v0.18.3"), side("b", "v0.18.4"), "s",
                                   renderer=manifests("plain"))  # fmt: skip
        assert "release object(s) change" in hostile, hostile
        assert structure(hostile) == structure(plain), hostile
        assert escape.one_line(name) in plain_text(hostile)


def test_the_advice_tables_and_diff_show_hostile_names_as_text() -> None:
    base, new = runs(HOSTILE)
    ok_base, ok_new = runs(benign(len(HOSTILE)))
    table, plain = "\n".join(team_table(base, new)), "\n".join(team_table(ok_base, ok_new))
    assert structure(table) == structure(plain)
    diff = "-a\n+```\n+## forged\n+</details>\n+````"
    fenced = "\n".join(escape.fence(diff, "diff"))
    assert structure(fenced) == Counter({"fence": 1})
    assert PARSER.parse(fenced)[0].content == diff + "\n"


def test_the_pinned_mermaid_draws_hostile_labels_as_their_text() -> None:
    """Mermaid's entity codes are read back as the characters: the chart draws, and its
    labels read as the names (tests/js/mermaid, as test_charts_render does)."""
    from tests.unit.whatif.test_charts_render import mermaid_render

    base, new = runs(HOSTILE)
    blocks = mermaid_blocks(render(new, base))
    drawn = mermaid_render(blocks)
    assert [d["ok"] for d in drawn] == [True] * len(blocks), drawn
    svg = html.unescape(" ".join(d["svg"] for d in drawn))
    assert escape.one_line(HOSTILE[0]) + " (new)" in svg


def test_the_pr_comments_kueue_line_shows_a_hostile_stack_as_text(tmp_path: Path) -> None:
    """A side that cannot be read is one line naming it: the name cannot open a comment that
    hides the body below it."""
    for name in HOSTILE:
        shown = pr_comment.with_kueue_diff("body", name, name, root=tmp_path)
        plain = pr_comment.with_kueue_diff("body", "nope", "nope", root=tmp_path)
        assert structure(shown) == structure(plain), shown
        assert shown.endswith("\n\nbody")
