"""Where user code runs.

The server never calls a tool, reader or prompt function itself: it hands a zero-argument
``work`` callable to an executor. ``work()`` returns a value or an awaitable. In a kernel
the executor is the kernel's own loop (see DESIGN.md §3); elsewhere, the caller's loop.

An optional ``then(ok, value)`` runs right where the work ran, as soon as it ended (with
its value, or the exception it raised; not when it was cancelled), and its return value is
the outcome. The server uses it to finish a call, and even answer the client, on the
kernel thread without waiting for another thread to wake up.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable
from typing import Any, Protocol

from .calls import CallRecord

Then = Callable[[bool, Any], Any]


class Executor(Protocol):
    async def run(
        self, work: Callable[[], Any], record: CallRecord | None = None, then: Then | None = None
    ) -> Any:
        """Run ``work`` where user code belongs; ``record`` is the call it serves, if any."""
        ...


async def settle(value: Any) -> Any:
    """Await ``value`` until it is no longer awaitable."""
    while inspect.isawaitable(value):
        value = await value
    return value


async def run_here(work: Callable[[], Any], then: Then | None) -> Any:
    """Run ``work`` on the current loop, then ``then``."""
    try:
        value = await settle(work())
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        if then is None:
            raise
        return then(False, exc)
    return value if then is None else then(True, value)


class InlineExecutor:
    """Runs user code on the loop that handles the request (tests, plain scripts)."""

    async def run(
        self, work: Callable[[], Any], record: CallRecord | None = None, then: Then | None = None
    ) -> Any:
        if record is not None:
            record.set_status("running")
        return await run_here(work, then)


class _Handoff:
    """One call's journey to the kernel loop and back; settled exactly once."""

    def __init__(
        self,
        caller: asyncio.AbstractEventLoop,
        work: Callable[[], Any],
        record: CallRecord | None,
        then: Then | None,
    ) -> None:
        self.caller, self.work, self.record, self.then = caller, work, record, then
        self.outcome: asyncio.Future[Any] = caller.create_future()
        self.cancelled = False
        self.task: asyncio.Future[Any] | None = None

    def start(self) -> None:
        """On the kernel loop. Sync functions run right here: no task, no extra hop."""
        if self.cancelled:
            return  # cancelled while it waited for the kernel: never runs
        if self.record is not None:
            self.record.set_status("running")
        try:
            value = self.work()
            if inspect.isawaitable(value):
                self.task = asyncio.ensure_future(settle(value))
                self.task.add_done_callback(self._task_done)
                return
        except BaseException as exc:  # SystemExit or KeyboardInterrupt in a tool included
            self._conclude(False, exc)
            return
        self._conclude(True, value)

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        if task.cancelled():
            self._report(False, asyncio.CancelledError())
        elif task.exception() is not None:
            self._conclude(False, task.exception())
        else:
            self._conclude(True, task.result())

    def _conclude(self, ok: bool, value: Any) -> None:
        # A call the client cancelled meanwhile gets no answer: ``then`` would send one.
        cancelled = self.cancelled or isinstance(value, asyncio.CancelledError)
        if self.then is not None and not cancelled:
            try:
                ok, value = True, self.then(ok, value)
            except BaseException as exc:
                ok, value = False, exc
        self._report(ok, value)

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


class LoopExecutor:
    """Runs user code on another thread's event loop (the kernel's) and waits for it.

    Cancelling the waiting coroutine stops work that has not started yet, and cancels a
    running async tool at its next ``await``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    async def run(
        self, work: Callable[[], Any], record: CallRecord | None = None, then: Then | None = None
    ) -> Any:
        caller = asyncio.get_running_loop()
        if caller is self.loop:
            if record is not None:
                record.set_status("running")
            return await run_here(work, then)
        if self.loop.is_closed() or not self.loop.is_running():
            raise RuntimeError("the kernel's event loop is not running")
        handoff = _Handoff(caller, work, record, then)
        self.loop.call_soon_threadsafe(handoff.start)
        try:
            return await handoff.outcome
        except asyncio.CancelledError:
            handoff.cancelled = True
            task = handoff.task
            if task is not None:
                self.loop.call_soon_threadsafe(task.cancel)
            raise
