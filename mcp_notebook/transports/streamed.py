"""The endpoint for request bodies tornado does not read whole first (bodies.py): counted as
they arrive, refused early when over the limit or too slow, drained before the close.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import tornado.ioloop
import tornado.iostream

from ..protocol.jsonrpc import INVALID_REQUEST
from .handler import McpHandler
from .lingering import LINGER_BYTES, LINGER_SECONDS, answer_and_close, shut_write
from .responses import close_response, error_body

_KEPT = frozenset({"Www-Authenticate", "Retry-After", "Allow"})  # as tornado names them


class StreamedMcpHandler(McpHandler):
    """The endpoint for bodies of unknown or excessive size, or of a Content-Length that is
    not one: counted as they arrive, so that one over the limit gets its 413 without being
    kept, and one that does not arrive in time its 408.

    A request refused before its body has been read is answered at once, on the raw
    connection, and the rest of the body is drained (within ``LINGER_*``) before the
    connection closes, so the client reads the answer instead of a connection reset.
    """

    streams_body = True

    def initialize(self) -> None:
        super().initialize()
        self._chunks: list[bytes] = []
        self._size = 0
        self._refused = False  # answered before the body ended: the rest is dropped
        self._answered: asyncio.Future[None] | None = None  # writing that answer
        self._dropped = 0
        self._timers: list[object] = []

    def prepare(self) -> None:
        # We count the body ourselves; tornado's own limit would answer a bare 400.
        self._connection().set_max_body_size(2**63)
        super().prepare()
        if not self._finished and not self._refused:
            # A body that trickles or never ends gets 408 instead of holding the connection.
            self._later(self.transport.limits.body_timeout, self._too_slow)

    def data_received(self, chunk: bytes) -> None:
        if self._refused:
            self._dropped += len(chunk)
            if self._dropped > LINGER_BYTES:
                self._close()
            return
        self._size += len(chunk)
        if self._size > self.transport.max_body:
            self._chunks.clear()
            self.fail(413, self._too_large_message())
        else:
            self._chunks.append(chunk)

    def _body(self) -> bytes:
        return b"".join(self._chunks)

    def _let_go(self) -> None:
        super()._let_go()
        self._chunks = []

    def fail(
        self,
        status: int,
        message: str,
        code: int = INVALID_REQUEST,
        request_id: Any = None,
        data: Any = None,
    ) -> None:
        if self._body_read():
            return super().fail(status, message, code, request_id, data)
        self._refuse(status, error_body(code, message, None, data))

    def _body_read(self) -> bool:
        return self.request._body_future.done()  # tornado has no public name for this

    def _refuse(self, status: int, body: bytes) -> None:
        """Answer now, while the body is still coming; close once it is drained."""
        if self._refused:
            return
        self._refused = True
        self._chunks.clear()
        # What the refusal set besides its body (an OAuth challenge, a Retry-After).
        kept = [(name, value) for name, value in self._headers.get_all() if name in _KEPT]
        response = close_response(status, body, kept)
        if not self._prepared_future_done():
            # Still in prepare(): the connection can be taken from tornado, body unread.
            answer_and_close(self.detach(), response)
            return
        stream = self._connection().stream
        # tornado goes on reading the body into data_received, which drops it.
        self._answered = stream.write(response)
        self._answered.add_done_callback(lambda _: shut_write(stream))
        self._later(LINGER_SECONDS, self._close)

    def _prepared_future_done(self) -> bool:
        prepared = self._prepared_future  # a Future while prepare() runs
        return prepared is None or prepared.done()

    def _too_slow(self) -> None:
        if not self._body_read() and not self._refused:
            seconds = f"{self.transport.limits.body_timeout:g}"
            self.fail(408, f"Request Timeout: the body did not arrive within {seconds} s")

    def _later(self, seconds: float, callback: Callable[[], None]) -> None:
        self._timers.append(tornado.ioloop.IOLoop.current().call_later(seconds, callback))

    def _close(self) -> None:
        stream: tornado.iostream.IOStream | None = self._connection().stream  # None: detached
        if stream is not None:
            stream.close()

    def _stop_timers(self) -> None:
        loop = tornado.ioloop.IOLoop.current()
        for timer in self._timers:
            loop.remove_timeout(timer)
        self._timers.clear()

    async def _after_body(self) -> bool:
        """Whether the method may go on: False after a refusal (the connection closes)."""
        self._stop_timers()
        if self._refused:
            stream = self.detach()  # the whole body was drained: nothing unread is lost
            with contextlib.suppress(tornado.iostream.StreamClosedError):
                if self._answered is not None:
                    await self._answered  # closing drops what is not written yet
            stream.close()
            return False
        return True

    async def _serve(self) -> None:
        if await self._after_body():
            await super()._serve()

    def on_connection_close(self) -> None:
        self._stop_timers()
        super().on_connection_close()

    def on_finish(self) -> None:
        self._stop_timers()
        super().on_finish()
