"""Where user code runs.

The server never calls a tool, reader or prompt function itself: it hands a zero-argument
``work`` callable to an executor. In a kernel that is the kernel's own loop (see
DESIGN.md §3); elsewhere, the caller's loop.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, Protocol


class Executor(Protocol):
    async def run(self, work: Callable[[], Any]) -> Any: ...


async def _complete(work: Callable[[], Any]) -> Any:
    value = work()
    while inspect.isawaitable(value):
        value = await value
    return value


class InlineExecutor:
    """Runs user code on the loop that handles the request (tests, plain scripts)."""

    async def run(self, work: Callable[[], Any]) -> Any:
        return await _complete(work)


class LoopExecutor:
    """Runs user code on another thread's event loop (the kernel's) and waits for it.

    Cancelling the waiting coroutine cancels the work if it has not started yet, and
    cancels a running async tool at its next ``await``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    async def run(self, work: Callable[[], Any]) -> Any:
        if asyncio.get_running_loop() is self.loop:
            return await _complete(work)
        if self.loop.is_closed() or not self.loop.is_running():
            raise RuntimeError("the kernel's event loop is not running")
        future = asyncio.run_coroutine_threadsafe(_complete(work), self.loop)
        return await asyncio.wrap_future(future)
