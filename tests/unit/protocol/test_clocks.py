"""Durations and deadlines come from monotonic clocks, never from the wall clock.

Windows' ``time.time()`` ticks every ~15.6 ms before Python 3.13, and any wall clock can
step (NTP, a laptop waking up). The history's "took" column and a confirmation's deadline
must not follow it. Wall times stay only where people read them (when a call started).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import CallRecord, Server, Session
from mcp_notebook.ui.decision import Decision

_real_time = time.time


def _jumped_back() -> Callable[[], float]:
    return lambda: _real_time() - 3600.0  # an NTP correction of an hour


def _frozen() -> Callable[[], float]:
    # A coarse clock that has not ticked since before the call: Windows' time.time()
    # returns the same value for up to ~15.6 ms.
    frozen = _real_time() - 0.0156
    return lambda: frozen


def _spin_past(mark: float) -> float:
    """Wait until perf_counter has moved past ``mark`` (no sleeping: the clock only)."""
    now = time.perf_counter()
    while now <= mark:
        now = time.perf_counter()
    return now


@pytest.mark.parametrize("wall_clock", [_jumped_back, _frozen], ids=["jumped-back", "frozen"])
async def test_a_call_duration_ignores_the_wall_clock(monkeypatch, wall_clock):
    mcp = NotebookMCP()
    inside: list[float] = []

    @mcp.tool
    def work() -> str:
        """Takes a measurable moment."""
        start = time.perf_counter()
        inside.append(_spin_past(start) - start)
        return "done"

    server = Server(mcp.registry)
    session = Session()
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    await server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, session
    )

    monkeypatch.setattr(time, "time", wall_clock())
    before = time.perf_counter()
    call = {"name": "work", "arguments": {}}
    answer = await server.handle(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, session
    )
    after = time.perf_counter()
    monkeypatch.undo()

    assert answer["result"]["content"] == [{"type": "text", "text": "done"}]
    (record,) = list(server.calls)
    assert record.status == "done"
    # At least what the tool itself measured, at most what the whole request took.
    assert inside[0] <= record.duration <= after - before


def test_a_record_keeps_wall_time_to_show_and_measures_with_perf_counter(monkeypatch):
    wall_before, before = time.time(), time.perf_counter()
    record = CallRecord("tools/call", "t", {}, "client")
    created, wall_after = time.perf_counter(), time.time()
    monkeypatch.setattr(time, "time", _jumped_back())
    worked = _spin_past(created)  # the call's work
    record.finish("done")
    after = time.perf_counter()
    assert record.duration is not None
    assert 0 < worked - created <= record.duration <= after - before
    # The start shown to people stays the wall time it was, whatever the clock did since.
    assert wall_before <= record.started <= wall_after


async def test_a_confirmation_deadline_does_not_move_with_the_wall_clock(monkeypatch):
    record = CallRecord("tools/call", "t", {}, "client")
    before = time.monotonic()
    decision = Decision(None, {}, record, "client", 60.0, asyncio.get_running_loop())
    after = time.monotonic()
    for jump in (3600.0, -3600.0):  # the wall clock jumps forward, then back
        monkeypatch.setattr(time, "time", lambda jump=jump: _real_time() + jump)
        remaining = decision.remaining()
        later = time.monotonic()
        assert before + 60.0 - later <= remaining <= after + 60.0 - before
        assert decision.pending
