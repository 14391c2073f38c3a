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


# ipykernel handles each execute request under Python's default SIGINT handler; a
# KeyboardInterrupt outside the cell's code escapes its handler ("KeyboardInterrupt caught
# in kernel") and the request gets no reply. These stand in for its frames, by name.
def do_execute(interrupts: RunInterrupts, inside_the_cells_code: bool = False) -> bool:
    """Whether the SIGINT raised KeyboardInterrupt."""
    try:
        if inside_the_cells_code:
            run_ast_nodes(interrupts)
        else:  # reading (transforming, compiling) the cell, before its code runs
            interrupts.on_sigint(signal.SIGINT, sys._getframe())
    except KeyboardInterrupt:
        return True
    return False


def run_ast_nodes(interrupts: RunInterrupts) -> None:
    interrupts.on_sigint(signal.SIGINT, sys._getframe())


def test_a_request_while_the_kernel_reads_the_cell_stops_it_as_its_code_starts(request_file):
    interrupts = armed(request_file)
    request_file.write_text("r1")
    assert do_execute(interrupts) is False  # raised here, it would escape ipykernel
    assert not request_file.exists()
    interrupts.cell_starts()
    assert interrupts.stops_at_start() is True


def test_a_request_before_the_mark_of_its_run_stops_that_runs_cell(request_file):
    interrupts = armed(request_file, "r1")
    interrupts.cell_starts()
    interrupts.cell_ends()
    request_file.write_text("r2")  # decided as the watcher sent mark(i, "r2")
    assert do_execute(interrupts) is False  # mark's own request, before its code
    interrupts.cell_starts()  # mark's code: no reload cell
    interrupts.arm("r2", str(request_file))
    interrupts.cell_ends()
    interrupts.cell_starts()
    assert interrupts.stops_at_start() is True


def test_between_requests_a_request_for_the_run_armed_next_is_kept(request_file):
    interrupts = armed(request_file, "r1")
    interrupts.cell_starts()
    interrupts.cell_ends()
    request_file.write_text("r2")
    assert interrupts.between_cells() is True
    interrupts.cell_starts()  # mark(i, "r2")
    interrupts.arm("r2", str(request_file))
    interrupts.cell_ends()
    interrupts.cell_starts()
    assert interrupts.stops_at_start() is True


def test_inside_the_cells_code_a_request_still_stops_it_at_once(request_file):
    interrupts = armed(request_file)
    interrupts.cell_starts()
    request_file.write_text("r1")
    assert do_execute(interrupts, inside_the_cells_code=True) is True
    assert interrupts.stops_at_start() is False


def test_a_persons_interrupt_while_the_kernel_reads_a_cell_is_as_before(request_file):
    interrupts = armed(request_file)
    assert do_execute(interrupts) is True


def test_our_handler_covers_the_whole_of_each_request(request_file):
    class Kernel:
        def pre_handler_hook(self) -> None:  # ipykernel's: the default handler
            signal.signal(signal.SIGINT, signal.default_int_handler)

    class Events:
        def register(self, *_: object) -> None: ...

    class Shell:
        kernel = Kernel()
        events = Events()
        ast_transformers: list[ast.NodeTransformer] = []

    interrupts = RunInterrupts()
    before = signal.getsignal(signal.SIGINT)
    try:
        interrupts.hook(Shell())
        Shell.kernel.pre_handler_hook()
        assert signal.getsignal(signal.SIGINT) == interrupts.on_sigint
    finally:
        signal.signal(signal.SIGINT, before)
