"""``serve --watch``'s interrupt, aimed at one reload cell: a no-op for anything else.

The watcher interrupts a reload cell that a save made stale (``watching.py``). A SIGINT
is kernel-wide, and it arrives a moment after the watcher decided: if the cell ended in
between, it would land on what runs next on the main thread (a tool call queued behind
the cell, async calls waiting, the next cell). So each reload cell gets a run token
(``mark(i, run, request)`` arms it; it is the cell's from its start to its end), and the
watcher writes the token it means into the ``request`` file, private to this user (the
kernel's folder), before it sends SIGINT. Whoever handles the SIGINT claims the request:

- during a reload cell, our handler (in place of ipykernel's ``default_int_handler``)
  raises ``KeyboardInterrupt`` if the request names this cell's run, or names nobody (a
  person's Kernel > Interrupt, as today), and does nothing for another run;
- between cells, ``capture.py``'s handler does nothing for a request of the watcher: the
  cell it meant has ended, so the tool calls running or waiting are not touched;
- during our own code lines (``mark`` itself included, ``commit``, ``abort``), the same
  handler as in a cell: a request for the run being armed stops it before its cell.

Not covered: a save decided in the instant after ``mark`` ended and before the cell
started (a tool call may run there, it must not be hurt) is dropped; the cell runs, and
the next save interrupts it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

_SIGINT = signal.SIGINT
NOBODY = object()  # claim(): no request of the watcher (a person's interrupt)


class RunInterrupts:
    """Which reload cell runs on the main thread, and the watcher's request file."""

    def __init__(self) -> None:
        self.request: Path | None = None  # where the watcher writes the run it interrupts
        self.pending: str | None = None  # armed by mark: the run of the next cell
        self.current: str | None = None  # the run whose cell runs now
        self._hooked = False

    # -- the reload's lines (kernel's main thread) ---------------------------------------
    def arm(self, run: str, request: str, shell: Any = None) -> None:
        """``mark(i, run, request)``: the next cell belongs to ``run``."""
        self.request = Path(request)
        claimed = self._read()
        if claimed is not None and claimed != run:
            self._remove()  # left by a SIGINT that was ignored: it must not eat a later one
        self.pending = run
        if shell is not None and not self._hooked:
            shell.events.register("pre_run_cell", self.cell_starts)
            shell.events.register("post_run_cell", self.cell_ends)
            self._hooked = True
        self.take_over()  # mark runs in a cell of its own: it is covered too

    def cell_starts(self, _info: Any = None) -> None:
        self.current, self.pending = self.pending, None
        self.take_over()

    def cell_ends(self, _result: Any = None) -> None:
        self.current = None

    def take_over(self) -> None:
        """Our handler in place of ipykernel's for this cell (it puts back its own after)."""
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(_SIGINT) is signal.default_int_handler:
                signal.signal(_SIGINT, self.on_sigint)

    # -- the SIGINT ----------------------------------------------------------------------
    def on_sigint(self, signum: int, frame: Any) -> None:
        """During a cell: stop it, unless the watcher meant another run."""
        wanted = self.claim()
        if wanted is NOBODY or wanted in (self.current, self.pending):
            signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt

    def claim(self) -> object:
        """The run the watcher's pending request names (taken: it acts once), or NOBODY."""
        if self.request is None:
            return NOBODY
        taken = self.request.with_name(self.request.name + ".taken")
        try:
            os.replace(self.request, taken)  # a request written after this one stays
        except OSError:
            return NOBODY
        try:
            return taken.read_text(encoding="utf-8").strip()
        except OSError:
            return NOBODY
        finally:
            with contextlib.suppress(OSError):
                taken.unlink()

    def _read(self) -> str | None:
        try:
            return None if self.request is None else self.request.read_text("utf-8").strip()
        except OSError:
            return None

    def _remove(self) -> None:
        if self.request is not None:
            with contextlib.suppress(OSError):
                self.request.unlink()


interrupts = RunInterrupts()
