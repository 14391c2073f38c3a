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
  cell it meant has ended, so the tool calls running or waiting are not touched; a
  request for the run armed but not started yet (its ``mark`` ran, its cell has not) is
  kept, and that cell stops as it starts (an AST transformer makes it
  ``raise KeyboardInterrupt``);
- during our own code lines (``mark`` itself included, ``commit``, ``abort``), the same
  handler as in a cell: a request for the run being armed stops it before its cell;
- while ipykernel handles a request but outside the cell's code (reading and compiling a
  large cell before it runs, the history and the reply after), where a KeyboardInterrupt
  would escape ipykernel's handler: "KeyboardInterrupt caught in kernel", and the request
  gets no reply, so the watcher would wait for it for good. ipykernel puts Python's
  default handler in place for each request; ours takes its place (``pre_handler_hook``),
  and there a watcher's request is kept for the cell of its run, which stops as it starts.
"""

from __future__ import annotations

import ast
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
        self.deferred: str | None = None  # a request for the pending run, before its cell
        self._hooked = False

    # -- the reload's lines (kernel's main thread) ---------------------------------------
    def arm(self, run: str, request: str, shell: Any = None) -> None:
        """``mark(i, run, request)``: the next cell belongs to ``run``."""
        self.request = Path(request)
        claimed = self._read()
        if claimed is not None and claimed != run:
            self._remove()  # left by a SIGINT that was ignored: it must not eat a later one
        self.pending = run
        self.hook(shell)
        self.take_over()  # mark runs in a cell of its own: it is covered too

    def hook(self, shell: Any) -> None:
        """Once, in a watched kernel (every ``mark``, the first run's too): our callbacks
        on the shell, and our handler for the whole of each request ipykernel handles."""
        if shell is None or self._hooked:
            return
        shell.events.register("pre_run_cell", self.cell_starts)
        shell.events.register("post_run_cell", self.cell_ends)
        shell.ast_transformers.append(StopAtStart(self))
        kernel: Any = getattr(shell, "kernel", None)
        installs = getattr(kernel, "pre_handler_hook", None)
        if callable(installs):  # ipykernel's: saves the handler, puts the default one

            def pre_handler_hook() -> None:
                installs()
                self.take_over()

            kernel.pre_handler_hook = pre_handler_hook
        self._hooked = True

    def cell_starts(self, _info: Any = None) -> None:
        self.current, self.pending = self.pending, None
        if self.current is not None and self.deferred not in (None, self.current):
            self.deferred = None  # meant for a run that never started its cell
        if self.current is not None and self._read() == self.current:
            self.claim()  # its SIGINT is still on the way, or was ignored: stop it here
            self.deferred = self.current
        self.take_over()

    def cell_ends(self, _result: Any = None) -> None:
        self.current = None

    def take_over(self) -> None:
        """Our handler in place of ipykernel's for this cell (it puts back its own after)."""
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(_SIGINT) is signal.default_int_handler:
            signal.signal(_SIGINT, self.on_sigint)

    # -- the SIGINT ----------------------------------------------------------------------
    def on_sigint(self, signum: int, frame: Any) -> None:
        """During a cell: stop it, unless the watcher meant another run. Outside the
        cell's code, a watcher's request waits for its run's cell to start."""
        wanted = self.claim()
        if wanted is not NOBODY and outside_cell_code(frame):
            self.deferred = str(wanted)  # a run that has ended never starts: no match
        elif wanted is NOBODY or wanted in (self.current, self.pending):
            signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt

    def between_cells(self) -> bool:
        """For ``capture.py``'s handler: whether this SIGINT was the watcher's (and so
        touches no call); it is kept for the start of its run's cell (armed, or armed
        next: its ``mark`` may not have run yet)."""
        wanted = self.claim()
        if wanted is NOBODY:
            return False
        self.deferred = str(wanted)
        return True

    def stops_at_start(self) -> bool:
        """Whether the cell starting now is one the watcher interrupted before it began."""
        if self.deferred is None or self.deferred != self.current:
            return False
        self.deferred = None
        return True

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


def outside_cell_code(frame: Any) -> bool:
    """Whether ``frame`` (where a signal landed) is ipykernel's handling of an execute
    request outside the cell's code: IPython catches and reports a KeyboardInterrupt
    raised inside ``run_ast_nodes`` (the cell's statements, compiled and run) only."""
    while frame is not None:
        name = frame.f_code.co_name
        if name == "run_ast_nodes":
            return False
        if name == "do_execute":
            return True
        frame = frame.f_back
    return False


class StopAtStart(ast.NodeTransformer):
    """IPython's AST hook: a cell interrupted before it began runs ``raise KeyboardInterrupt``
    instead (it fails as an interrupted cell would; a pre_run_cell callback cannot)."""

    def __init__(self, interrupts: RunInterrupts) -> None:
        self.interrupts = interrupts

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Module) and self.interrupts.stops_at_start():
            return ast.fix_missing_locations(ast.parse("raise KeyboardInterrupt"))
        return node


interrupts = RunInterrupts()
