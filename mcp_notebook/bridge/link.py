"""HTTP to the notebook's endpoint with kept-alive connections (http.client, one per thread)."""

from __future__ import annotations

import http.client
import json
import queue
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .sse import SseReader

CONNECT_TIMEOUT = 2.0


class LinkDown(ConnectionError):
    """The request never reached the server (refused, unreachable): safe to retry."""


class LinkLost(ConnectionError):
    """The connection broke after the request was sent: it may have run."""


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    messages: Iterator[dict[str, Any]]


class Link:
    def __init__(self, url: str, token: str | None) -> None:
        parts = urlsplit(url)
        self.url, self.token = url, token
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path = parts.path or "/"
        self._idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue()
        self._closed = False

    def headers(self, session_id: str | None, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if session_id:
            headers["Mcp-Session-Id"] = session_id
        return headers

    def _connection(self) -> http.client.HTTPConnection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT)

    def request(self, method: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        """Send one request; the reply's messages are read lazily (SSE arrives over time)."""
        for attempt in (1, 2):
            connection = self._connection()
            fresh = connection.sock is None
            try:
                if fresh:
                    connection.connect()
                # Tool calls and streams may take as long as they take.
                connection.sock.settimeout(None)
                connection.request(method, self.path, body=body, headers=headers)
                response = connection.getresponse()
            except (ConnectionRefusedError, OSError) as exc:
                connection.close()
                if fresh or attempt == 2:
                    if isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError)):
                        raise LinkLost(str(exc)) from exc
                    raise LinkDown(str(exc) or type(exc).__name__) from exc
                continue  # a kept-alive connection the server had closed: retry on a new one
            return Reply(response.status, response.headers, self._messages(connection, response))
        raise AssertionError("unreachable")

    def _messages(
        self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse
    ) -> Iterator[dict[str, Any]]:
        content_type = (response.headers.get("Content-Type") or "").lower()
        try:
            if content_type.startswith("text/event-stream"):
                reader = SseReader()
                while True:
                    raw = response.readline()
                    if not raw:
                        break
                    event = reader.feed_line(raw.decode("utf-8").rstrip("\r\n"))
                    if event is not None and event[1]:
                        yield json.loads(event[1])
            else:
                body = response.read()
                if body and content_type.startswith("application/json"):
                    yield json.loads(body)
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise LinkLost(str(exc) or type(exc).__name__) from exc
        finally:
            if response.isclosed() and not response.will_close and not self._closed:
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
