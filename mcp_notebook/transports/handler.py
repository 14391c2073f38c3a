"""The request handler of the MCP endpoint: POST, GET (SSE) and DELETE, era by era.

Handshake-era requests are handled here; 2026-07-28 requests by the :class:`ModernRequests`
mixin; seed-000 dialect bodies by ``seed_http``.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import socket
from collections.abc import Callable
from typing import Any

import tornado.httputil
import tornado.ioloop
import tornado.iostream
import tornado.routing
import tornado.web

from ..protocol import Session, jsonrpc
from ..protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.request import ANSWERED_EARLY, RUN_USER_CODE
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import seed_http
from .direct import DirectReply, always_ok, http_date
from .endpoint import Endpoint
from .modern_post import ModernRequests
from .security import AUTHENTICATE, NOT_FOUND
from .sse import BadEventId, parse_event_id

GET_STREAM = "g"
RETRY_MS = 500  # how long a client waits before resuming a stream that broke
# After answering a request whose body is still coming, the rest is read and dropped for
# at most this long and this many bytes before the connection closes. Closing at once
# would make the client's TCP stack reset the connection, and a reset loses our answer.
LINGER_SECONDS = 5.0
LINGER_BYTES = 16 * 1024 * 1024
# Statuses given before the request is looked at: their replies name no request id.
_UNREAD = (401, 403, 413)


def _error_body(code: int, message: str, request_id: Any = None) -> bytes:
    return jsonrpc.dumps(jsonrpc.error_response(request_id, RpcError(code, message)))


def announced_length(headers: tornado.httputil.HTTPHeaders) -> int | None:
    """The body size a request announces (None: no Content-Length); ``ValueError`` for a
    value that is not one. ``str.isdigit`` is not enough: it accepts "²", and 5,000
    digits, which ``int()`` refuses past Python's digit limit."""
    value = headers.get("Content-Length")
    if value is None:
        return None
    value = value.strip()
    if not (value.isascii() and value.isdigit()):
        raise ValueError(f"invalid Content-Length {value[:40]!r}")
    return int(value) if len(value) <= 18 else 10**18  # anything longer is over any limit


class NotFoundHandler(tornado.web.RequestHandler):
    def prepare(self) -> None:
        self.set_status(404)
        self.set_header("Content-Type", "application/json")
        self.finish(_error_body(INVALID_REQUEST, NOT_FOUND))


