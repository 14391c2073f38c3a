"""One HTTP request and its response in ASGI messages: the ASGI app's means of answering
(asgi.py), as replying.py is the tornado handler's. No tornado is imported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from ..errors import McpNotebookError
from ..protocol import jsonrpc
from ..protocol.caller import Caller
from ..protocol.jsonrpc import INVALID_REQUEST, Message
from . import policy, posts
from .responses import error_body
from .security import AUTHENTICATE

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
SEND_PIECE = 64 * 1024  # bytes of a response body handed to the ASGI server at a time


class NotReading(McpNotebookError, ConnectionError):
    """The client took nothing of a response for ``Limits.write_timeout``."""


class Headers(Mapping[str, str]):
    """An ASGI scope's headers, looked up without regard to case (the first of repeats;
    repeated ``Authorization`` lines joined with commas, as tornado joins them, so that
    two tokens are no token rather than whichever came first)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._items: dict[str, str] = {}
        for name, value in raw:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            if key == "authorization" and key in self._items:
                self._items[key] += "," + text
            else:
                self._items.setdefault(key, text)

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Exchange:
    """One HTTP request and its response, in ASGI messages."""

    def __init__(
        self, scope: Scope, receive: Receive, send: Send, write_timeout: float = 30.0
    ) -> None:
        self.scope, self.receive, self._send = scope, receive, send
        self.write_timeout = write_timeout
        self.headers = Headers(scope.get("headers", []))
        self.started = False
        self.streaming = False
        self.extra: list[tuple[bytes, bytes]] = []  # headers of the response to come
        self.trace: dict[str, str] | None = None  # the W3C trace headers, if traced
        self.caller: Caller | None = None  # who sent it, with OAuth on (policy.authenticate)

    def header(self, name: str, value: str) -> None:
        self.extra.append((name.lower().encode("latin-1"), value.encode("latin-1")))

    async def respond(self, status: int, body: bytes = b"", content_type: str = "") -> None:
        headers = list(self.extra)
        if content_type:
            headers.append((b"content-type", content_type.encode()))
        self.started = True
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        await self._body(body)

    async def fail(
        self,
        status: int,
        message: str,
        code: int = INVALID_REQUEST,
        request_id: Any = None,
        data: Any = None,
    ) -> None:
        if status == 401 and not any(name == b"www-authenticate" for name, _ in self.extra):
            self.header("WWW-Authenticate", AUTHENTICATE)  # the static token's
        await self.respond(status, error_body(code, message, request_id, data), posts.JSON)

    async def answer(self, decision: policy.Decision) -> None:
        """Send a decision's answer: its status, headers and error (or no body)."""
        for name, value in decision.headers:
            self.header(name, value)
        error = decision.error
        if error is None:
            body = decision.body
            return await self.respond(decision.status, body or b"", posts.JSON if body else "")
        return await self.fail(
            decision.status, error.message, error.code, decision.request_id, error.data
        )

    async def start_events(self) -> None:
        headers = [
            *self.extra,
            (b"content-type", posts.SSE.encode()),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self.started = self.streaming = True
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})

    async def event(self, message: Message) -> None:
        data = jsonrpc.encode_reply(message)
        await self._body(b"event: message\ndata: " + data + b"\n\n", more=True)

    async def end_events(self) -> None:
        await self._send({"type": "http.response.body", "body": b""})

    async def _body(self, data: bytes, more: bool = False) -> None:
        """Send ``data``; a large one in pieces, each of which the client must take within
        ``write_timeout``. An ASGI server buffers what it is given until the client reads
        it (uvicorn: for ever), so a whole reply handed over at once stays in memory as
        long as a client that does not read keeps its connection."""
        if len(data) <= SEND_PIECE:
            return await self._send({"type": "http.response.body", "body": data, "more_body": more})
        for start in range(0, len(data), SEND_PIECE):
            piece = data[start : start + SEND_PIECE]
            last = start + SEND_PIECE >= len(data)
            message = {"type": "http.response.body", "body": piece, "more_body": more or not last}
            try:
                await asyncio.wait_for(self._send(message), self.write_timeout)
            except asyncio.TimeoutError:
                raise NotReading("the client did not read its reply: dropped") from None
        return None

    async def body(self, limit: int) -> bytes | None:
        """The whole request body, or None when it passed ``limit`` bytes."""
        chunks, size = [], 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ConnectionError("the client went away mid-request")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def disconnected(self) -> None:
        """Returns when the client closes the connection (the body was read already)."""
        while (await self.receive())["type"] != "http.disconnect":
            pass
