"""Where the project's writers may write: inside the project, links resolved. A stack file (or
pins.env, or a rendered manifest) that is a symbolic link is written through to the file it
names only when that file is in the project too; a link that leads out of it is refused with
both paths named, so `make promote` or `make pin-kueue` can never replace a file elsewhere.
`make record` holds its output folder to the same rule: a file it writes lies in OUT.

And what readers may open: a file a user or a config names is read only when it is a regular
file (a FIFO would block the reader forever, a device never end) of bounded size, `read_bytes`
below, the one way the tools open such a path."""

from __future__ import annotations

import os
import stat
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


class NotReadable(Exception):
    """A file named by a user or a config cannot be read; the message names it and why,
    `reason` only why (for a caller that names the file its own way)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _cannot(shown: str, reason: str) -> NotReadable:
    return NotReadable(f"cannot read {shown}: {reason}", reason)


MAX_READ: int = 100_000_000  # 100 MB: larger than any stack file, kubeconfig or manifest

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def read_bytes(path: Path, what: str = "", max_bytes: int = MAX_READ) -> bytes:
    """The bytes of `path` (links followed), when it is a regular file of at most `max_bytes`;
    else NotReadable naming `what` (or the path) and the reason. The file is opened without
    blocking and checked by its descriptor, so a FIFO swapped in after a check cannot hang it."""
    shown = what or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _cannot(shown, "no such file") from None
    except OSError as exc:
        raise _cannot(shown, str(exc.strerror)) from None
    mode = os.fstat(fd)
    if not stat.S_ISREG(mode.st_mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode.st_mode)), "not a file")
        raise _cannot(shown, f"it is {kind}, not a regular file")
    with os.fdopen(fd, "rb") as file:
        try:
            data = file.read(max_bytes + 1)  # not st_size: a file may grow after the check
        except OSError as exc:
            raise _cannot(shown, str(exc.strerror)) from None
    if len(data) > max_bytes:
        reason = f"larger than {max_bytes} bytes, so it was not read further"
        raise NotReadable(f"{shown} is {reason}", reason)
    return data


def read_text(path: Path, what: str = "", max_bytes: int = MAX_READ) -> str:
    """read_bytes as UTF-8 text; NotReadable when it is not."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        shown = what or str(path)
        reason = f"not UTF-8 text: {exc.reason} at byte {exc.start}"
        raise NotReadable(f"{shown} is {reason}", reason) from None
