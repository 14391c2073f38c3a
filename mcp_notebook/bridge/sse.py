"""A sans-IO reader of Server-Sent Events: feed lines, get (event id, data) pairs.

One event's data is bounded (``max_bytes``): the server could otherwise make the bridge
hold an endless event. Its lines are kept as bytes until the event is complete, each
counted with what a bytes object costs besides its content (``LINE_COST``), so that many
short ``data:`` lines cannot hold much more memory than the bound either.
"""

from __future__ import annotations

from ..errors import McpNotebookError

MAX_EVENT_BYTES = 64 * 1024 * 1024  # of one event's data, as received
LINE_COST = 48  # a bytes object besides its content (33), and its place in a list


class EventTooLarge(McpNotebookError, ValueError):
    """An SSE event (or one line of a body) passed the bridge's bound on one message."""

    def __init__(self, limit: int) -> None:
        size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"
        super().__init__(f"a message longer than {size}")


class SseReader:
    def __init__(self, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_bytes = max_bytes
        self._data: list[bytes] = []  # the event's data lines
        self._cost = 0  # what they take, as counted against max_bytes
        self._id: str | None = None
        self.last_id: str | None = None

    def feed_line(self, line: bytes) -> tuple[str | None, str] | None:
        """One line without its ending; returns an event when a blank line completes one.
        Raises EventTooLarge once the event's data passes ``max_bytes`` (it is dropped)."""
        if not line:
            if not self._data:
                return None
            event = (self._id, b"\n".join(self._data).decode("utf-8"))
            self._data, self._cost, self._id = [], 0, None
            return event
        if line.startswith(b":"):
            return None  # a comment (keep-alive)
        field, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if field == b"data":
            self._cost += len(value) + LINE_COST
            if self._cost > self.max_bytes:
                self._data, self._cost = [], 0
                raise EventTooLarge(self.max_bytes)
            self._data.append(value)
        elif field == b"id":
            self._id = self.last_id = value.decode("utf-8")
        return None
