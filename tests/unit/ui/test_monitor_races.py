"""Monitor renders and clicks never interleave (ui/hub.py, ui/guard.py).

While a cell holds the kernel's loop, the Hub renders the monitors from a timer thread;
clicks are handled on the kernel's loop. Here a render is stopped mid-way (on an event, in
the middle of building the table) and a click on the table's first row arrives meanwhile:
it must wait for the render, then select that row. Interleaved, it would be read against
the table as it was before the render and select nothing. No kernel: the widgets' messages
are fed to their comms as the kernel's comm manager would."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import pytest

from mcp_notebook.app import NotebookMCP
from mcp_notebook.protocol import CallRecord
from mcp_notebook.protocol.queueing import CellWatch
from mcp_notebook.ui import render
from mcp_notebook.ui.confirm import ConfirmPanel
from mcp_notebook.ui.decision import Decision
from mcp_notebook.ui.hub import Hub

WAIT = 30  # seconds: a safety net only, every wait below is on an event


class SpyLock:
    """A re-entrant lock that says when someone has to wait for it."""

    def __init__(self, events: queue.Queue[str]) -> None:
        self._lock = threading.RLock()
        self._events = events
        self.acquired = 0

    def __enter__(self) -> SpyLock:
        if not self._lock.acquire(blocking=False):
            self._events.put("waits for the lock")
            self._lock.acquire()
        self.acquired += 1
        return self

    def __exit__(self, *_: Any) -> None:
        self._lock.release()


def from_front_end(widget: Any, data: dict[str, Any]) -> None:
    """A message from a front end to ``widget``, delivered as the comm manager does."""
    widget.comm.handle_msg({"header": {"session": "lab"}, "content": {"data": data}, "buffers": []})


@pytest.fixture
def hub():
    loop = asyncio.new_event_loop()  # the kernel's: not running, as while a cell holds it
    app = NotebookMCP()
    hub = Hub(
        app, loop, headless=False, executor=lambda: None, replay=lambda *_: None, cells=CellWatch()
    )
    yield hub
    hub.close()
    loop.close()


def test_a_click_during_a_timer_render_waits_for_it_then_selects_the_row(hub, monkeypatch):
    events: queue.Queue[str] = queue.Queue()
    hub.widgets = SpyLock(events)
    monitor = hub.monitor()
    release = threading.Event()
    row = render.row

    def stopped_row(record: Any) -> str:  # in the middle of the render: header done
        events.put("render stopped mid-way")
        release.wait(WAIT)
        return row(record)

    monkeypatch.setattr(render, "row", stopped_row)
    hub.cells.started(1)  # a cell holds the kernel's loop: the Hub renders from a timer
    record = hub.app.calls.add(CallRecord("tools/call", "add", {"a": 1}, "agent"))
    assert events.get(timeout=WAIT) == "render stopped mid-way"

    def click() -> None:
        from_front_end(monitor.table, {"method": "update", "state": {"index": 0}})
        events.put("click handled")

    clicking = threading.Thread(target=click)
    clicking.start()
    try:
        # Interleaved, the click would be handled now, against the table before the render.
        assert events.get(timeout=WAIT) == "waits for the lock"
    finally:
        release.set()
        clicking.join(WAIT)
    assert events.get(timeout=WAIT) == "click handled"
    assert monitor.table.options == ((render.row(record), record.id),)
    assert monitor.table.index == 0
    assert "add" in monitor.detail.value and "Select a call" not in monitor.detail.value
    hub.cells.ended()


def test_every_widget_a_front_end_talks_to_is_handled_under_the_render_lock(hub):
    """Clicks, selections and edits on each control of a monitor and a confirmation."""
    events: queue.Queue[str] = queue.Queue()
    hub.widgets = lock = SpyLock(events)
    monitor = hub.monitor()
    record = hub.app.calls.add(CallRecord("tools/call", "add", {"a": 1}, "agent"))
    tool = type("Tool", (), {"name": "add", "annotations": {}, "confirm": True})()
    tool.description = ""
    decision = Decision(tool, {"a": 1}, record, "agent", 60, hub.loop)
    panel = ConfirmPanel(decision, hub.widgets)
    controls = [monitor.table, monitor.pause, monitor.insert.button]
    controls += [panel.approve, panel.deny, panel.editor]
    assert monitor.tasks is not None  # the app keeps a task store
    controls += [monitor.tasks.table, monitor.tasks.cancel_button]
    for widget in controls:
        before = lock.acquired
        from_front_end(widget, {"method": "request_state"})
        assert lock.acquired == before + 1, widget
