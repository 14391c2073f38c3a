"""serve --watch's interrupt aimed at one reload cell (kernel/runinterrupts.py): what the
kernel does with a SIGINT, decided without a kernel (the handlers called as Python would)."""

from __future__ import annotations

import ast
import signal
import sys

import pytest

from mcp_notebook.kernel import capture
from mcp_notebook.kernel.runinterrupts import NOBODY, RunInterrupts, StopAtStart


@pytest.fixture
def request_file(tmp_path):
    return tmp_path / "interrupt-request"


def armed(request_file, run: str = "r1") -> RunInterrupts:
    interrupts = RunInterrupts()
    interrupts.arm(run, str(request_file))
    return interrupts


def test_a_request_for_the_running_cell_stops_it(request_file):
    interrupts = armed(request_file)
    interrupts.cell_starts()
    request_file.write_text("r1")
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_sigint(signal.SIGINT, sys._getframe())
    assert not request_file.exists()  # taken: it acts once


def test_a_request_for_a_run_that_has_ended_is_a_no_op_in_the_next_cell(request_file):
    interrupts = armed(request_file, "r1")
    interrupts.cell_starts()
    interrupts.cell_ends()
    interrupts.arm("r2", str(request_file))
    interrupts.cell_starts()
    request_file.write_text("r1")  # decided while r1 ran; the SIGINT came during r2
    interrupts.on_sigint(signal.SIGINT, sys._getframe())  # nothing raised
    assert not request_file.exists()


def test_a_request_during_our_own_lines_after_the_cell_is_a_no_op(request_file):
    interrupts = armed(request_file)
    interrupts.cell_starts()
    interrupts.cell_ends()
    interrupts.cell_starts()  # commit(), say: a cell that is no reload cell
    request_file.write_text("r1")
    interrupts.on_sigint(signal.SIGINT, sys._getframe())


def test_a_request_during_the_mark_of_its_run_stops_that_run(request_file):
    interrupts = armed(request_file)  # mark() itself still runs
    request_file.write_text("r1")
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_sigint(signal.SIGINT, sys._getframe())


def test_a_persons_interrupt_stops_any_cell_as_before(request_file):
    interrupts = armed(request_file)
    interrupts.cell_starts()
    with pytest.raises(KeyboardInterrupt):  # no request: Kernel > Interrupt
        interrupts.on_sigint(signal.SIGINT, sys._getframe())
    interrupts.cell_ends()
    interrupts.cell_starts()  # a cell of the person's own
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_sigint(signal.SIGINT, sys._getframe())


def test_a_request_left_by_an_ignored_sigint_does_not_eat_a_later_interrupt(request_file):
    request_file.write_text("r1")  # SIGINT came while SIG_IGN was in place: never taken
    interrupts = armed(request_file, "r2")
    assert not request_file.exists()
    interrupts.cell_starts()
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_sigint(signal.SIGINT, sys._getframe())


def test_the_request_of_the_run_being_armed_is_kept(request_file):
    request_file.write_text("r2")  # decided as the watcher sent mark(i, "r2")
    interrupts = armed(request_file, "r2")
    assert interrupts.claim() == "r2" and interrupts.claim() is NOBODY


def test_between_cells_a_request_spares_the_tool_call_on_the_main_thread(request_file, monkeypatch):
    """The cell ended before its SIGINT came: the tool call now running is not stopped."""
    interrupts = armed(request_file)
    interrupts.cell_starts()
    interrupts.cell_ends()
    monkeypatch.setattr(capture, "interrupts", interrupts)
    seen: list[str] = []

    def tool() -> str:
        request_file.write_text("r1")
        capture._on_sigint(signal.SIGINT, sys._getframe())  # lands in the tool's code
        seen.append("went on")
        return "done"

    assert capture._run_sync(tool) == "done" and seen == ["went on"]

    def interrupted_tool() -> str:  # a person's Interrupt still stops it
        capture._on_sigint(signal.SIGINT, sys._getframe())
        return "not reached"

    with pytest.raises(capture.Interrupted):
        capture._run_sync(interrupted_tool)


def test_a_request_between_the_mark_and_its_cell_stops_the_cell_as_it_starts(request_file):
    """mark(i) ended, a tool call runs before the cell: it is spared, the cell stops."""
    interrupts = armed(request_file)
    request_file.write_text("r1")
    assert interrupts.between_cells() is True  # the tool call is not touched
    transformer = StopAtStart(interrupts)
    interrupts.cell_starts()
    cell = ast.parse("x = 1")
    stopped = transformer.visit(cell)
    assert stopped is not cell
    with pytest.raises(KeyboardInterrupt):
        exec(compile(stopped, "<cell>", "exec"), {})
    interrupts.cell_ends()
    interrupts.cell_starts()  # the next cell runs as written
    assert transformer.visit(cell) is cell


def test_a_request_still_on_the_way_at_the_cells_start_stops_it(request_file):
    interrupts = armed(request_file)
    request_file.write_text("r1")  # written; its SIGINT not handled yet (or ignored)
    interrupts.cell_starts()
    assert interrupts.stops_at_start() is True and not request_file.exists()


def test_a_deferred_request_is_dropped_if_its_cell_never_starts(request_file):
    interrupts = armed(request_file, "r1")
    request_file.write_text("r1")
    interrupts.between_cells()
    interrupts.cell_ends()
    interrupts.arm("r2", str(request_file))  # the watcher moved on
    interrupts.cell_starts()
    assert interrupts.stops_at_start() is False


def test_between_cells_a_persons_interrupt_is_not_the_watchers(request_file):
    interrupts = armed(request_file)
    assert interrupts.between_cells() is False
