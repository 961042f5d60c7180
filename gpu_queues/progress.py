"""A line on the terminal that says what a long command is doing and for how long (a replay, the
advisor's search, a recording), redrawn in place. Off a terminal (a pipe, a CI log) it draws
nothing: what a command prints there is the same with it or without it.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

SPINNER = "|/-\\"
CLEAR = "\r\x1b[K"  # to the start of the line, and erase it


def on_a_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal that redraws a line (not a pipe, a file or TERM=dumb)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False
    return tty and os.environ.get("TERM") != "dumb"


def elapsed_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m{whole % 60:02d}s"


class Progress:
    """`with Progress("what-if") as progress:` then `progress.update("replaying base")` as the
    work moves on, and `progress.say(line)` for each line the command prints on stderr
    meanwhile (printed as is; on a terminal above the progress line). A thread redraws the
    line every `interval` seconds so the time keeps counting while the work blocks."""

    def __init__(
        self,
        what: str,
        stream: TextIO | None = None,
        *,
        enabled: bool = True,
        interval: float = 0.5,
    ) -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.on = enabled and on_a_terminal(self.stream)
        self.interval = interval
        self.text = ""
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._turn = 0

    def __enter__(self) -> Progress:
        if self.on:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def update(self, text: str) -> None:
        """What the command is doing now."""
        with self._lock:
            self.text = text
            if self.on:
                self._draw()

    def say(self, line: str) -> None:
        """A line of the command's own output on stderr."""
        with self._lock:
            if self.on:
                self.stream.write(CLEAR)
            self.stream.write(line + "\n")
            if self.on:
                self._draw()
            self.stream.flush()

    def close(self) -> None:
        """Stop redrawing and leave the terminal's line empty."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self.on:
                self.stream.write(CLEAR)
                self.stream.flush()
                self.on = False

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self.on:
                    self._draw()

    def _draw(self) -> None:
        self._turn += 1
        spin = SPINNER[self._turn % len(SPINNER)]
        shown = f"{spin} {self.what}: {self.text} ({elapsed_text(time.monotonic() - self.started)})"
        # One terminal line at most: a line that wraps is not redrawn in place.
        self.stream.write(CLEAR + shown[: self._width() - 1])
        self.stream.flush()

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = shutil.get_terminal_size().columns
        return columns if columns > 1 else 80  # a terminal that does not say (a bare pty)
