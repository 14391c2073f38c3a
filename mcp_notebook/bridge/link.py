"""HTTP to the notebook's endpoint with kept-alive connections (http.client, one per thread).

A reply's messages are read lazily, in the order the server sends them, whatever the body:
one JSON document, an SSE stream, or JSON lines (``application/x-ndjson``, or a streamed
``application/json`` that some 2026-07-28 servers use for ``subscriptions/listen``).
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import McpNotebookError
from ..protocol.names import SESSION_HEADER
from ..wire import jsontext
from .sse import MAX_EVENT_BYTES, EventTooLarge, SseReader

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 2.0
LINE_PIECE = 1024 * 1024  # bytes of a body's line read at a time
Message = dict[str, Any]


class LinkDown(McpNotebookError, ConnectionError):
    """The request never reached the server (refused, unreachable): safe to retry."""


class LinkLost(McpNotebookError, ConnectionError):
    """The connection broke after the request was sent: it may have run."""


class Abort:
    """Lets another thread cut one request's connection: a 2026-07-28 cancellation.

    Closing the response stream is how a client cancels over Streamable HTTP; the reading
    thread then sees the stream end (``LinkLost``) and checks :attr:`cancelled`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connection: http.client.HTTPConnection | None = None
        self.cancelled = False

    def bind(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if self.cancelled:
                raise LinkLost("cancelled by the client")
            self._connection = connection

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            # shutdown() wakes a thread blocked reading this socket; close() alone may not.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    messages: Iterator[Any]  # parsed JSON values: a server may send other than objects


class Link:
    def __init__(self, url: str, token: str | None) -> None:
        parts = urlsplit(url)
        self.url, self.token = url, token
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path = parts.path or "/"
        self._idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue()
        self._closed = False

    def headers(
        self, session_id: str | None, accept: str, extra: dict[str, str] | None = None
    ) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if session_id:
            headers[SESSION_HEADER] = session_id
        headers.update(extra or {})
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT)

    def request(
        self,
        method: str,
        body: bytes | None,
        headers: dict[str, str],
        abort: Abort | None = None,
    ) -> Reply:
        """Send one request; the reply's messages are read lazily (SSE arrives over time)."""
        for attempt in (1, 2):
            connection = self._connection()
            fresh = connection.sock is None
            try:
                if fresh:
                    connection.connect()
                if abort is not None:
                    abort.bind(connection)
                # Tool calls and streams may take as long as they take.
                connection.sock.settimeout(None)
                connection.request(method, self.path, body=body, headers=headers)
                response = connection.getresponse()
            except (ConnectionRefusedError, OSError) as exc:
                connection.close()
                if abort is not None and abort.cancelled:
                    raise LinkLost("cancelled by the client") from exc
                if fresh or attempt == 2:
                    if isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError)):
                        raise LinkLost(str(exc)) from exc
                    raise LinkDown(str(exc) or type(exc).__name__) from exc
                continue  # a kept-alive connection the server had closed: retry on a new one
            except ValueError:  # a header value http.client will not send
                connection.close()
                raise
            messages = self._messages(connection, response, abort)
            return Reply(response.status, response.headers, messages)
        raise AssertionError("unreachable")

    def _messages(
        self,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        abort: Abort | None,
    ) -> Iterator[Any]:
        content_type = (response.headers.get("Content-Type") or "").lower()
        try:
            if content_type.startswith("text/event-stream"):
                yield from _sse(response)
            elif content_type.startswith("application/x-ndjson"):
                yield from _json_lines(response)
            elif content_type.startswith("application/json"):
                if response.length is None:  # streamed: maybe one JSON value per line
                    yield from _json_lines(response, whole=True)
                else:
                    body = response.read()
                    if body.strip():
                        yield jsontext.loads(body)
            else:
                response.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            if abort is not None and abort.cancelled:
                raise LinkLost("cancelled by the client") from exc
            raise LinkLost(str(exc) or type(exc).__name__) from exc
        finally:
            cut = abort is not None and abort.cancelled
            if response.isclosed() and not response.will_close and not self._closed and not cut:
                self._idle.put(connection)
            else:
                connection.close()

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def _sse(response: http.client.HTTPResponse) -> Iterator[Message]:
    reader = SseReader()
    while raw := _line(response):
        event = reader.feed_line(raw.rstrip(b"\r\n"))
        if event is not None and event[1].strip():
            yield jsontext.loads(event[1])


def _line(response: http.client.HTTPResponse) -> bytes:
    """The next line of a body, within the bound on one message: a line without end
    would otherwise be read whole. Read in pieces, as a longer limit is a bigger buffer."""
    pieces, size = [], 0
    while piece := response.readline(LINE_PIECE):
        pieces.append(piece)
        size += len(piece)
        if piece.endswith(b"\n"):
            break
        if size > MAX_EVENT_BYTES:
            raise EventTooLarge(MAX_EVENT_BYTES)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _json_lines(response: http.client.HTTPResponse, whole: bool = False) -> Iterator[Message]:
    """One JSON value per line; with ``whole``, lines add up until they parse (a document
    that a server pretty-printed over several lines is still one message)."""
    pending = b""
    while raw := _line(response):
        pending += raw
        if len(pending) > MAX_EVENT_BYTES:
            raise EventTooLarge(MAX_EVENT_BYTES)
        if not pending.strip():
            pending = b""
            continue
        try:
            message = jsontext.loads(pending)
        except jsontext.JsonTextError:
            if whole:
                continue
            raise
        pending = b""
        yield message
    if pending.strip():
        yield jsontext.loads(pending)  # raises ValueError: the body ended inside a value


def read_reply(reply: Reply, request_id: Any, forward: Callable[[Message], None]) -> Message | None:
    """The response to ``request_id`` from a reply; other messages go to ``forward``.

    Stops reading at the response, so a server that keeps the stream open after it does
    not hold the caller. None when the body ended without one. Raises ``LinkLost`` when
    the connection broke and ``ValueError`` for a body that is not JSON.

    An error response without an id, or any error response in an HTTP error reply (the
    POST carried only this request), is this request's: it gets ``request_id``.
    """
    messages = reply.messages
    try:
        for message in messages:
            if not isinstance(message, dict):
                logger.warning("dropped a reply that is not a JSON-RPC object")
                continue
            if "method" not in message:
                if "error" in message and (message.get("id") is None or reply.status >= 400):
                    message["id"] = request_id
                if message.get("id") == request_id:
                    return message
            forward(message)
        return None
    finally:
        close = getattr(messages, "close", None)
        if close is not None:
            close()
