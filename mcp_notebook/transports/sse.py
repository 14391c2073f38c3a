"""Server-Sent Event streams that outlive their HTTP connection.

Every event gets an id ``<stream key>.<n>`` and is kept, so a client whose connection
broke — or that the server asked to reconnect — resumes with ``Last-Event-ID`` on a GET
and receives what it missed, then the rest of the stream. What is kept is bounded: the
last ``KEEP_EVENTS`` events of a stream, and ``REPLAY_CHARACTERS`` of events for all of a
server's streams together (a :class:`ReplayBudget`); past that, the streams written to
the longest ago lose their oldest events first, never a stream its newest one. Every
reply echoes its request's id, up to a body's size: 32 kept streams of a session with
4 MB ids held 123 MiB, per session, before there was a budget.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from typing import Any, Protocol

from ..errors import McpNotebookError
from ..protocol import jsonrpc

logger = logging.getLogger(__name__)

KEEP_EVENTS = 512
REPLAY_CHARACTERS = 64 * 1024 * 1024  # of all the streams' kept events together
# An event id is "<stream key>.<n>"; keys are short and n counts events of one stream.
MAX_EVENT_ID = 64


class Writer(Protocol):
    def write_event(self, event_id: str | None, data: str) -> None: ...
    def end_stream(self, retry_ms: int | None = None, last_id: str | None = None) -> None: ...


class ReplayBudget:
    """The characters that all of a server's streams keep for resumption, within
    ``limit``: past it, the streams written to the longest ago lose events first."""

    def __init__(self, limit: int = REPLAY_CHARACTERS) -> None:
        self.limit = limit
        self.total = 0
        self._keeping: OrderedDict[SseStream, bool] = OrderedDict()  # least recent first

    def kept(self, stream: SseStream, size: int) -> None:
        """``stream`` kept an event of ``size`` characters."""
        self.total += size
        self._keeping[stream] = True
        self._keeping.move_to_end(stream)
        while self.total > self.limit:
            oldest = next(iter(self._keeping))
            if oldest is stream and len(stream.events) <= 1:
                break  # the event just sent stays: it may be the reply
            self.total -= oldest.drop_oldest()
            if not oldest.events:
                del self._keeping[oldest]

    def kept_streams(self) -> int:
        """How many streams keep events now (for status and tests)."""
        return len(self._keeping)

    def forget(self, stream: SseStream) -> None:
        """``stream`` can no longer be resumed: what it kept is freed."""
        if self._keeping.pop(stream, False):
            self.total -= stream.kept
        stream.events.clear()
        stream.kept = 0
        stream.budget = None
        stream.keeps = False  # its reply may still be sent (to a client gone): not kept


class SseStream:
    def __init__(self, key: str, numbered: bool = True, budget: ReplayBudget | None = None) -> None:
        self.key = key
        # 2026-07-28 dropped resumption: its streams have no event ids and keep no events.
        self.numbered = numbered
        self.seq = 0
        self.events: deque[tuple[int, str]] = deque()
        self.kept = 0  # characters of the events kept
        self.keeps = numbered  # False once it can no longer be resumed
        self.budget = budget
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
        if self.keeps:
            self._keep(data)
        if self.writer is not None:
            self.writer.write_event(f"{self.key}.{self.seq}" if self.numbered else None, data)

    def _keep(self, data: str) -> None:
        self.events.append((self.seq, data))
        self.kept += len(data)
        if len(self.events) > KEEP_EVENTS:
            freed = self.drop_oldest()
            if self.budget is not None:
                self.budget.total -= freed
        if self.budget is not None:
            self.budget.kept(self, len(data))

    def drop_oldest(self) -> int:
        """Forget the oldest event kept; its size in characters."""
        _, data = self.events.popleft()
        self.kept -= len(data)
        return len(data)

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
