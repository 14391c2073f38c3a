"""Callbacks that must run soon even while a cell holds the kernel's loop.

The monitors and the MCP panel's feed send what changed a moment later (ui/hub.py,
ui/batching.py), on the kernel's loop, or on a short-lived timer thread while a cell holds
that loop (DESIGN.md §3). Where to go is decided when the update is scheduled; a cell that
starts afterwards, before the update is due (Run All: a queued call ran between two cells,
the next cell is long), would hold it on the loop until the cell ends, and with it every
change noted meanwhile: a call queued behind that cell would not be shown as waiting. So
``Later`` keeps what waits on the loop and, as a cell starts (``CellWatch.observe``), moves
it to timer threads, due when it was due. Each callback runs once, on whichever side takes
it first.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from ..protocol.queueing import CellWatch
from ..threads import start_timer


class _Due:
    __slots__ = ("at", "callback")

    def __init__(self, callback: Callable[[], None], at: float) -> None:
        self.callback, self.at = callback, at


class Later:
    """``later(seconds, callback)``, from any thread: ``callback()`` after ``seconds``, on
    ``loop`` while no cell holds it, otherwise on a timer thread."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        cells: CellWatch | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.loop, self.cells, self._clock = loop, cells, clock
        self._lock = threading.Lock()
        self._on_loop: set[_Due] = set()  # scheduled on the loop, not run yet
        self._stop = cells.observe(self._cell_started) if cells is not None else None

    def _held(self) -> bool:
        return self.cells is not None and self.cells.now is not None

    def __call__(self, seconds: float, callback: Callable[[], None]) -> None:
        if self._held():
            start_timer(seconds, callback)
            return
        due = _Due(callback, self._clock() + seconds)
        with self._lock:
            self._on_loop.add(due)
        try:
            self.loop.call_soon_threadsafe(self.loop.call_later, seconds, self._run, due)
        except RuntimeError:  # the loop is closing: the caller is told
            with self._lock:
                self._on_loop.discard(due)
            raise
        if self._held():  # a cell started meanwhile: its start may have missed this one
            self._cell_started()

    def _run(self, due: _Due) -> None:
        """On the loop, when due: run it unless a timer thread has it."""
        with self._lock:
            if due not in self._on_loop:
                return
            self._on_loop.discard(due)
        due.callback()

    def _cell_started(self) -> None:
        """A cell takes the loop (kernel thread): what waits there goes to timers."""
        with self._lock:
            moved, self._on_loop = self._on_loop, set()
        now = self._clock()
        for due in moved:
            start_timer(max(0.0, due.at - now), due.callback)

    def close(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None

    @property
    def waiting(self) -> int:
        """How many callbacks wait on the loop (none once a cell has started)."""
        return len(self._on_loop)
