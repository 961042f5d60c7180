"""Create or update one marked comment on a pull request (the quota diff of one stack).

    python -m gpuq.pr_comment --pr 42 --marker quota-diff-staging --body-file quota-diff.md \
        [--kueue-diff staging@BASE_SHA staging]

Needs GITHUB_TOKEN and GITHUB_REPOSITORY (set in every Actions job). The marker is an HTML
comment in the body, so a new push edits the earlier comment instead of adding another.
With --kueue-diff, a change of the stack's Kueue version or manifest sha256 between the two
sides comes first in the comment, prominently (gpuq.kueue_diff): old -> new version, the
release objects that change, what changes for queue owners.
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


def with_kueue_diff(body: str, old: str, new: str, root: Path | None = None) -> str:
    """`body` with the Kueue section of OLD -> NEW on top (unchanged when Kueue does not move;
    a side that cannot be read, such as a stack new in the PR, is said so in one line)."""
    from gpuq import kueue_diff
    from gpuq.stackfile import ROOT, StackFileError

    root = root or ROOT
    try:
        old_side, new_side = kueue_diff.load_side(old, root), kueue_diff.load_side(new, root)
    except StackFileError as error:
        return f"_Kueue version not compared: {error}_\n\n{body}"
    part = kueue_diff.section(old_side, new_side, new.partition("@")[0])
    return f"{part}\n{body}" if part else body


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuq.pr_comment", description=__doc__)
    parser.add_argument("--pr", type=int, required=True)
    parser.add_argument("--marker", required=True)
    parser.add_argument("--body-file", type=Path, required=True)
    parser.add_argument(
        "--kueue-diff",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="STACK@BASE and STACK: put the stack's Kueue version change on top",
    )
    args = parser.parse_args(argv)
    token, repo = os.environ.get("GITHUB_TOKEN"), os.environ.get("GITHUB_REPOSITORY")
    if not token or not repo:
        print("pr_comment: GITHUB_TOKEN and GITHUB_REPOSITORY must be set", file=sys.stderr)
        return 2
    body = args.body_file.read_text(encoding="utf-8")
    if args.kueue_diff:
        body = with_kueue_diff(body, *args.kueue_diff)
    print(upsert(github_request(token), repo, args.pr, args.marker, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
