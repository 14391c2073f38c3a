"""A call that waits behind a running cell says so, instead of looking hung.

User code runs on the kernel's main thread (DESIGN.md §3), and a running cell holds it: a
tool call that arrives meanwhile stays "queued" until the cell ends. Many clients give up
on a call that is silent for too long, unless progress arrives (they reset their timeout on
it). So while a call waits:

- its record names what it waits for (``record.behind``, "cell [7]"), which the monitor
  shows as "queued behind cell [7]";
- if the client gave a progress token (``params._meta.progressToken``), it gets
  ``notifications/progress`` with the message "waiting for the running cell [7]": the
  first one :data:`GRACE` seconds after the call was queued, then one every
  :data:`INTERVAL` seconds until the call starts. Their ``progress`` and a Context
  tool's own increase together, as the spec asks (``progress.py``: the notices stay near
  zero, the tool's values are shifted only if they would not exceed them).
  A call with a token that waits although no cell runs (behind a long call, say) hears
  "waiting for the kernel" after :data:`INTERVAL` seconds; once it runs, it hears "paused
  at a breakpoint in TOOL" every :data:`INTERVAL` seconds while it is stopped in the
  kernel's debugger (``record.paused``, kernel/breaks.py).

Why a grace: a cell that awaits (top-level ``await``) leaves the kernel's loop free, so a
call queued during it starts at once: it has nothing to report, and its record is not
marked.

Which cell runs is a :class:`CellWatch`, which the kernel extension keeps with IPython's
``pre_execute`` / ``post_execute`` events on the kernel thread; the server's thread only
reads it. Notices go out like a ``Context``'s progress (``request.notify``, related to the
request: on its SSE stream when it has one, otherwise wherever a tool's progress would go).
Timers live on the server's loop, at most one per waiting call: :meth:`Waiting.close`, in
a ``finally`` around the wait, cancels it when the call ends, fails or is cancelled (by
``notifications/cancelled``, by a 2026-07-28 client closing its response, by the end of
its session); a timer that finds its call started (or its request over) sends nothing and
is not renewed. A handshake-era client that drops its connection without cancelling
leaves the call queued if it can resume the call's stream (it got a notice, so an event
id): the notices are kept for a resumption (bounded, transports/sse.py) until it starts.
Without one, nothing can receive the reply and the call is dropped (Server.client_gone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, NamedTuple

from .calls import CallRecord
from .request import RequestContext

GRACE = 0.2  # seconds before the first notice, when a cell holds the kernel at hand-over
INTERVAL = 5.0  # seconds between two notices while the call waits
WAITING = ("queued", "awaiting confirmation")  # statuses of a call that has not started


def never(record: CallRecord) -> bool:
    return False


class Cell(NamedTuple):
    """A cell running on the kernel's main thread; ``number`` is its execution count
    (None for a cell outside the history, e.g. a silent one)."""

    number: int | None

    @property
    def label(self) -> str:
        return "a cell" if self.number is None else f"cell [{self.number}]"


class CellWatch:
    """Which cell holds the kernel's main thread now. Written there, read from anywhere:
    ``now`` is one attribute holding an immutable value, so a read is atomic."""

    def __init__(self) -> None:
        self.now: Cell | None = None
        self._stack: list[Cell] = []  # a cell may run cells (%run, run_cell)
        self._starting: list[Callable[[], None]] = []  # told as a cell takes the thread

    def observe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` on the kernel thread each time a cell starts, once ``now``
        names it (before its code runs); the function returned stops that."""
        self._starting = [*self._starting, listener]

        def stop() -> None:
            self._starting = [x for x in self._starting if x is not listener]

        return stop

    def started(self, number: int | None = None) -> None:
        self._stack.append(Cell(number))
        self.now = self._stack[0]
        for listener in self._starting:
            listener()

    def numbered(self, number: int | None) -> None:
        """The cell that just started has this execution count (known a moment later)."""
        if self._stack:
            self._stack[-1] = Cell(number)
            self.now = self._stack[0]

    def ended(self) -> None:
        if self._stack:  # an empty cell ends without having started
            self._stack.pop()
        self.now = self._stack[0] if self._stack else None


def watch(
    request: RequestContext,
    record: CallRecord,
    cells: CellWatch | None,
    pausing: Callable[[CallRecord], bool] = never,
) -> Waiting | None:
    """On the server's loop, as ``record``'s call is handed to the kernel: what watches
    its wait until :meth:`Waiting.close`; None when nothing is to be told or marked (no
    token and no cell running: the common case, which costs no timer). ``pausing``: may
    the call stop in the debugger (a break set on its tool)? Then, with a token, its
    wait is told on its own stream as well (asked only then)."""
    token = request.progress_token
    if token is None and (cells is None or cells.now is None):
        return None
    return Waiting(request, record, cells, token is not None and pausing(record))


def waiting_message(cell: Cell | None) -> str:
    """What a waiting call's progress notice says."""
    if cell is None:
        return "waiting for the kernel"
    if cell.number is None:
        return "waiting for the running cell"
    return f"waiting for the running cell [{cell.number}]"


def paused_message(tool: str) -> str:
    """What a call stopped in the kernel's debugger tells its client, now and then."""
    return f"paused at a breakpoint in {tool}"


class Waiting:
    """One call on its way to the kernel, from hand-over to its end (:meth:`close`)."""

    __slots__ = (
        "_cells",
        "_handle",
        "_loop",
        "_token",
        "record",
        "request",
        "streams",
    )

    def __init__(
        self,
        request: RequestContext,
        record: CallRecord,
        cells: CellWatch | None,
        pausing: bool = False,
    ) -> None:
        self.request, self.record, self._cells = request, record, cells
        # streams: progress may go on the request's stream before the reply (a cell runs
        # and the client gave a token), so the reply must not leave early from the kernel.
        self._token = request.progress_token
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        cell = cells.now if cells is not None else None
        self.streams = self._token is not None and (cell is not None or pausing)
        if self._token is None and cell is None:
            return  # the cell ended meanwhile: nothing to tell, nothing to mark
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(GRACE if cell else INTERVAL, self._tick)

    def close(self) -> None:
        """The call ended (done, failed, cancelled, its client gone): no more notices."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()

    def _tick(self) -> None:
        """On the server's loop: the call still waits? Then say so, and look again later."""
        self._handle = None
        record, request = self.record, self.request
        if request.over:
            return
        if record.status not in WAITING:
            if record.status == "running" and self._token is not None:
                self._paused()  # a running call may stop at a breakpoint (%mcp break)
            return  # it started (or ended): nothing more to say
        cell = self._cells.now if self._cells is not None else None
        if cell is not None and record.behind != cell.label:
            record.behind = cell.label
            record._changed()  # the monitor shows what it waits for
        if self._token is None:
            return  # the record says it; the client did not ask to hear
        params: dict[str, Any] = {
            "progressToken": self._token,
            "progress": request.progress_line.notice(),
            "message": waiting_message(cell),
        }
        request.notify("notifications/progress", params)
        assert self._loop is not None
        self._handle = self._loop.call_later(INTERVAL, self._tick)

    def _paused(self) -> None:
        """While the call runs: say so while it is stopped in the kernel's debugger."""
        if self.record.paused:
            params = {
                "progressToken": self._token,
                "progress": self.request.progress_line.notice(),
                "message": paused_message(self.record.target),
            }
            self.request.notify("notifications/progress", params)
        assert self._loop is not None
        self._handle = self._loop.call_later(INTERVAL, self._tick)