class McpHandler(ModernRequests, tornado.web.RequestHandler):
    """The endpoint, for requests whose body tornado reads whole first: none, or a known
    size within the limit (see :class:`WholeBody`). Others go to StreamedMcpHandler."""

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "OPTIONS")

    def initialize(self, transport: Endpoint) -> None:
        self.transport = transport
        self._streaming = False
        self._ended: asyncio.Event | None = None
        self._message: Any = None  # the decoded body, once post() has read it

    def _body(self) -> bytes:
        return self.request.body

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
        if status == 401:
            self.set_header("WWW-Authenticate", AUTHENTICATE)
        error = RpcError(code, message, data)
        self.finish(jsonrpc.dumps(jsonrpc.error_response(request_id, error)))

    def _readable_id(self) -> Any:
        """The id of the request this body holds, if it has one a reply may echo."""
        message = self._message
        if message is None and self.request.method == "POST":
            with contextlib.suppress(RpcError):
                message = jsonrpc.parse(self._body())
        return jsonrpc.readable_id(message)

    def prepare(self) -> None:
        headers = self.request.headers
        refusal = self.transport.guard.refusal(headers)
        if refusal is not None:
            return self.fail(*refusal)
        try:
            length = announced_length(headers)
        except ValueError as exc:
            return self.fail(400, f"Bad Request: {exc}")
        if length is not None and length > self.transport.max_body:
            return self.fail(413, self._too_large_message())
        return None

    def _too_large_message(self) -> str:
        return f"Payload Too Large: the limit is {self.transport.max_body} bytes"

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        request_id = None if status_code in _UNREAD else self._readable_id()
        self.set_header("Content-Type", "application/json")
        self.finish(_error_body(INVALID_REQUEST, self._reason, request_id))

    def _session(self, message: Any = None) -> Session | None:
        """The request's session, or None after answering 400/404."""
        session_id = self.request.headers.get(SESSION_HEADER)
        request_id = message.get("id") if isinstance(message, dict) else None
        if not session_id:
            self.fail(
                400, f"Bad Request: {SESSION_HEADER} header is required", request_id=request_id
            )
            return None
        session = self.transport.sessions.get(session_id)
        if session is None:
            self.fail(404, "Session not found: it ended or never existed", request_id=request_id)
            return None
        version = self.request.headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            self.fail(
                400,
                f"Bad Request: unsupported {VERSION_HEADER} {version!r}; "
                f"supported: {', '.join(HANDSHAKE_VERSIONS)}",
                request_id=request_id,
            )
            return None
        self.transport.touch(session_id)
        return session

    # -- POST: one client message ------------------------------------------------------
    async def post(self) -> None:
        content_type = self.request.headers.get("Content-Type", "")
        if content_type.split(";")[0].strip().lower() not in ("application/json", seed_http.NDJSON):
            return self.fail(415, "Unsupported Media Type: send application/json")
        accept = self.request.headers.get("Accept", "*/*").lower()
        wants_json = "application/json" in accept or "*/*" in accept
        wants_sse = "text/event-stream" in accept
        if not wants_json and not wants_sse and seed_http.NDJSON not in accept:
            return self.fail(406, "Not Acceptable: accept application/json or text/event-stream")
        server = self.transport.server
        has_session = bool(self.request.headers.get(SESSION_HEADER))
        body = self._body()
        try:
            message = self._message = jsonrpc.parse(body)
        except RpcError as error:
            lines = None if has_session else seed_http.ndjson_messages(body)
            if lines and seed_http.first_is_seed(lines):
                return await seed_http.answer(self, server, lines, "lines")
            return self.fail(400, error.message, error.code)
        modern_request = not has_session and self._is_modern(message)
        if not has_session and not modern_request and seed_http.first_is_seed([message]):
            shape = "batch" if isinstance(message, list) else "single"
            return await seed_http.answer(self, server, [message], shape)
        try:
            kind = jsonrpc.kind(message)
        except RpcError as error:
            return self.fail(400, error.message, error.code)
        if modern_request:
            return await self._post_modern(message, kind, wants_json)
        if kind == "request" and message["method"] == "initialize":
            client = self.request.remote_ip or ""
            refusal = self.transport.refuse_session(client)  # limits.py
            if refusal is not None:
                self.set_header("Retry-After", str(refusal.retry_after))
                return self.fail(refusal.status, refusal.message, refusal.code, message["id"])
            session = Session(transport="http")
            reply = await server.handle(message, session)
            if reply is not None and "result" in reply:
                self.transport.new_session(session, client)
                self.set_header(SESSION_HEADER, session.id)
            return self._reply(reply, wants_json)
        if kind == "request" and not has_session and not server.serves(message["method"]):
            # A method outside the handshake era, called without a session.
            return self.fail(
                404, f"Method not found: {message['method']}", METHOD_NOT_FOUND, message["id"]
            )
        session = self._session(message)
        if session is None:
            return None
        if kind != "request":
            problem = server.notification_problem(message) if kind == "notification" else None
            if problem is not None:
                return self.fail(400, problem.message, problem.code)
            await server.handle(message, session)
            self.set_status(202)
            return self.finish()
        stream = None
        method = message["method"]
        if wants_sse and method in RUN_USER_CODE:
            stream = self.transport.open_request_stream(session, message["id"])
            stream.writer = self
            self._stream = stream
        direct = self._direct_reply() if wants_json and method in ANSWERED_EARLY else None
        try:
            reply = await server.handle(message, session, direct)
        except BaseException:
            if direct is not None and direct.armed:
                direct.abandon()
            raise
        finally:
            if stream is not None:
                self.transport.close_request_stream(session, message["id"], stream)
        if direct is not None and direct.armed:
            return await direct.finish(reply)  # the response may have left already
        if stream is None or (not stream.resumable and stream.writer is self):
            return self._reply(reply, wants_json)  # nothing was streamed: plain JSON
        if reply is not None:
            stream.send(reply)
        stream.finish()
        return None

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
        context = request.connection.context  # type: ignore[union-attr]

        def lendable() -> tornado.iostream.IOStream | None:
            stream = request.connection.stream  # type: ignore[union-attr]
            if self._finished or self._streaming or stream is None or stream.closed():
                return None
            if isinstance(stream, tornado.iostream.SSLIOStream):
                return None  # bytes on the raw socket would bypass TLS
            return stream

        def detach() -> None:
            request_stream = getattr(self, "_stream", None)
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

    def _reply(self, reply: dict[str, Any] | None, wants_json: bool) -> None:
        if self.request.connection.stream.closed():  # client gone mid-call
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
        if self._finished or self.request.connection.stream.closed():
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
        if retry_ms is not None and not self.request.connection.stream.closed():
            self.write(f"retry: {int(retry_ms)}\n\n")
        if self._ended is not None:
            self._ended.set()
        with contextlib.suppress(tornado.iostream.StreamClosedError):
            self.finish()

    # -- GET: the server->client stream, or the resumption of a broken one -------------
    async def get(self) -> None:
        if self._refuse_modern_stream():
            return None
        if "text/event-stream" not in self.request.headers.get("Accept", "").lower():
            return self.fail(406, "Not Acceptable: the GET stream is text/event-stream")
        session = self._session()
        if session is None:
            return None
        try:
            resume = parse_event_id(self.request.headers.get("Last-Event-ID"))
        except BadEventId as exc:
            return self.fail(400, f"Bad Request: {exc}")
        if resume is not None:
            stream = self.transport.streams.get(session.id, {}).get(resume[0])
            if stream is None:
                return self.fail(404, f"Unknown or expired stream for event {resume[0]!r}")
            if stream.writer is not None and stream.writer is not self:
                stream.writer.end_stream()
            self._start_sse(None)
            stream.attach(self, resume[1])
        else:
            stream = self.transport.get_stream(session)
            if stream.writer is not None:
                return self.fail(409, "Conflict: this session already has an open GET stream")
            self._start_sse(f"{GET_STREAM}.{stream.seq}")
            stream.writer = self
        self._stream = stream
        if not self._finished:
            await self._ended.wait()

    def on_connection_close(self) -> None:
        super().on_connection_close()  # a streamed body that was cut short ends the request
        # The stream goes on without this connection, until the client resumes it.
        stream = getattr(self, "_stream", None)
        if stream is not None and stream.writer is self:
            stream.writer = None
        self._cancel_call()  # 2026-07-28: closing the response stream cancels the request
        seed_closed = getattr(self, "seed_closed", None)
        if seed_closed is not None:
            seed_closed.set()
        if self._ended is not None:
            self._ended.set()

    # -- DELETE: end the session -------------------------------------------------------
    def delete(self) -> None:
        if self._refuse_modern_stream():
            return
        session = self._session()
        if session is None:
            return
        self.transport.end_session(session.id)
        self.set_status(200)
        self.finish()

    def options(self) -> None:
        # No CORS: browsers on other origins are refused above; loopback pages need none.
        self.set_status(204)
        self.finish()


