"""A sans-IO reader of Server-Sent Events: feed lines, get (event id, data) pairs."""

from __future__ import annotations


class SseReader:
    def __init__(self) -> None:
        self._data: list[str] = []
        self._id: str | None = None
        self.last_id: str | None = None

    def feed_line(self, line: str) -> tuple[str | None, str] | None:
        """One line without its ending; returns an event when a blank line completes one."""
        if not line:
            if not self._data:
                return None
            event = (self._id, "\n".join(self._data))
            self._data, self._id = [], None
            return event
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "id":
            self._id = self.last_id = value
        return None
