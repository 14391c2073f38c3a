"""One pending confirmation: settled exactly once, by a click, the timeout or a cancel.

The call waits on the server's loop; clicks arrive on the kernel's loop. The state is
guarded by a lock so that whoever settles first wins and the loser learns it: a call that
was denied or timed out can never be approved late, and an approval that beat the timeout
by a hair still runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from ..protocol import CallRecord
from ..protocol.outcomes import Declined

PENDING = "pending"
APPROVED, DENIED, EXPIRED, CANCELLED = "approved", "denied", "timed out", "cancelled"

Listener = Callable[["Decision"], None]


class Decision:
    def __init__(
        self,
        tool: Any,
        arguments: dict[str, Any],
        record: CallRecord,
        client: str,
        timeout: float,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.tool, self.record, self.client = tool, record, client
        self.id = record.id
        self.arguments = dict(arguments)
        self.timeout = timeout
        # When it expires, on the monotonic clock (a wall-clock jump cannot move it), and
        # the same moment in wall time, only to show people ("denied at 14:05:09").
        self.expires = time.monotonic() + timeout
        self.deadline = time.time() + timeout
        self.state = PENDING
        self.reason: str | None = None
        self.listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._loop = loop  # the server's: where the call waits
        self._done: asyncio.Future[None] = loop.create_future()

    @property
    def pending(self) -> bool:
        return self.state == PENDING

    def remaining(self) -> float:
        """Seconds left before the decision expires (0 once past)."""
        return max(0.0, self.expires - time.monotonic())

    def settle(
        self, state: str, arguments: dict[str, Any] | None = None, reason: str | None = None
    ) -> bool:
        """Decide, from any thread. False if it was decided already (nothing changes)."""
        with self._lock:
            if self.state != PENDING:
                return False
            self.state, self.reason = state, reason
            if arguments is not None:
                self.arguments = dict(arguments)
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(_resolve, self._done)
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):  # a view's bug must not strand the call
                listener(self)
        return True

    async def outcome(self) -> dict[str, Any]:
        """On the server's loop: the approved arguments, or Declined."""
        try:
            await asyncio.wait_for(asyncio.shield(self._done), self.remaining())
        except asyncio.TimeoutError:
            self.settle(EXPIRED, reason=f"nobody approved it within {self.timeout:g} s")
        except asyncio.CancelledError:
            self.settle(CANCELLED, reason="the client cancelled the call")
            raise
        if self.state == APPROVED:  # possibly just before the timeout: it won
            return self.arguments
        name = getattr(self.tool, "name", "?")
        if self.state in (EXPIRED, CANCELLED):  # nobody declined it
            raise Declined(f"Tool '{name}' was not run: {self.reason}.")
        because = f": {self.reason}" if self.reason else "."
        raise Declined(f"The user declined to run tool '{name}'{because}")


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
