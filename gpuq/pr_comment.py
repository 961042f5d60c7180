"""Create or update one marked comment on a pull request (the quota diff of one stack).

    python -m gpuq.pr_comment --pr 42 --marker quota-diff-staging --body-file quota-diff.md

Needs GITHUB_TOKEN and GITHUB_REPOSITORY (set in every Actions job). The marker is an HTML
comment in the body, so a new push edits the earlier comment instead of adding another.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

API = "https://api.github.com"
Request = Callable[[str, str, dict[str, Any] | None], Any]


def github_request(token: str) -> Request:
    def request(method: str, url: str, body: dict[str, Any] | None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Accept", "application/vnd.github+json")
        with urllib.request.urlopen(req, timeout=30) as response:
            return json.loads(response.read() or b"null")

    return request


def upsert(request: Request, repo: str, pr: int, marker: str, body: str) -> str:
    """Edit the comment carrying `marker`, or post a new one; returns "updated" or "created"."""
    tag = f"<!-- {marker} -->"
    text = f"{tag}\n{body}"
    page = 1
    while True:
        url = f"{API}/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}"
        comments = request("GET", url, None) or []
        for comment in comments:
            if tag in str(comment.get("body", "")):
                request(
                    "PATCH", f"{API}/repos/{repo}/issues/comments/{comment['id']}", {"body": text}
                )
                return "updated"
        if len(comments) < 100:
            break
        page += 1
    request("POST", f"{API}/repos/{repo}/issues/{pr}/comments", {"body": text})
    return "created"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuq.pr_comment", description=__doc__)
    parser.add_argument("--pr", type=int, required=True)
    parser.add_argument("--marker", required=True)
    parser.add_argument("--body-file", type=Path, required=True)
    args = parser.parse_args(argv)
    token, repo = os.environ.get("GITHUB_TOKEN"), os.environ.get("GITHUB_REPOSITORY")
    if not token or not repo:
        print("pr_comment: GITHUB_TOKEN and GITHUB_REPOSITORY must be set", file=sys.stderr)
        return 2
    body = args.body_file.read_text(encoding="utf-8")
    print(upsert(github_request(token), repo, args.pr, args.marker, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
