"""A one-line progress display for long sweeps (no dependency).

    bar = ProgressLine("sweep")         # writes to stderr
    bar(0, 200); ...; bar(37, 200)      # sweep  37/200  18%  4.21 points/s  ETA 0:00:39
    bar.close()

On a terminal the line is redrawn in place (at most every ``interval`` seconds, 0.1 by
default); on a file or pipe one line is written at most every 10 s. The first call's count
is taken as already done (points read back from a database), so the rate and the ETA count
only the points run since.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


def format_eta(seconds: float) -> str:
    """H:MM:SS of a non-negative number of seconds."""
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class ProgressLine:
    """Callable ``(done, total)`` that draws ``label done/total pct rate ETA`` on a stream."""

    def __init__(self, label: str = "sweep", stream: TextIO | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if interval is not None else (0.1 if self.tty else 10.0)
        self.clock = clock
        self.start: tuple[float, int] | None = None
        self.last_draw = -float("inf")
        self.drawn = False

    def line(self, done: int, total: int) -> str:
        """The progress text for ``done`` of ``total`` points at the clock's current time."""
        now = self.clock()
        if self.start is None:
            self.start = (now, done)
        t0, done0 = self.start
        pct = 100.0 * done / total if total else 100.0
        text = f"{self.label}  {done}/{total}  {pct:3.0f}%"
        ran, elapsed = done - done0, now - t0
        if ran > 0 and elapsed > 0:
            rate = ran / elapsed
            text += f"  {rate:.3g} points/s  ETA {format_eta((total - done) / rate)}"
        return text

    def __call__(self, done: int, total: int) -> None:
        text = self.line(done, total)
        now = self.clock()
        if done < total and now - self.last_draw < self.interval and self.drawn:
            return
        self.last_draw = now
        self.drawn = True
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Ends the redrawn line on a terminal."""
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