@tornado.web.stream_request_body
class StreamedMcpHandler(McpHandler):
    """The endpoint for bodies of unknown or excessive size, or of a Content-Length that is
    not one: counted as they arrive, so that one over the limit gets its 413 without being
    kept, and one that does not arrive in time its 408.

    A request refused before its body has been read is answered at once, on the raw
    connection, and the rest of the body is drained (within ``LINGER_*``) before the
    connection closes, so the client reads the answer instead of a connection reset.
    """

    def initialize(self, transport: Endpoint) -> None:
        super().initialize(transport)
        self._chunks: list[bytes] = []
        self._size = 0
        self._refused = False  # answered before the body ended: the rest is dropped
        self._answered: asyncio.Future[None] | None = None  # writing that answer
        self._dropped = 0
        self._timers: list[object] = []

    def prepare(self) -> None:
        # We count the body ourselves; tornado's own limit would answer a bare 400.
        self.request.connection.set_max_body_size(2**63)  # type: ignore[union-attr]
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
        self._refuse(status, jsonrpc.error_response(None, RpcError(code, message, data)))

    def _body_read(self) -> bool:
        return self.request._body_future.done()  # type: ignore[attr-defined]

    def _refuse(self, status: int, reply: dict[str, Any]) -> None:
        """Answer now, while the body is still coming; close once it is drained."""
        if self._refused:
            return
        self._refused = True
        self._chunks.clear()
        response = _close_response(status, jsonrpc.dumps(reply))
        if not self._prepared_future_done():
            # Still in prepare(): the connection can be taken from tornado, body unread.
            task = asyncio.ensure_future(_linger(self.detach(), response))
            _lingering.add(task)
            task.add_done_callback(_lingering.discard)
            return
        stream = self.request.connection.stream  # type: ignore[union-attr]
        # tornado goes on reading the body into data_received, which drops it.
        self._answered = stream.write(response)
        self._answered.add_done_callback(lambda _: _shut_write(stream))
        self._later(LINGER_SECONDS, self._close)

    def _prepared_future_done(self) -> bool:
        prepared = self._prepared_future
        return prepared is None or prepared.done()

    def _too_slow(self) -> None:
        if not self._body_read() and not self._refused:
            seconds = f"{self.transport.limits.body_timeout:g}"
            self.fail(408, f"Request Timeout: the body did not arrive within {seconds} s")

    def _later(self, seconds: float, callback: Callable[[], None]) -> None:
        self._timers.append(tornado.ioloop.IOLoop.current().call_later(seconds, callback))

    def _close(self) -> None:
        stream = self.request.connection.stream  # type: ignore[union-attr]
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

    async def post(self) -> None:
        if await self._after_body():
            await super().post()

    async def get(self) -> None:
        if await self._after_body():
            await super().get()

    async def delete(self) -> None:  # type: ignore[override]
        if await self._after_body():
            super().delete()

    async def options(self) -> None:  # type: ignore[override]
        if await self._after_body():
            super().options()

    def on_connection_close(self) -> None:
        self._stop_timers()
        super().on_connection_close()

    def on_finish(self) -> None:
        self._stop_timers()


