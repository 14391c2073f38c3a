"""The call monitor: server state, pending confirmations, a live table of calls, details.

Built on the kernel's loop and updated by ``Hub`` in batches, on that loop or on the Hub's
timer thread while a cell holds it; nothing here runs on the server's thread. Every change
holds ``lock`` (the one renders hold): a click's handlers run under it (ui/guard.py), so
they never interleave with a render. The table is HTML (ui/calltable.py: status by colour
and icon, bursts folded, filters); the "details of" chooser below it lists the same rows
(the value of each option is the call id), and choosing one shows its arguments, result,
captured output and traceback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from . import calltable, render
from .cellinsert import CellInsert
from .confirm import ConfirmPanel
from .guard import guard
from .tasks import TaskView

if TYPE_CHECKING:
    from ..protocol import CallLog
    from .frontends import Frontends
    from .trace import Trace

PAUSE = "Pause next call"
UNPAUSE = "Next call pauses: cancel"
UNPAUSE_DEAF = "Next call pauses once a debugger listens: cancel"
PAUSE_TIP = "The next tool call stops at its first line in the kernel's debugger (%mcp break *)"
_HINT = "<i>Select a call to see its arguments, result, output and traceback.</i>"
_FILTER_WORDS = {"all": "every status", "failed": "failed (any)"}


class Monitor(widgets.VBox):  # type: ignore[misc]  # ipywidgets has no types
    """One view of the calls; ``state()`` gives the header's facts (``Hub.state``), and
    ``on_close(monitor)`` runs when it closes."""

    def __init__(
        self,
        state: Callable[[], dict[str, Any]],
        calls: CallLog,
        trace: Trace,
        on_close: Callable[[Monitor], None],
        rows: int = 12,
        tasks: Any = None,
        pauses: Any = None,
        frontends: Frontends | Callable[[], Frontends] | None = None,
        lock: Any = None,
    ) -> None:
        self._lock = lock if lock is not None else threading.RLock()
        self._state, self._calls, self._trace_log, self._on_close = state, calls, trace, on_close
        self._ids: list[int] = []
        self._labels: dict[int, tuple[tuple[Any, ...], str]] = {}  # id -> (state, row)
        self._selected: int | None = None
        self._quiet = False  # set while the table is changed from here, not by a click
        self.header = widgets.HTML()
        self.pending = widgets.VBox([])
        self._filters = calltable.Filters()
        self.status_filter = widgets.Dropdown(
            options=[(_FILTER_WORDS.get(k, k), k) for k in calltable.STATUS_FILTERS],
            value="all",
            description="Status",
            layout=widgets.Layout(width="15em"),
        )
        self.tool_filter = widgets.Dropdown(
            options=[("every tool", "")],
            value="",
            description="Tool",
            layout=widgets.Layout(width="15em"),
        )
        self.client_filter = widgets.Dropdown(
            options=[("every client", "")],
            value="",
            description="Client",
            layout=widgets.Layout(width="15em"),
        )
        self.search = widgets.Text(placeholder="search calls", layout=widgets.Layout(width="14em"))
        self.search.add_class("mcp-search")
        filters = (self.status_filter, self.tool_filter, self.client_filter, self.search)
        for control in filters:
            control.observe(self._on_filter, "value")
        self.calls_view = widgets.HTML()
        self.calls_view.add_class("mcp-call-table")
        self.table = widgets.Dropdown(
            options=[], description="Details of", layout=widgets.Layout(width="100%")
        )
        self.table.add_class("mcp-calls")
        self.detail = widgets.HTML(_HINT)
        self.detail.add_class("mcp-detail")
        # "Insert as cell": through mcp_notebook's JupyterLab extension (ui/cellinsert.py).
        self.insert = CellInsert(frontends, self._lock)
        self.output = widgets.Output(layout=widgets.Layout(border="1px solid #ddd"))
        self.output.add_class("mcp-output")
        self.trace = widgets.HTML(layout=widgets.Layout(display="none"))
        self.trace.add_class("mcp-trace-view")
        self.table.observe(self._on_index, "index")
        # "Pause next call": the next tool call stops in the kernel's debugger.
        self._pauses = pauses
        self.pause = widgets.Button(description=PAUSE, tooltip=PAUSE_TIP)
        self.pause.add_class("mcp-pause-next")
        self.pause.on_click(self._toggle_pause)
        if pauses is None:
            self.pause.layout.display = "none"
        # The tasks clients poll (protocol/tasks.py), when the app keeps a store.
        self.tasks = TaskView(tasks) if tasks is not None else None
        guard(self._lock, self.table, self.pause, *filters)
        if self.tasks is not None:
            guard(self._lock, self.tasks.table, self.tasks.cancel_button)
        super().__init__(
            [
                self.header,
                self.pending,
                # Wrapped onto a second line in a narrow output area, not cut at its edge.
                widgets.HBox(list(filters), layout=widgets.Layout(flex_flow="row wrap")),
                self.calls_view,
                self.table,
                self.insert,
                self.detail,
                widgets.HTML("<b>output</b> (print, display, warnings during the call)"),
                self.output,
                self.trace,
                *([self.tasks] if self.tasks is not None else []),
                self.pause,
            ]
        )
        self.add_class("mcp-monitor")

    # -- updates from the hub (kernel loop) ----------------------------------------------
    def refresh(self, changed: set[int] | None) -> None:
        """Re-render; ``changed`` holds the ids of calls that changed (None: all)."""
        self.header.value = render.server_state(self._state())
        if self._pauses is not None:
            self.pause.description = self._pause_label()
        if self.tasks is not None:
            self.tasks.refresh()  # also on the header's tick: ages change
        if changed is None or changed:
            self._rows()
            if self._selected is not None and (changed is None or self._selected in changed):
                self._show_detail()
        self._trace()

    def _rows(self) -> None:
        records = list(self._calls)
        self._choices(records)
        found, more = calltable.rows(records, self._filters)
        self._labels = {r.id: self._labels[r.id] for r in records if r.id in self._labels}
        page = calltable.table(found, self._selected, more)
        if page != self.calls_view.value:
            self.calls_view.value = page
        options = tuple((self._label(row.record), row.record.id) for row in found)
        if options == tuple(self.table.options):
            return
        self._quiet = True
        try:
            with self.table.hold_sync():
                self.table.options = options
                self._ids = [row.record.id for row in found]
                selected = self._selected
                self.table.index = self._ids.index(selected) if selected in self._ids else None
        finally:
            self._quiet = False

    def _choices(self, records: list[Any]) -> None:
        """The tool and client filters offer what the history holds (and the chosen one)."""
        tools, clients = calltable.choices(records)
        pairs = (
            (self.tool_filter, tools, "every tool"),
            (self.client_filter, clients, "every client"),
        )
        for control, names, everything in pairs:
            if control.value and control.value not in names:
                names = sorted({*names, control.value})
            options = ((everything, ""), *((name, name) for name in names))
            if options != tuple(control.options):
                value = control.value
                self._quiet = True
                try:
                    with control.hold_sync():
                        control.options = options
                        control.value = value
                finally:
                    self._quiet = False

    def _label(self, record: Any) -> str:
        # Labels are formatted once per state: a burst re-renders only what changed.
        state = (record.status, record.duration, record.behind, record.paused)
        cached = self._labels.get(record.id)
        if cached is None or cached[0] != state:
            cached = self._labels[record.id] = (state, render.row(record))
        return cached[1]

    def _on_filter(self, _change: dict[str, Any]) -> None:
        if self._quiet:
            return
        self._filters = calltable.Filters(
            status=self.status_filter.value or "all",
            tool=self.tool_filter.value or "",
            client=self.client_filter.value or "",
            search=(self.search.value or "").strip()[:200],
        )
        self._rows()

    def _trace(self) -> None:
        trace = self._trace_log
        if not trace.enabled:
            self.trace.layout.display = "none"
            return
        self.trace.layout.display = None
        self.trace.value = render.trace(trace.snapshot())

    def show_pending(self, panel: ConfirmPanel) -> None:
        if panel not in self.pending.children:
            self.pending.children = (*self.pending.children, panel)

    def hide_pending(self, panel: ConfirmPanel) -> None:
        if panel in self.pending.children:
            self.pending.children = tuple(c for c in self.pending.children if c is not panel)

    # -- selection (a click in the front end) --------------------------------------------
    def _on_index(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        index = change["new"]
        valid = index is not None and 0 <= index < len(self._ids)
        self._selected = self._ids[index] if valid else None
        self._rows()  # the chosen row is marked in the table too
        self._show_detail()

    def select(self, call_id: int) -> None:
        """Show one call's details, as a click on its row would."""
        with self._lock:  # from a cell, while the Hub may render from its timer thread
            self._select(call_id)

    def _select(self, call_id: int) -> None:
        self._selected = call_id
        self._rows()  # marks it, and selects it in the chooser if a row shows it
        self._show_detail()

    def _show_detail(self) -> None:
        record = self._calls.find(self._selected) if self._selected else None
        if record is None:
            self.detail.value = _HINT if self._selected is None else "<i>No longer in history.</i>"
            self.insert.show(None)
            outputs: tuple[dict[str, Any], ...] = ()
        else:
            code = render.cell_code(record) if render.has_cell(record) else None
            self.detail.value = render.detail(record, code)
            self.insert.show(code, record.id)
            # Copies: the record's dicts grow in place, which traitlets would not notice.
            outputs = tuple(dict(o) for o in record.output)
        if outputs != tuple(self.output.outputs):
            self.output.outputs = outputs

    def _toggle_pause(self, _button: Any) -> None:
        pauses = self._pauses
        if pauses is not None:
            pauses.next_call = not pauses.next_call
            self.pause.description = self._pause_label()

    def _pause_label(self) -> str:
        """What the button offers; while set, whether a debugger would see the pause (no
        Debugger panel open: calls run on, as with %mcp break)."""
        pauses = self._pauses
        if not pauses.next_call:
            return PAUSE
        return UNPAUSE if pauses.listening else UNPAUSE_DEAF

    def close(self) -> None:
        with self._lock:
            self._on_close(self)
            super().close()

    def __repr__(self) -> str:  # the text/plain of its display: short, for headless logs
        return "<mcp monitor: a widget, shown in Jupyter>"
