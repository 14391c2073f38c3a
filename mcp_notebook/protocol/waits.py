"""The interceptor that tells a call's wait: behind a running cell, or at a breakpoint.

What is told, and when, is :mod:`.queueing`'s; this is where a tool call meets it, as it
is handed to the executor (after any confirmation). A task's request has its answer
already: its wait is the task's status message instead (:mod:`.taskcalls`).
"""

from __future__ import annotations

from collections.abc import Awaitable

from .executor import Executor
from .interceptors import Next, ToolCall
from .outcomes import Result
from .queueing import Waiting, watch


class WaitNotices:
    """Watches a call's wait from hand-over to its end; ``None`` from
    :func:`~.queueing.watch` (no token, no cell running: the common case) costs nothing
    more. A watched call whose wait is told on its stream gets no early reply."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    def __call__(self, call: ToolCall, next: Next) -> Awaitable[Result]:
        record = call.record
        if call.as_task or record is None:
            return next(call)
        executor = self.executor
        # %mcp break on this tool? Then a client that gave a token hears of the pause too.
        waiting = watch(call.request, record, executor.cells, executor.may_pause)
        if waiting is None:
            return next(call)
        call.told = waiting.streams
        return self._watched(waiting, call, next)

    @staticmethod
    async def _watched(waiting: Waiting, call: ToolCall, next: Next) -> Result:
        try:
            return await next(call)
        finally:
            waiting.close()
