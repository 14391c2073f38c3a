"""What ``mcp-notebook serve`` shows on stderr while the notebook starts.

Which step runs (the kernel, cell n of N, the server), so a notebook that loads a model for
a minute does not look hung: a progress bar redrawn in place when stderr is a terminal,
plain lines otherwise (a client's log file). The notebook's own output goes under the cell
that printed it, each line behind :data:`GUTTER`, so it cannot be mistaken for ours.
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO

PREFIX = "mcp-notebook:"
GUTTER = "  | "  # before each line the notebook printed (ASCII: any console shows it)
BAR = 20  # characters
REDRAW = 0.5  # seconds between redraws of the bar's clock
STILL_RUNNING = (10, 30, 60)  # seconds: plain lines say a long step still runs, then every 60


class StartView:
    """Shows the start of one notebook on ``stream``; ``live``: redraw a bar in place."""

    def __init__(self, name: str, stream: TextIO, live: bool | None = None) -> None:
        self.name, self.stream = name, stream
        self.live = _is_terminal(stream) if live is None else live
        self._step = (0, 1, "starting")
        self._began = self._step_began = time.monotonic()
        self._drawn = 0  # characters of the bar on screen (0: none)
        self._redrawn = 0.0
        self._said_still = 0  # the last "still running" mark given, in seconds
        self._line_start = True  # the notebook's output so far ended with a newline

    # -- what the start reports ----------------------------------------------------------
    def step(self, done: int, total: int, text: str) -> None:
        self._end_output_line()
        self._step = (done, total, text)
        self._step_began = time.monotonic()
        self._said_still = 0
        if self.live:
            self._draw()
        else:
            self._write(f"{PREFIX} {self.name}: {text}\n")

    def output(self, text: str) -> None:
        """Text the notebook printed, under the current cell."""
        if not text:
            return
        self._erase()
        lines = text.splitlines(keepends=True)
        shown = [(GUTTER if self._line_start or i else "") + line for i, line in enumerate(lines)]
        self._line_start = text.endswith(("\n", "\r"))
        self._write("".join(shown))
        if self.live and self._line_start:
            self._draw()

    def tick(self) -> None:
        """Called while a step runs: keeps its clock (or its "still running" lines) going."""
        now = time.monotonic()
        running = now - self._step_began
        if self.live:
            if now - self._redrawn >= REDRAW and self._line_start:
                self._draw()
            return
        mark = next((m for m in STILL_RUNNING if m > self._said_still), self._said_still + 60)
        if running >= mark:
            self._said_still = mark
            self._end_output_line()
            self._write(f"{PREFIX} {self.name}: {self._step[2]}: still running ({mark} s)\n")

    def finish(self, text: str) -> None:
        """The start is over (serving, or failed): the last line, in place of the bar."""
        self._end_output_line()
        self._erase()
        took = time.monotonic() - self._began
        self._write(f"{PREFIX} {text} ({took:.1f} s)\n")

    # -- drawing -------------------------------------------------------------------------
    def _draw(self) -> None:
        done, total, text = self._step
        filled = BAR * min(done, total) // max(total, 1)
        running = time.monotonic() - self._step_began
        bar = "#" * filled + "." * (BAR - filled)
        line = f"{PREFIX} {self.name} [{bar}] {text}  {running:.0f} s"
        width = shutil.get_terminal_size((80, 24)).columns - 1
        line = line[:width]
        # Spaces, not an ANSI erase: every console understands them.
        self._write("\r" + line + " " * max(0, self._drawn - len(line)))
        self._drawn = len(line)
        self._redrawn = time.monotonic()

    def _erase(self) -> None:
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _end_output_line(self) -> None:
        if not self._line_start:
            self._write("\n")
            self._line_start = True

    def _write(self, text: str) -> None:
        try:
            try:
                self.stream.write(text)
            except UnicodeEncodeError:  # a console that cannot show it: escapes instead
                encoding = getattr(self.stream, "encoding", None) or "ascii"
                self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr costs the start nothing
            pass


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def first_line(source: str, width: int = 60) -> str:
    """A cell's first non-blank line, cut to ``width``: enough to tell which cell runs."""
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= width else line[: width - 3] + "..."
