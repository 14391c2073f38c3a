"""Where user code runs.

The server never calls a tool, reader or prompt function itself: it hands a zero-argument
``work`` callable to an executor. ``work()`` returns a value or an awaitable. In a kernel
the executor is the kernel's own loop (see DESIGN.md §3); elsewhere, the caller's loop.

``prepare(work, record)`` gives user code as it must run there (in a kernel: in the
call's own context, where an interrupt ends it as ``Interrupted``); ``run`` runs what it
is given. What must happen where the work ran, as soon as it ended (a tool call's reply
and record), the server composes around the prepared work with :func:`finishing`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable
from typing import Any, Protocol

from .calls import CallRecord
from .jsonrpc import SERVER_ERROR, RpcError
from .queueing import CellWatch

Finish = Callable[[bool, Any], Any]
# Calls handed to the kernel's loop at once, at most: a client that hangs up leaves its
# handshake-era call queued (the spec lets it run), so without a bound a loop of
# connect, call, hang up grows the queue (and the arguments it holds) while a cell runs.
MAX_HANDED = 1000


class Executor(Protocol):
    """What the server uses of where user code runs; :class:`ExecutorBase` gives the
    defaults of everything but :meth:`run`."""

    # The cell that holds the loop user code runs on (a kernel's), so that a call queued
    # behind it can say so (.queueing); None: no cells there.
    cells: CellWatch | None

    def prepare(self, work: Callable[[], Any], record: CallRecord) -> Callable[[], Any]:
        """``work`` (user code serving ``record``) as it must run on this executor."""
        ...

    async def run(self, work: Callable[[], Any], record: CallRecord | None = None) -> Any:
        """Run ``work`` where user code belongs; ``record`` is the call it serves, if any."""
        ...

    def may_pause(self, record: CallRecord) -> bool:
        """Whether ``record``'s call may stop in a debugger (``%mcp break`` on its tool)."""
        ...

    def interrupt(self, record: CallRecord) -> bool:
        """Stop ``record``'s code where it runs now, if this executor can; False if not."""
        ...


class ExecutorBase:
    """The defaults of :class:`Executor`: no cells, no debugger, no interrupt; user code
    runs as it is given."""

    cells: CellWatch | None = None

    def prepare(self, work: Callable[[], Any], record: CallRecord) -> Callable[[], Any]:
        return work

    def may_pause(self, record: CallRecord) -> bool:
        return False

    def interrupt(self, record: CallRecord) -> bool:
        return False


async def settle(value: Any) -> Any:
    """Await ``value`` until it is no longer awaitable."""
    while inspect.isawaitable(value):
        value = await value
    return value


def finishing(work: Callable[[], Any], finish: Finish) -> Callable[[], Any]:
    """``work`` followed, right where it ran, by ``finish(ok, value)``: with its value, or
    the exception it raised (not when it was cancelled). ``finish`` gives the outcome."""

    def run() -> Any:
        try:
            value = work()
        except BaseException as exc:  # SystemExit or KeyboardInterrupt in a tool included
            return finish(False, exc)
        if inspect.isawaitable(value):
            return _finish_later(value, finish)
        return finish(True, value)

    return run


async def _finish_later(awaitable: Any, finish: Finish) -> Any:
    try:
        value = await settle(awaitable)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return finish(False, exc)
    return finish(True, value)


def unchanged(work: Callable[[], Any], record: CallRecord) -> Callable[[], Any]:
    return work


class InlineExecutor(ExecutorBase):
    """Runs user code on the loop that handles the request (tests, plain scripts)."""

    async def run(self, work: Callable[[], Any], record: CallRecord | None = None) -> Any:
        if record is not None:
            record.set_status("running")
        return await settle(work())


