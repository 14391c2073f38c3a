"""Server-Sent Event streams that outlive their HTTP connection.

Every event gets an id ``<stream key>.<n>`` and is kept (a bounded number), so a client
whose connection broke — or that the server asked to reconnect — resumes with
``Last-Event-ID`` on a GET and receives what it missed, then the rest of the stream.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Protocol

from ..errors import McpNotebookError
from ..protocol import jsonrpc

logger = logging.getLogger(__name__)

KEEP_EVENTS = 512
# An event id is "<stream key>.<n>"; keys are short and n counts events of one stream.
MAX_EVENT_ID = 64


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
        if "method" in message:
            try:
                data = jsonrpc.dumps(message).decode()
            except (TypeError, ValueError) as exc:  # e.g. a NaN a tool logged: not JSON
                logger.warning("dropped %s: it is not JSON (%s)", message.get("method"), exc)
                return
        else:
            data = jsonrpc.encode_reply(message).decode()
        self.seq += 1
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


class BadEventId(McpNotebookError, ValueError):
    """A ``Last-Event-ID`` that no event of this server ever had."""


def parse_event_id(value: str | None) -> tuple[str, int] | None:
    """``(stream key, event number)`` of a ``Last-Event-ID``; None when there is none."""
    if not value:
        return None
    key, dot, seq = value.rpartition(".")
    # isdigit() alone lets through "²" (int() refuses it) and 5,000 digits (int() would
    # too, past Python's digit limit): only short ASCII numbers are ours.
    if not dot or not key or len(value) > MAX_EVENT_ID or not (seq.isascii() and seq.isdigit()):
        shown = value[:MAX_EVENT_ID]
        raise BadEventId(f"Last-Event-ID {shown!r} is not an event id of this server")
    return key, int(seq)
