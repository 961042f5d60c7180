"""One PR comment shared by jobs that run side by side: the preview's quota diff (main body)
and the what-if (a section); each update leaves the other's part alone, in either order."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.tools.pr_comment import main, split, upsert

pytestmark = pytest.mark.unit

TAG = "<!-- quota-diff-staging -->"


class FakeGitHub:
    """Keeps the PR's comments, as the API would."""

    def __init__(self) -> None:
        self.comments: list[dict[str, Any]] = [{"id": 1, "body": "Pulumi preview for staging"}]

    def __call__(self, method: str, url: str, body: dict[str, Any] | None) -> Any:
        if method == "GET":
            return list(self.comments) if url.endswith("page=1") else []
        if method == "POST":
            self.comments.append({"id": len(self.comments) + 1, "body": (body or {})["body"]})
        if method == "PATCH":
            target = int(url.rsplit("/", 1)[1])
            next(c for c in self.comments if c["id"] == target)["body"] = (body or {})["body"]
        return {}

    def marked(self) -> list[str]:
        return [c["body"] for c in self.comments if TAG in c["body"]]


@pytest.mark.parametrize("what_if_first", [False, True])
def test_the_quota_diff_and_the_what_if_share_one_comment_in_either_order(
    what_if_first: bool,
) -> None:
    gh = FakeGitHub()
    posts = [
        lambda body: upsert(gh, "o/r", 7, "quota-diff-staging", body),
        lambda body: upsert(gh, "o/r", 7, "quota-diff-staging", body, section="what-if"),
    ]
    diff, whatif = ("| quota diff v1 |", "### What-if v1")
    order = (
        [(posts[1], whatif), (posts[0], diff)]
        if what_if_first
        else [(posts[0], diff), (posts[1], whatif)]
    )
    assert [post(body) for post, body in order] == ["created", "updated"]
    (text,) = gh.marked()
    assert split(text, TAG) == (diff, {"what-if": whatif})
    # The next push: each job edits its own part again, in place.
    assert posts[1]("### What-if v2") == "updated"
    assert posts[0]("| quota diff v2 |") == "updated"
    (text,) = gh.marked()
    assert split(text, TAG) == ("| quota diff v2 |", {"what-if": "### What-if v2"})
    assert text.startswith(TAG + "\n| quota diff v2 |\n<!-- section:what-if -->\n")
    assert len(gh.comments) == 2


def test_a_section_never_swallows_the_main_body_or_another_section() -> None:
    gh = FakeGitHub()
    upsert(gh, "o/r", 7, "quota-diff-staging", "main\n\nwith | pipes |")
    upsert(gh, "o/r", 7, "quota-diff-staging", "a\nb", section="what-if")
    upsert(gh, "o/r", 7, "quota-diff-staging", "c", section="other")
    upsert(gh, "o/r", 7, "quota-diff-staging", "a2", section="what-if")
    (text,) = gh.marked()
    assert split(text, TAG) == ("main\n\nwith | pipes |", {"what-if": "a2", "other": "c"})


def _cli_env(tmp_path, monkeypatch, gh: FakeGitHub) -> str:
    """A body file, the Actions variables, and the API answered by `gh`; the body's path."""
    body = tmp_path / "b.md"
    body.write_text("### What-if v1")
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setattr("gpu_queues.tools.pr_comment.github_request", lambda token: gh)
    return str(body)


def test_a_section_name_that_could_break_the_markers_is_refused(
    tmp_path, monkeypatch, capsys
) -> None:
    gh = FakeGitHub()
    body = _cli_env(tmp_path, monkeypatch, gh)
    argv = ["--pr", "1", "--marker", "quota-diff-staging", "--body-file", body]
    with pytest.raises(SystemExit) as refused:
        main([*argv, "--section", "a -->"])
    # argparse's usage error (2), naming the value: not an unknown option, not a crash.
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "--section 'a -->': letters, digits, '.', '-' and '_' only" in err
    assert "unrecognized arguments" not in err
    assert gh.marked() == [], "nothing is posted"


def test_the_cli_sets_only_the_named_section(tmp_path, monkeypatch, capsys) -> None:
    gh = FakeGitHub()
    body = _cli_env(tmp_path, monkeypatch, gh)
    upsert(gh, "o/r", 1, "quota-diff-staging", "| quota diff v1 |")
    argv = ["--pr", "1", "--marker", "quota-diff-staging", "--body-file", body]
    assert main([*argv, "--section", "what-if"]) == 0
    assert capsys.readouterr().out == "updated\n"
    (text,) = gh.marked()
    assert split(text, TAG) == ("| quota diff v1 |", {"what-if": "### What-if v1"})
    # Without --section the same body replaces the main body, the section stays.
    assert main(argv) == 0
    (text,) = gh.marked()
    assert split(text, TAG) == ("### What-if v1", {"what-if": "### What-if v1"})


def test_a_stop_policy_change_is_the_first_thing_the_comment_says() -> None:
    """quota-diff's stopPolicy block stays on top of the comment: above the Kueue version
    section --kueue-diff puts over the body and above the what-if's lifted regressions, and
    read back and updated again it stays there, once."""
    from gpu_queues.kueue import stop
    from gpu_queues.whatif.regressions import BEGIN, END

    held = f"{stop.BEGIN}\n**⚠️ team vision stops admitting**\n{stop.END}\n"
    body = f"### Kueue v0.18.3 → v0.18.4\n\n{held}\n### Quota diff\n| rows |"
    whatif = f"{BEGIN}\n⚠️ team a: p90 wait up\n{END}\n### What-if"
    gh = FakeGitHub()
    upsert(gh, "o/r", 7, "quota-diff-staging", whatif, section="what-if")
    upsert(gh, "o/r", 7, "quota-diff-staging", body)
    (text,) = gh.marked()
    lines = text.splitlines()
    assert lines[:4] == [TAG, stop.BEGIN, "**⚠️ team vision stops admitting**", stop.END]
    assert text.index(stop.END) < text.index(BEGIN) < text.index("### Kueue v0.18.3")
    # Another push of the what-if alone: the main body, its stop lines first, is kept.
    upsert(gh, "o/r", 7, "quota-diff-staging", whatif.replace("up", "up more"), section="what-if")
    (again,) = gh.marked()
    assert again.splitlines()[:4] == lines[:4] and again.count(stop.BEGIN) == 1
    main, sections = split(again, TAG)
    assert main.startswith(held) and "### Kueue v0.18.3" in main and "| rows |" in main
    assert sections["what-if"].startswith(BEGIN)
