"""How a call reaches the kernel's loop (protocol/executor.py ``LoopExecutor.run``).

The server's loop hands the work over from a callback of its own, once the calling task
has yielded: handed over from inside the task's step, the kernel thread, woken at once,
would find the GIL still held while the call's coroutines suspend, and wait for a second
wake-up. In process: a loop on a thread stands in for the kernel's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_notebook.protocol.executor import LoopExecutor


class Recording:
    """The kernel's loop, recording from where each call reaches it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, closing: bool = False) -> None:
        self.loop, self.closing = loop, closing
        self.from_task: list[asyncio.Task[Any] | None] = []

    def is_closed(self) -> bool:
        return self.loop.is_closed()

    def is_running(self) -> bool:
        return self.loop.is_running()

    def call_soon_threadsafe(self, callback: Any, *args: Any) -> Any:
        self.from_task.append(asyncio.current_task())
        if self.closing:
            raise RuntimeError("Event loop is closed")
        return self.loop.call_soon_threadsafe(callback, *args)


async def test_a_call_is_handed_over_once_the_calling_task_has_yielded(
    kernel_loop: asyncio.AbstractEventLoop,
) -> None:
    kernel: Any = Recording(kernel_loop)
    executor = LoopExecutor(kernel)
    ran_on: list[asyncio.AbstractEventLoop] = []

    def work() -> int:
        ran_on.append(asyncio.get_running_loop())
        return 5

    assert await executor.run(work) == 5
    assert ran_on == [kernel_loop]  # it ran on the kernel's loop
    assert kernel.from_task == [None]  # from a plain callback, not inside the caller's task
    assert executor.handed == 0


async def test_a_kernel_loop_that_closes_before_the_hand_over_fails_the_call(
    kernel_loop: asyncio.AbstractEventLoop,
) -> None:
    executor = LoopExecutor(Recording(kernel_loop, closing=True))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="closed"):
        await asyncio.wait_for(executor.run(lambda: "never"), 30)
    assert executor.handed == 0
