"""ui/later.py without a kernel: a real asyncio loop on a thread plays the kernel's loop,
a callback that blocks it until released plays a long cell (``CellWatch`` told it started,
as the kernel's ``pre_execute`` hook does)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from mcp_notebook.protocol.queueing import CellWatch
from mcp_notebook.ui.later import Later
from tests.waiting import wait_until


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


class LongCell:
    """Holds ``loop`` from ``start()`` until ``end()``, as a cell holds the kernel's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, cells: CellWatch) -> None:
        self.loop, self.cells = loop, cells
        self.running, self.release = threading.Event(), threading.Event()

    def _hold(self) -> None:
        self.cells.started(7)
        self.running.set()
        self.release.wait(30)
        self.cells.ended()

    def start(self) -> None:
        self.loop.call_soon_threadsafe(self._hold)
        assert self.running.wait(10)

    def end(self) -> None:
        self.release.set()


def test_an_update_waiting_on_the_loop_runs_while_a_cell_that_started_after_it_holds_it(
    loop,
) -> None:
    cells = CellWatch()
    later = Later(loop, cells)
    ran: list[bool] = []
    cell = LongCell(loop, cells)
    gate = threading.Event()
    loop.call_soon_threadsafe(gate.wait, 30)  # the loop is busy as the update is scheduled
    later(0.05, lambda: ran.append(cell.running.is_set() and not cell.release.is_set()))
    gate.set()
    cell.start()  # before the update was due: without the move it would wait for the cell
    try:
        wait_until(lambda: ran, "the update to run while the cell holds the loop", timeout=10)
        assert ran == [True] and later.waiting == 0
    finally:
        cell.end()
    # Nothing runs twice: once the loop is free, its own copy finds the update taken.
    done = threading.Event()
    loop.call_soon_threadsafe(loop.call_later, 0.1, done.set)
    assert done.wait(10)
    assert len(ran) == 1


def test_without_a_cell_updates_run_on_the_loop_once(loop) -> None:
    cells = CellWatch()
    later = Later(loop, cells)
    ran: list[bool] = []
    loop_thread: list[threading.Thread] = []
    loop.call_soon_threadsafe(lambda: loop_thread.append(threading.current_thread()))
    for _ in range(3):
        later(0, lambda: ran.append(threading.current_thread() is loop_thread[0]))
    wait_until(lambda: len(ran) == 3, "the updates to run")
    assert ran == [True, True, True] and later.waiting == 0


def test_during_a_cell_updates_go_to_a_timer_at_once_and_a_closed_loop_is_told(loop) -> None:
    cells = CellWatch()
    later = Later(loop, cells)
    ran: list[str] = []
    cells.started(3)  # the watch says a cell runs: the loop is not even asked
    later(0, lambda: ran.append("timer"))
    wait_until(lambda: ran, "the update on a timer thread")
    assert later.waiting == 0
    cells.ended()
    later.close()
    closed = asyncio.new_event_loop()
    closed.close()
    with pytest.raises(RuntimeError):
        Later(closed, None)(0, lambda: None)
