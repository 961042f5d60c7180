"""Create or update one marked comment on a pull request (the quota diff of one stack).

    python -m gpu_queues.tools.pr_comment --pr 42 --marker quota-diff-staging --body-file
    quota-diff.md \
        [--kueue-diff staging@BASE_SHA staging]
    python -m gpu_queues.tools.pr_comment --pr 42 --marker quota-diff-staging --section what-if \
        --body-file what-if.md

Needs GITHUB_TOKEN and GITHUB_REPOSITORY (set in every Actions job). The marker is an HTML
comment in the body, so a new push edits the earlier comment instead of adding another.
Jobs that run side by side can share one comment: each --section is kept between its own
markers below the main body, and an update of the main body or of one section leaves the
others as they are, whichever job posts first. A section's warning lines (the what-if's
regressions, between gpu_queues.whatif.regressions' markers) are lifted to the top of the
comment, above the main body, and go back into their section when it is read again. Above
even those, first of all: the main body's stopPolicy changes (quota-diff's block between
gpu_queues.kueue.stop's markers: a team that stops admitting or whose running jobs will be
evicted), wherever the body had them (--kueue-diff puts its section above the body).
With --kueue-diff, a change of the stack's Kueue version or manifest sha256 between the two
sides comes first in the comment, prominently (gpu_queues.tools.kueue_diff): old -> new version, the
release objects that change, what changes for queue owners.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpu_queues.escape import text
from gpu_queues.kueue import stop
from gpu_queues.whatif.regressions import BEGIN, END

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


_SECTION = re.compile(r"\n?<!-- section:([\w.-]+) -->\n(.*?)\n<!-- /section:\1 -->", re.S)
# A section's warning lines (the what-if's regressions, gpu_queues.whatif.regressions) are
# lifted to the top of the comment, above the main body, between lead markers of its name.
_WARNINGS = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END) + r"\n?", re.S)
_LEAD = re.compile(r"<!-- lead:([\w.-]+) -->\n(.*?)<!-- /lead:\1 -->\n?", re.S)
# The main body's stopPolicy changes, first of the whole comment.
_STOP = re.compile(re.escape(stop.BEGIN) + r"\n.*?" + re.escape(stop.END) + r"\n*", re.S)


def split(text: str, tag: str) -> tuple[str, dict[str, str]]:
    """A marked comment's main body and its sections (name -> body), in their order; a
    section's lifted warnings are back at the head of its body."""
    rest = text.split(tag, 1)[1].removeprefix("\n") if tag in text else text
    leads = {m.group(1): m.group(2) for m in _LEAD.finditer(rest)}
    rest = _LEAD.sub("", rest)
    sections = {m.group(1): leads.get(m.group(1), "") + m.group(2) for m in _SECTION.finditer(rest)}
    return _SECTION.sub("", rest), sections


def compose(tag: str, main: str, sections: dict[str, str]) -> str:
    """The comment: the main body's stopPolicy changes first, the sections' warnings, then
    the rest of the main body, then the sections."""
    first = _STOP.search(main)
    if first:
        main = main[: first.start()] + main[first.end() :]
    leads, bodies = [first.group(0).rstrip("\n") + "\n"] if first else [], {}
    for name, body in sections.items():
        found = _WARNINGS.search(body)
        if found:
            leads.append(f"<!-- lead:{name} -->\n{found.group(0)}<!-- /lead:{name} -->")
            body = body[: found.start()] + body[found.end() :]
        bodies[name] = body
    parts = [tag, *leads, main]
    parts += [f"<!-- section:{n} -->\n{b}\n<!-- /section:{n} -->" for n, b in bodies.items()]
    return "\n".join(parts)


def upsert(
    request: Request, repo: str, pr: int, marker: str, body: str, section: str | None = None
) -> str:
    """Edit the comment carrying `marker`, or post a new one; returns "updated" or "created".
    With `section`, only that section of it is set; without, only the main body."""
    tag = f"<!-- {marker} -->"

    def updated(old: str) -> str:
        main, sections = split(old, tag)
        if section is None:
            return compose(tag, body, sections)
        return compose(tag, main, {**sections, section: body})

    text = updated(tag + "\n")
    page = 1
    while True:
        url = f"{API}/repos/{repo}/issues/{pr}/comments?per_page=100&page={page}"
        comments = request("GET", url, None) or []
        for comment in comments:
            if tag in str(comment.get("body", "")):
                request(
                    "PATCH",
                    f"{API}/repos/{repo}/issues/comments/{comment['id']}",
                    {"body": updated(str(comment["body"]))},
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
    from gpu_queues.config.stackfile import ROOT, StackFileError
    from gpu_queues.tools import kueue_diff

    root = root or ROOT
    try:
        old_side, new_side = kueue_diff.load_side(old, root), kueue_diff.load_side(new, root)
    except StackFileError as error:
        return f"_Kueue version not compared: {text(error)}_\n\n{body}"
    part = kueue_diff.section(old_side, new_side, new.partition("@")[0])
    return f"{part}\n{body}" if part else body


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_queues.tools.pr_comment", description=__doc__
    )
    parser.add_argument("--pr", type=int, required=True)
    parser.add_argument("--marker", required=True)
    parser.add_argument("--body-file", type=Path, required=True)
    parser.add_argument(
        "--section", help="set only this named section of the comment (letters, digits, .-_)"
    )
    parser.add_argument(
        "--kueue-diff",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="STACK@BASE and STACK: put the stack's Kueue version change on top",
    )
    args = parser.parse_args(argv)
    if args.section is not None and not re.fullmatch(r"[\w.-]+", args.section):
        parser.error(f"--section {args.section!r}: letters, digits, '.', '-' and '_' only")
    token, repo = os.environ.get("GITHUB_TOKEN"), os.environ.get("GITHUB_REPOSITORY")
    if not token or not repo:
        print("pr_comment: GITHUB_TOKEN and GITHUB_REPOSITORY must be set", file=sys.stderr)
        return 2
    body = args.body_file.read_text(encoding="utf-8")
    if args.kueue_diff:
        body = with_kueue_diff(body, *args.kueue_diff)
    print(upsert(github_request(token), repo, args.pr, args.marker, body, args.section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
