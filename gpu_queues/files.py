"""Where the project's writers may write: inside the project, links resolved. A stack file (or
pins.env, or a rendered manifest) that is a symbolic link is written through to the file it
names only when that file is in the project too; a link that leads out of it is refused with
both paths named, so `make promote` or `make pin-kueue` can never replace a file elsewhere.
`make record` holds its output folder to the same rule: a file it writes lies in OUT."""

from __future__ import annotations

from pathlib import Path


class OutsideProject(Exception):
    """A write would land outside the project folder."""


def inside(path: Path, root: Path, what: str = "the project") -> Path:
    """The file `path` names, links resolved, when it lies inside `root` (`what` names `root`
    in the message); else OutsideProject."""
    target, base = path.resolve(), root.resolve()
    if not target.is_relative_to(base):
        via = f" (a link to {target})" if target != path.absolute() else ""
        raise OutsideProject(
            f"{path}{via} is outside {what} {base}: refusing to write there; "
            "replace the link with the file itself"
        )
    return target
