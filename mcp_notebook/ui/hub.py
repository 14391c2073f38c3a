"""The notebook side of ``mcp``: monitors, confirmation prompts, captured calls, trace.

Threads (DESIGN.md §3): the call log's observers run on the server's thread or the
kernel's; they only note which call changed and, once per batch, ask the kernel's loop to
render (``call_soon_threadsafe``), at most every ``interval`` seconds. Widgets are touched
on the kernel's loop, with one exception: while a cell holds that loop (``cells``, which
the kernel keeps), nothing queued on it runs before the cell ends, so a batch is rendered
from a short-lived timer thread instead (one already waiting on the loop as the cell starts
moves there too: ui/later.py), and a call queued behind the cell shows as such while it
waits. ipywidgets sends state from any thread (its messages go through the kernel's IOPub
thread). One re-entrant lock, ``widgets``, is held by every change to the
widgets: each render, confirmations shown and hidden, and every message a front end sends
to a monitor's or a confirmation's widgets (a click, a selection, an edit, with all the
handlers it runs: ui/guard.py), so that a click handled on the kernel's loop never
interleaves with a render on the timer thread. A confirmation waits on the server's loop
for a ``Decision`` that a click settles: a comm message, handled where the front end sent
it (ui/guard.py ``where_sent``): on the kernel's loop between cells, or on a subshell's
thread (JupyterLab's, even while a cell runs).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from IPython.display import display

from ..protocol import CallRecord, Executor, Session
from ..protocol.confirmation import describe
from ..protocol.queueing import CellWatch
from ..threads import start_timer
from . import frontends as fronts
from . import render
from .confirm import ConfirmPanel, PromptArea
from .decision import Decision
from .guard import session_of
from .later import Later
from .monitor import Monitor
from .panelfeed import PanelFeed
from .trace import Trace

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
KEEP_SETTLED = 50  # decided panels kept open, so that a late click is refused, not lost
TICK = 1.0  # seconds between header refreshes (clients come and go without calls)


class Hub:
    """The notebook front end of ``app`` (``app.ui``), on the kernel's ``loop``.

    The layer above gives what ui/ must not import: ``headless`` (served by ``mcp-notebook
    serve``: nobody watches the notebook, confirmations go to the client), ``executor``
    (makes the executor that runs calls on the kernel, capturing their output) and
    ``replay(app, record)`` (runs a recorded call again, for ``record.replay()``).
    """

    interval = 0.2  # seconds between two renders of the monitors

    def __init__(
        self,
        app: Any,
        loop: asyncio.AbstractEventLoop,
        *,
        headless: bool,
        executor: Callable[[], Executor],
        replay: Callable[[Any, CallRecord], Any],
        cells: CellWatch | None = None,
        pauses: Any = None,
    ) -> None:
        # headless: under `mcp-notebook serve` nobody watches the notebook (settable: a pin
        # made after the extension loaded sets it, app.serve_headless).
        self.app, self.loop, self.headless = app, loop, headless
        self._make_executor, self._replay = executor, replay
        self._pauses = pauses  # .next_call: the kernel's %mcp break on the next call
        self.cells = cells  # which cell holds the kernel's loop, if any (kernel/cells.py)
        # Where the monitors' and the feed's updates run: the kernel's loop, or a timer
        # thread while a cell holds it (also for an update already waiting as one starts).
        self._schedule = Later(loop, cells)  # (seconds, callback), from any thread
        # Every change to the widgets, whichever thread makes it (re-entrant: a click's
        # handler may re-render).
        self.widgets = threading.RLock()
        self.monitors: list[Monitor] = []
        self.panels: dict[int, ConfirmPanel] = {}  # pending, by call id
        self.area: PromptArea | None = None
        self.trace = Trace(self._poke)
        self._settled: deque[ConfirmPanel] = deque()
        self._lock = threading.Lock()
        self._changed: set[int] = set()
        self._armed = False
        self._last = 0.0
        self._ticking = False
        self._unsubscribe = app.calls.subscribe(self._observe)
        self._tasks = getattr(app, "tasks", None)  # the task store, if the app keeps one
        if self._tasks is not None:
            self._tasks.observe(self._task_changed)
        # The MCP panel of front ends with the extension (ui/panelfeed.py); headless, none.
        self.feed: PanelFeed | None = None
        if not headless:
            self.feed = PanelFeed(
                app=app,
                state=self.state,
                schedule=self._schedule,
                pauses=pauses,
                cell_code=render.cell_code,
            )
            self.frontends().hello()  # front ends with the extension open their feed

    # -- wiring (app.start) ----------------------------------------------------------------
    @property
    def attached(self) -> bool:
        """Whether a person may be watching: not under headless ``mcp-notebook serve``."""
        return not self.headless

    def executor(self) -> Executor:
        return self._make_executor()

    def attach(self, server: Any) -> None:
        """A server was started: trace it, and put a prompt area under the starting cell."""
        self.trace.attach(server)
        if self.feed is not None:
            self.feed.state_changed()
        if not self.attached:
            return
        with self.widgets:  # a cell runs this: a timer thread may be rendering
            old, self.area = self.area, PromptArea()
            if old is not None:
                for panel in old.children:
                    self.area.add(panel)
                old.close()
            # An empty text/plain: front ends without widgets show nothing, not "VBox()".
            bundle = {"text/plain": "", WIDGET_MIME: _view(self.area)}
            display(bundle, raw=True)  # type: ignore[no-untyped-call]  # IPython's, unannotated
        self._poke()

    def set_trace(self, on: bool) -> None:
        """Start (afresh) or stop recording raw JSON-RPC traffic for the monitors."""
        if on and not self.trace.enabled:
            self.trace.clear()
        self.trace.enabled = on
        self._poke()

    def close(self) -> None:
        self._unsubscribe()
        self._schedule.close()
        if self.feed is not None:
            self.feed.close()
        if self._tasks is not None:
            self._tasks.unobserve(self._task_changed)
        for monitor in list(self.monitors):
            monitor.close()

    # -- the observer (any thread: keep it short) -------------------------------------------
    def _observe(self, record: CallRecord) -> None:
        if "replay" not in record.__dict__:
            record.replay = partial(self._replay, self.app, record)  # type: ignore[attr-defined]
        if self.feed is not None:
            self.feed.call_changed(record)  # returns at once when no panel is open
        self._poke(record.id, held=record.paused)  # paused: the debugger holds the loop

    def _task_changed(self, task: Any) -> None:
        self._poke()  # any thread; the monitors re-render on the kernel's loop

    def _poke(self, call_id: int | None = None, held: bool = False) -> None:
        if not self.monitors:
            return  # a monitor opened later renders the whole history anyway
        with self._lock:
            if call_id is not None:
                self._changed.add(call_id)
            if self._armed and not held:  # held: what was queued on the loop waits too
                return
            self._armed = True
        if held:  # the debugger holds the kernel's loop: what waits there waits too
            start_timer(self._delay(), self._flush)  # out of the debugger, as all ours
            return
        try:
            self._schedule(self._delay(), self._flush)
        except RuntimeError:  # the kernel's loop is closing
            with self._lock:
                self._armed = False

    def _delay(self) -> float:
        return max(0.0, self._last + self.interval - time.monotonic())

    def _flush(self) -> None:
        with self.widgets:
            with self._lock:
                changed, self._changed, self._armed = self._changed, set(), False
            self._last = time.monotonic()
            for monitor in list(self.monitors):
                monitor.refresh(changed)

    def _tick(self) -> None:
        if not self.monitors:
            self._ticking = False
            return
        with self.widgets:
            for monitor in list(self.monitors):
                monitor.refresh(set())  # the header only
        self.loop.call_later(TICK, self._tick)

    def state(self) -> dict[str, Any]:
        app = self.app
        return {
            "name": app.name,
            "url": app.url,
            "auth": bool(app.token),
            "oauth": app.oauth_issuer,  # whose access tokens it takes, with OAuth on
            "policy": describe(app.confirm_policy),
            "timeout": float(app.confirm_timeout),
            "calls": len(app.calls),
            "history": app.calls.maxlen,
            "bytes": app.calls.bytes,
            "max_bytes": app.calls.max_bytes,
            "trace": self.trace.enabled,
            "clients": render.clients(app._server, self.trace.stateless_clients()),
        }

    # -- monitors (kernel loop) --------------------------------------------------------------
    def monitor(self) -> Monitor:
        monitor = Monitor(
            self.state,
            self.app.calls,
            self.trace,
            self.forget,
            tasks=self._tasks,
            pauses=self._pauses,
            frontends=self.frontends,
            lock=self.widgets,
        )
        with self.widgets:
            self.monitors.append(monitor)
            for panel in self.panels.values():
                monitor.show_pending(panel)
            monitor.refresh(None)
        if self.attached and len(self.monitors) == 1:
            self.frontends().hello()  # front ends with the extension announce themselves
        if self.attached and not self._ticking:
            self._ticking = True
            self.loop.call_later(TICK, self._tick)
        return monitor

    def open_panel(self, parent: Any) -> bool:
        """Show the MCP panel in the front end that sent ``parent`` (the running cell's
        request); False where no panel feed is open (no extension there, or headless)."""
        return self.feed is not None and self.feed.open_panel(session_of(parent))

    def frontends(self) -> fronts.Frontends:
        """The kernel's front ends with mcp_notebook's extension (ui/frontends.py)."""
        return fronts.shared(later=self._later)

    def _later(self, seconds: float, callback: Callable[[], None]) -> Any:
        return self.loop.call_later(seconds, callback)  # called on the kernel's loop

    def forget(self, monitor: Monitor) -> None:
        if monitor in self.monitors:
            self.monitors.remove(monitor)

    # -- confirmations -----------------------------------------------------------------------
    async def ask(
        self,
        tool: Any,
        arguments: dict[str, Any],
        session: Session,
        record: CallRecord,
        timeout: float,
    ) -> dict[str, Any]:
        """On the server's loop: show Approve / Deny in the notebook and wait for it."""
        decision = Decision(
            tool, arguments, record, session.client_label, timeout, asyncio.get_running_loop()
        )
        decision.listeners.append(self._on_settled)
        record.set_status("awaiting confirmation")
        if self.feed is not None:
            self.feed.show(decision)  # from here: a cell holding the kernel's loop cannot hide it
        self.loop.call_soon_threadsafe(self._show, decision)
        approved = await decision.outcome()
        if approved is not arguments:
            record.update_arguments(approved)  # the history shows what actually ran
        return approved

    def _on_settled(self, decision: Decision) -> None:
        self.loop.call_soon_threadsafe(self._hide, decision)

    def _show(self, decision: Decision) -> None:
        if not decision.pending:
            return  # timed out or cancelled while the kernel was busy
        with self.widgets:  # not while a timer thread re-renders the monitors
            self._show_panel(decision)

    def _show_panel(self, decision: Decision) -> None:
        # Pinned at the top of every monitor and under the cell that started the server:
        # one widget, so an answer or an edit in one place shows in all.
        panel = ConfirmPanel(decision, self.widgets)
        self.panels[decision.id] = panel
        for monitor in self.monitors:
            monitor.show_pending(panel)
        if self.area is not None:
            self.area.add(panel)
        elif not self.monitors:
            display(panel)  # type: ignore[no-untyped-call]  # IPython's, unannotated

    def _hide(self, decision: Decision) -> None:
        with self.widgets:  # not while a timer thread re-renders the monitors
            self._hide_panel(decision)

    def _hide_panel(self, decision: Decision) -> None:
        panel = self.panels.pop(decision.id, None)
        if panel is None:
            return
        panel.settled()
        for monitor in self.monitors:
            monitor.hide_pending(panel)
        if self.area is not None:
            self.area.discard(panel)
        self._settled.append(panel)
        while len(self._settled) > KEEP_SETTLED:
            self._settled.popleft().close()


def _view(widget: Any) -> dict[str, Any]:
    return {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
