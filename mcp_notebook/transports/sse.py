"""Server-Sent Event streams that outlive their HTTP connection.

Every event gets an id ``<stream key>.<n>`` and is kept (a bounded number), so a client
whose connection broke — or that the server asked to reconnect — resumes with
``Last-Event-ID`` on a GET and receives what it missed, then the rest of the stream.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Protocol

KEEP_EVENTS = 512


class Writer(Protocol):
    def write_event(self, event_id: str | None, data: str) -> None: ...
    def end_stream(self, retry_ms: int | None = None, last_id: str | None = None) -> None: ...


class SseStream:
    def __init__(self, key: str, numbered: bool = True) -> None:
        self.key = key
        # 2026-07-28 dropped resumption: its streams have no event ids and keep no events.
        self.numbered = numbered
        self.seq = 0
        self.events: deque[tuple[int, str]] = deque(maxlen=KEEP_EVENTS)
        self.writer: Writer | None = None
        self.done = False
        self.detached = False  # the server closed the connection; the client will resume

    def send(self, message: dict[str, Any]) -> None:
        self.seq += 1
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        if self.numbered:
            self.events.append((self.seq, data))
        if self.writer is not None:
            self.writer.write_event(f"{self.key}.{self.seq}" if self.numbered else None, data)

    def finish(self) -> None:
        """No more events: the request was answered."""
        self.done = True
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.end_stream()

    def detach(self, writer: Writer, retry_ms: int | None = None) -> None:
        """Close this connection; the stream goes on and can be resumed."""
        if self.writer is writer:
            self.writer = None
            self.detached = True
            writer.end_stream(retry_ms, f"{self.key}.{self.seq}")

    @property
    def resumable(self) -> bool:
        """Whether the client knows an event id of this stream to resume from."""
        return self.seq > 0 or self.detached

    def attach(self, writer: Writer, after: int) -> None:
        """Resume on a new connection: replay what came after event ``after``."""
        for seq, data in list(self.events):
            if seq > after:
                writer.write_event(f"{self.key}.{seq}", data)
        if self.done:
            writer.end_stream()
        else:
            self.writer = writer


def parse_event_id(value: str | None) -> tuple[str, int] | None:
    if not value or "." not in value:
        return None
    key, _, seq = value.rpartition(".")
    return (key, int(seq)) if seq.isdigit() else None
