"""How the endpoint's handler answers, in every era: the checks made before a request is
read, errors as HTTP statuses with JSON-RPC bodies, a reply as JSON or one SSE event, SSE
streams, and the early reply written from the kernel thread (direct.py).

The protocol handlers build on this: handler.py (both eras, GET, DELETE) and the
dialect plug-ins (dialects.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import tornado.iostream

from ..protocol import jsonrpc
from ..protocol.jsonrpc import INVALID_REQUEST, Message, RpcError
from . import policy
from .direct import DirectReply, always_ok
from .endpoint import Endpoint
from .http_exchange import HttpExchange
from .responses import error_body
from .security import AUTHENTICATE
from .sse import SseStream

RETRY_MS = 500  # how long a client waits before resuming a stream that broke
_UNREAD = policy.UNREAD  # statuses given before the body is read: no request id


class ReplyingHandler(HttpExchange):
    """An exchange of the MCP endpoint, with its means of answering."""

    transport: Endpoint

    def initialize(self) -> None:
        self._streaming = False
        self._ended: asyncio.Event | None = None
        self._message: Any = None  # the decoded body, once post() has read it
        self._stream: SseStream | None = None  # the SSE stream this response carries
        # A dialect plug-in's response held open until the client hangs up.
        self.held_open: asyncio.Event | None = None

    def _body(self) -> bytes:
        return self.request.body

    def _let_go(self) -> None:
        """The request is served: its body and decoded message go now. The handler, its
        request and its connection refer to each other, so they wait for the cyclic
        garbage collector, which runs seldom: with them went up to 8 MiB per request
        (the 4 MiB body and its parsed message), 100-200 MB after 100 refused calls."""
        self._message = None
        self.request.body = b""

    def on_finish(self) -> None:
        self._let_go()

    # -- gatekeeping -------------------------------------------------------------------
    def fail(
        self,
        status: int,
        message: str,
        code: int = INVALID_REQUEST,
        request_id: Any = None,
        data: Any = None,
    ) -> None:
        """Answer with an HTTP error carrying a JSON-RPC error; it names the request's id
        when the body has a readable one (not for 401/403/413: those bodies are not read)."""
        if request_id is None and status not in _UNREAD:
            request_id = self._readable_id()
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        if status == 401 and "WWW-Authenticate" not in self._headers:
            self.set_header("WWW-Authenticate", AUTHENTICATE)  # the static token's
        self.finish(error_body(code, message, request_id, data))

    def _readable_id(self) -> Any:
        """The id of the request this body holds, if it has one a reply may echo."""
        message = self._message
        if message is None and self.request.method == "POST":
            try:
                message = jsonrpc.parse(self._body())
            except RpcError as error:
                return jsonrpc.refused_id(error)
        return jsonrpc.readable_id(message)

    def prepare(self) -> None:
        request = policy.HttpRequest(self.request.method or "GET", self.request.headers)
        refused = policy.screen(request, self.transport.settings)
        if refused is not None:
            self.answer(refused)

    def answer(self, decision: policy.Decision) -> None:
        """Send a decision's answer: its status, headers and error (or no body)."""
        for name, value in decision.headers:
            self.set_header(name, value)
        error = decision.error
        if error is not None:
            return self.fail(
                decision.status, error.message, error.code, decision.request_id, error.data
            )
        self.set_status(decision.status)
        if decision.body is not None:
            self.set_header("Content-Type", "application/json")
        self.finish(decision.body)
        return None

    def _too_large_message(self) -> str:
        return policy.too_large(self.transport.max_body)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        request_id = None if status_code in _UNREAD else self._readable_id()
        self.set_header("Content-Type", "application/json")
        self.finish(error_body(INVALID_REQUEST, self._reason, request_id))

    def _gone(self) -> bool:
        """Whether the client's connection is closed, or lent to a call (detached)."""
        stream: tornado.iostream.IOStream | None = self._connection().stream
        return stream is None or stream.closed()

    # -- replies -----------------------------------------------------------------------
    def _direct_reply(
        self,
        status: Callable[[dict[str, Any]], int] = always_ok,
        on_hang_up: Callable[[], None] | None = None,
    ) -> DirectReply | None:
        """An early reply for this POST, if its connection can outlive the response."""
        request = self.request
        connection = request.headers.get("Connection", "").lower()
        if request.version != "HTTP/1.1" or "close" in (t.strip() for t in connection.split(",")):
            return None  # tornado closes such connections after the response
        http1 = self._connection()
        # tornado's HTTPServer gives each connection an _HTTPRequestContext (private; the
        # attribute is annotated as object): it has the client's address and its family.
        context: Any = http1.context

        def lendable() -> tornado.iostream.IOStream | None:
            stream: tornado.iostream.IOStream | None = http1.stream  # None once detached
            if self._finished or self._streaming or stream is None or stream.closed():
                return None
            if isinstance(stream, tornado.iostream.SSLIOStream):
                return None  # bytes on the raw socket would bypass TLS
            return stream

        def detach() -> None:
            request_stream = self._stream
            if request_stream is not None and request_stream.writer is self:
                request_stream.writer = None  # nothing more will be streamed here
            self.detach()

        return DirectReply(
            lendable,
            detach,
            lambda stream: self.transport.reattach(stream, context.address),
            context.address_family,
            self.transport.lent,
            status,
            on_hang_up,
        )

    def _reply(self, reply: Message | None, wants_json: bool) -> None:
        if self._gone():  # client gone mid-call
            return
        if reply is None:  # cancelled by the client: no response is due
            self.set_status(202)
            self.finish()
            return
        body = jsonrpc.encode_reply(reply)
        if wants_json:
            self.set_header("Content-Type", "application/json")
            self.finish(body)
        else:
            self.set_header("Content-Type", "text/event-stream")
            self.set_header("Cache-Control", "no-cache")
            self.finish(b"event: message\ndata: " + body + b"\n\n")

    # -- SSE writing (POST streams and GET streams) ------------------------------------
    def _start_sse(self, first_id: str | None) -> None:
        self._streaming = True
        self._ended = asyncio.Event()
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        if first_id is not None:
            # The priming event: an id to resume from, how soon to retry, and empty data.
            self.write(f"id: {first_id}\nretry: {RETRY_MS}\ndata: \n\n")
        self.flush()

    def write_event(self, event_id: str | None, data: str) -> None:
        if self._finished or self._gone():
            return
        if not self._streaming:
            self._start_sse(None if event_id is None else f"{event_id.rpartition('.')[0]}.0")
        if event_id is None:
            self.write(f"event: message\ndata: {data}\n\n")
        else:
            self.write(f"id: {event_id}\nevent: message\ndata: {data}\n\n")
        self.flush()

    def end_stream(self, retry_ms: int | None = None, last_id: str | None = None) -> None:
        if self._finished:
            return
        if not self._streaming and last_id is not None:
            self._start_sse(last_id)  # closing early: give the client an id to resume from
        if retry_ms is not None and not self._gone():
            self.write(f"retry: {int(retry_ms)}\n\n")
        if self._ended is not None:
            self._ended.set()
        with contextlib.suppress(tornado.iostream.StreamClosedError):
            self.finish()