class _Handoff:
    """One call's journey to the kernel loop and back; settled exactly once."""

    def __init__(
        self, caller: asyncio.AbstractEventLoop, work: Callable[[], Any], record: CallRecord | None
    ) -> None:
        self.caller, self.work, self.record = caller, work, record
        self.outcome: asyncio.Future[Any] = caller.create_future()
        self.cancelled = False
        self.task: asyncio.Future[Any] | None = None

    def start(self) -> None:
        """On the kernel loop. Sync functions run right here: no task, no extra hop."""
        if self.cancelled:
            return  # cancelled while it waited for the kernel: never runs
        if self.record is not None and not self.record.set_status("running"):
            return  # dropped while it waited (its client hung up): never runs
        try:
            value = self.work()
            if inspect.isawaitable(value):
                self.task = asyncio.ensure_future(settle(value))
                self.task.add_done_callback(self._task_done)
                return
        except BaseException as exc:  # SystemExit or KeyboardInterrupt in a tool included
            self._report(False, exc)
            return
        self._report(True, value)

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        if task.cancelled():
            self._report(False, asyncio.CancelledError())
        elif task.exception() is not None:
            self._report(False, task.exception())
        else:
            self._report(True, task.result())

    def _report(self, ok: bool, value: Any) -> None:
        # RuntimeError: the server's loop is closed (it stopped), so nobody waits for this.
        with contextlib.suppress(RuntimeError):
            self.caller.call_soon_threadsafe(self._settle, ok, value)

    def _settle(self, ok: bool, value: Any) -> None:
        if self.outcome.done():
            return
        if ok:
            self.outcome.set_result(value)
        else:
            self.outcome.set_exception(value)


class LoopExecutor(ExecutorBase):
    """Runs user code on another thread's event loop (the kernel's) and waits for it.

    Cancelling the waiting coroutine stops work that has not started yet, and cancels a
    running async tool at its next ``await``.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        cells: CellWatch | None = None,
        max_waiting: int = MAX_HANDED,
    ) -> None:
        self.loop = loop
        self.cells = cells  # in a kernel: the cell that holds its loop (kernel/cells.py)
        self.max_waiting = max_waiting
        self.handed = 0  # calls handed to the kernel loop and not settled (caller's loop)

    async def run(self, work: Callable[[], Any], record: CallRecord | None = None) -> Any:
        caller = asyncio.get_running_loop()
        if caller is self.loop:
            if record is not None:
                record.set_status("running")
            return await settle(work())
        if self.loop.is_closed() or not self.loop.is_running():
            raise RuntimeError("the kernel's event loop is not running")
        if self.handed >= self.max_waiting:
            raise RpcError(SERVER_ERROR, too_many_waiting(self.handed))
        handoff = _Handoff(caller, work, record)
        self.handed += 1
        # Handed over once this task has yielded, not from inside its step: woken at
        # once, the kernel thread would find the GIL still held while this coroutine
        # chain suspends, and wait to be woken a second time (2-7 % of a call over HTTP).
        caller.call_soon(self._hand_over, handoff)
        try:
            return await handoff.outcome
        except asyncio.CancelledError:
            handoff.cancelled = True
            handoff.work = _never  # what it holds (its arguments) goes now, not when dequeued
            task = handoff.task
            if task is not None:
                self.loop.call_soon_threadsafe(task.cancel)
            elif record is not None and record.status == "running":
                # Sync code on the kernel's thread: stopped where it runs, as a task's
                # cancel stops it, if this executor can; else it runs to its end.
                self.interrupt(record)
            raise
        finally:
            self.handed -= 1

    def _hand_over(self, handoff: _Handoff) -> None:
        try:
            self.loop.call_soon_threadsafe(handoff.start)
        except RuntimeError as exc:  # the kernel's loop closed meanwhile: the call fails
            if not handoff.outcome.done():
                handoff.outcome.set_exception(exc)


def too_many_waiting(count: int) -> str:
    return (
        f"Too many calls ({count}) wait for the kernel or run on it: try again when some have ended"
    )


def _never() -> None:
    """The work of a call cancelled before it started (never run)."""