_lingering: set[asyncio.Future[None]] = set()  # refused connections being drained


def _close_response(status: int, body: bytes) -> bytes:
    """A whole HTTP/1.1 response that ends the connection."""
    reason = http.client.responses.get(status, "Error")
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json"]
    if status == 401:
        head.append('WWW-Authenticate: Bearer realm="mcp-notebook"')
    head += [f"Content-Length: {len(body)}", "Connection: close"]
    return "\r\n".join(head).encode() + b"\r\nDate: " + http_date() + b"\r\n\r\n" + body


def _shut_write(stream: tornado.iostream.IOStream) -> None:
    """Send FIN after the answer: the client sees it end, and we can still read."""
    with contextlib.suppress(OSError, AttributeError):
        if not stream.closed():
            stream.socket.shutdown(socket.SHUT_WR)


async def _linger(stream: tornado.iostream.IOStream, response: bytes) -> None:
    """Answer on a connection taken from tornado, drain what the client still sends (up to
    ``LINGER_BYTES``, for ``LINGER_SECONDS``), then close it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LINGER_SECONDS
    dropped = 0
    try:
        await stream.write(response)
        _shut_write(stream)
        while dropped <= LINGER_BYTES:
            read = stream.read_bytes(65536, partial=True)
            dropped += len(await asyncio.wait_for(read, max(0.0, deadline - loop.time())))
    except (tornado.iostream.StreamClosedError, asyncio.TimeoutError, OSError):
        pass
    finally:
        stream.close()


class WholeBody(tornado.routing.PathMatches):
    """Requests to ``path`` whose body may be read whole before the handler runs.

    Streaming a body costs every request an extra turn of the loop; only chunked bodies,
    those announced over ``limit`` and those not yet all received need it.
    """

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(path)
        self.limit = limit

    def match(self, request: tornado.httputil.HTTPServerRequest) -> dict[str, Any] | None:
        headers = request.headers
        if "Transfer-Encoding" in headers:
            return None
        try:
            length = announced_length(headers)
        except ValueError:
            return None  # not a size: the streamed handler answers 400 before any body
        if length is not None and length > self.limit:
            return None
        if length and _buffered(request) < length:
            return None  # still arriving: the streamed handler bounds how long it may take
        return super().match(request)


def _buffered(request: tornado.httputil.HTTPServerRequest) -> int:
    # Bytes already read from the socket past the headers. Checked here, instead of a
    # tornado body_timeout, which would cost every request a timer (~25 us) though nearly
    # every body arrives with its headers. IOStream has no public name for this size: when
    # it is missing, every body goes the bounded, streamed way.
    stream = getattr(request.connection, "stream", None)
    return getattr(stream, "_read_buffer_size", 0)
