from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.tools.pr_comment import upsert

pytestmark = pytest.mark.unit


class FakeGitHub:
    def __init__(self, comments: list[dict[str, Any]]) -> None:
        self.comments = comments
        self.calls: list[tuple[str, str, Any]] = []

    def __call__(self, method: str, url: str, body: dict[str, Any] | None) -> Any:
        self.calls.append((method, url, body))
        if method == "GET":
            return self.comments if url.endswith("page=1") else []
        return {}


def test_posts_a_new_comment_when_none_is_marked() -> None:
    gh = FakeGitHub([{"id": 1, "body": "Pulumi preview for dev"}])
    assert upsert(gh, "o/r", 7, "quota-diff-dev", "| table |") == "created"
    method, url, body = gh.calls[-1]
    assert (method, url) == ("POST", "https://api.github.com/repos/o/r/issues/7/comments")
    assert body == {"body": "<!-- quota-diff-dev -->\n| table |"}


def test_edits_the_marked_comment_on_the_next_push() -> None:
    gh = FakeGitHub([{"id": 5, "body": "<!-- quota-diff-prod -->\nold"}])
    assert upsert(gh, "o/r", 7, "quota-diff-prod", "new") == "updated"
    assert gh.calls[-1][:2] == ("PATCH", "https://api.github.com/repos/o/r/issues/comments/5")
