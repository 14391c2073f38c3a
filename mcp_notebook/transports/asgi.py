"""Streamable HTTP as an ASGI application, so that any ASGI server (uvicorn, hypercorn...)
serves a :class:`~mcp_notebook.protocol.Server`: both eras, on one endpoint.

It shares with the tornado transport everything that is not socket handling: which way a
POST goes (posts.py ``classify``), the Host / Origin / token checks (security.py
``Guard``), the 2026-07-28 checks (modern_post.py ``admit``), the session table's limits
(admission.py) and the body limit (settings.py). No tornado is imported.

What it leaves to the tornado transport: the seed dialect (refused with 400), resuming a
broken SSE stream (``Last-Event-ID``; streams here are not numbered), and the early reply
written from the kernel thread (there is no kernel: the reply goes when ``handle`` returns).
A request's reply is plain JSON unless something related to it (progress, a confirmation
asked of the client) was sent while it ran and the client takes SSE: then the response is
an SSE stream carrying those messages and, last, the reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from ..errors import McpNotebookError
from ..protocol import Server, Session, jsonrpc
from ..protocol.codes import SERVER_ERROR
from ..protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, Message, RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import posts
from .admission import SessionAdmission
from .modern_checks import admit, reply_status
from .security import AUTHENTICATE, NOT_FOUND, Guard
from .settings import DEFAULT_MAX_BODY, Limits

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
_GET = "get"  # the key of a session's GET stream among its queues
SEND_PIECE = 64 * 1024  # bytes of a response body handed to the ASGI server at a time


class NotReading(McpNotebookError, ConnectionError):
    """The client took nothing of a response for ``Limits.write_timeout``."""


class Headers(Mapping[str, str]):
    """An ASGI scope's headers, looked up without regard to case (the first of repeats)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._items: dict[str, str] = {}
        for name, value in raw:
            self._items.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))

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
        if status == 401:
            self.header("WWW-Authenticate", AUTHENTICATE)
        body = jsonrpc.dumps(jsonrpc.error_response(request_id, RpcError(code, message, data)))
        await self.respond(status, body, posts.JSON)

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


class McpAsgiApp:
    """``app = McpAsgiApp(server, token=...)``; serve ``app`` with any ASGI server.

    ``host`` is the address it is reached at: on loopback, requests naming another Host
    are refused (DNS rebinding), like the tornado transport's defaults. ``token=None`` turns
    the bearer check off.
    """

    def __init__(
        self,
        server: Server,
        *,
        token: str | None,
        host: str = "127.0.0.1",
        path: str = "/mcp",
        allowed_hosts: list[str] | None = None,
        allowed_origins: list[str] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        limits: Limits | None = None,
    ) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.guard = Guard(
            bind_host=host,
            token=token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        self.max_body = max_body
        self.admission = SessionAdmission(limits or Limits())
        self.sessions: dict[str, Session] = {}
        # Where a session's messages go: the queue of the request they relate to, else its
        # GET stream's ("get"); nothing open there, and the message is not delivered.
        self._queues: dict[str, dict[Any, asyncio.Queue[Message]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None  # the ASGI server's, once it calls
        self._serving = 0  # HTTP requests in progress (GET streams included)
        self._unsubscribe = server.registry.subscribe(self._announce)

    def _announce(self, kind: str, detail: str | None) -> None:
        """A registry change (from any thread, e.g. a tool on a worker): tell the clients
        on the serving loop. Before the first request nobody is connected to hear it."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if kind == "updated" and detail is not None:
            loop.call_soon_threadsafe(self.server.resource_updated, detail)
        elif kind != "updated":
            loop.call_soon_threadsafe(self.server.list_changed, kind)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        if scope["type"] != "http":
            return None
        exchange = Exchange(scope, receive, send, self.admission.limits.write_timeout)
        cap = self.admission.limits.max_connections
        if self._serving >= cap:
            # An ASGI server caps nothing by default (uvicorn's --limit-concurrency is
            # off): past the tornado transport's connection cap, refuse at once, unread.
            exchange.header("Retry-After", "1")
            return await exchange.fail(
                503,
                f"Service Unavailable: {cap} requests are being served; retry later",
                SERVER_ERROR,
            )
        self._serving += 1
        try:
            await self._serve(exchange)
        except NotReading as gone:
            logger.info("%s", gone)  # returning unfinished: the server closes the connection
        except ConnectionError:
            return None
        finally:
            self._serving -= 1

    async def _serve(self, exchange: Exchange) -> None:
        if (exchange.scope.get("path", "").rstrip("/") or "/") != self.path:
            return await exchange.fail(404, NOT_FOUND)
        refusal = self.guard.refusal(exchange.headers)
        if refusal is not None:
            return await exchange.fail(*refusal)
        method = exchange.scope.get("method", "GET")
        if method == "POST":
            return await self._post(exchange)
        if method in ("GET", "DELETE"):
            if self._refuse_modern_stream(exchange):
                exchange.header("Allow", "POST")
                version = exchange.headers.get(VERSION_HEADER)
                return await exchange.fail(
                    405, f"Method Not Allowed: {method} is not part of {version}"
                )
            return await (self._get(exchange) if method == "GET" else self._delete(exchange))
        if method == "OPTIONS":
            return await exchange.respond(204)
        exchange.header("Allow", "GET, POST, DELETE, OPTIONS")
        return await exchange.fail(405, f"Method Not Allowed: {method}")

    # -- POST --------------------------------------------------------------------------
    async def _post(self, exchange: Exchange) -> None:
        length = _content_length(exchange.headers.get("Content-Length"))
        if length == _INVALID:
            return await exchange.fail(400, "Bad Request: invalid Content-Length")
        if length is not None and length > self.max_body:
            return await exchange.fail(
                413, f"Payload Too Large: the limit is {self.max_body} bytes"
            )
        # An ASGI server may hold a trickling body for ever: the app bounds it itself.
        timeout = self.admission.limits.body_timeout
        try:
            body = await asyncio.wait_for(exchange.body(self.max_body), timeout)
        except asyncio.TimeoutError:
            exchange.header("Connection", "close")
            return await exchange.fail(
                408, f"Request Timeout: the body did not arrive within {timeout:g} s"
            )
        if body is None:
            return await exchange.fail(
                413, f"Payload Too Large: the limit is {self.max_body} bytes"
            )
        post = posts.classify(exchange.headers, body)
        request_id = jsonrpc.readable_id(post.message)
        if post.way == "refused":
            error = post.error
            assert error is not None  # classify gives every refusal its error
            if post.message is None:
                request_id = jsonrpc.refused_id(error)
            return await exchange.fail(
                post.status, error.message, error.code, request_id, error.data
            )
        if post.way == "seed":
            return await exchange.fail(
                400, "Bad Request: the seed dialect is served by mcp-notebook's own HTTP server"
            )
        if post.way == "modern":
            return await self._post_modern(exchange, post)
        if post.way == "initialize":
            return await self._post_initialize(exchange, post)
        return await self._post_handshake(exchange, post)

    async def _post_modern(self, exchange: Exchange, post: posts.Post) -> None:
        if post.kind != "request":
            return await exchange.respond(202)
        admitted = admit(post.message, exchange.headers, self.server)
        if isinstance(admitted, tuple):
            status, error = admitted
            return await exchange.fail(
                status, error.message, error.code, post.message["id"], error.data
            )
        queue: asyncio.Queue[Message] = asyncio.Queue()
        admitted.transport = "http"
        # A client that takes no SSE cannot hear anything before the reply: say so at once
        # (a Context's request then fails fast instead of waiting for an answer).
        admitted.outbound = (
            (lambda message, related: _put(queue, message))
            if post.wants_sse
            else (lambda message, related: False)
        )
        await self._answer(exchange, post, admitted, queue, cancel_on_close=True)

    async def _post_initialize(self, exchange: Exchange, post: posts.Post) -> None:
        client = (exchange.scope.get("client") or ("", 0))[0] or ""
        refusal = self.admission.admit(client, self._end, busy=self._streaming)
        if refusal is not None:
            exchange.header("Retry-After", str(refusal.retry_after))
            return await exchange.fail(
                refusal.status, refusal.message, refusal.code, post.message["id"]
            )
        session = Session(transport="http")
        reply = await self.server.handle(post.message, session)
        if reply is not None and "result" in reply:
            self._open(session, client)
            exchange.header(SESSION_HEADER, session.id)
        await self._reply(exchange, reply, post.wants_json)

    async def _post_handshake(self, exchange: Exchange, post: posts.Post) -> None:
        message = post.message
        request_id = message.get("id") if post.kind == "request" else None
        if (
            post.kind == "request"
            and not exchange.headers.get(SESSION_HEADER)
            and not self.server.serves(message["method"])
        ):
            method = message["method"]
            return await exchange.fail(
                404, f"Method not found: {method}", METHOD_NOT_FOUND, request_id
            )
        session = await self._session(exchange, request_id)
        if session is None:
            return None
        if post.kind != "request":
            problem = (
                self.server.notification_problem(message) if post.kind == "notification" else None
            )
            if problem is not None:
                return await exchange.fail(400, problem.message, problem.code)
            await self.server.handle(message, session)
            return await exchange.respond(202)
        queues = self._queues.setdefault(session.id, {})
        queue: asyncio.Queue[Message] = asyncio.Queue()
        if post.wants_sse:  # else what relates to it goes to the GET stream, if one is open
            queues[request_id] = queue
        try:
            await self._answer(exchange, post, session, queue, cancel_on_close=False)
        finally:
            queues.pop(request_id, None)

    async def _answer(
        self,
        exchange: Exchange,
        post: posts.Post,
        session: Session,
        queue: asyncio.Queue[Message],
        *,
        cancel_on_close: bool,
    ) -> None:
        """Serve one request: JSON when nothing else was sent, else an SSE stream."""
        call = asyncio.ensure_future(self.server.handle(post.message, session))
        gone = asyncio.ensure_future(exchange.disconnected())
        try:
            while True:
                next_message = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {call, gone, next_message}, return_when=asyncio.FIRST_COMPLETED
                )
                if next_message in done:  # only queued for a client that takes SSE
                    if not exchange.streaming:
                        await exchange.start_events()
                    await exchange.event(next_message.result())
                    continue
                next_message.cancel()
                if call in done:
                    break
                if cancel_on_close:  # 2026-07-28: closing the stream cancels the request
                    call.cancel()
                else:  # a handshake-era call runs on if it started; its reply is lost
                    self.server.client_gone(session, post.message["id"], call)  # no resuming
                return None
            reply = call.result()
            if exchange.streaming:
                while not queue.empty():
                    await exchange.event(queue.get_nowait())
                if reply is not None:
                    await exchange.event(reply)
                return await exchange.end_events()
            status = reply_status(reply) if session.era == "modern" and reply else 200
            return await self._reply(exchange, reply, post.wants_json, status)
        finally:
            gone.cancel()

    async def _reply(
        self, exchange: Exchange, reply: Message | None, wants_json: bool, status: int = 200
    ) -> None:
        if reply is None:  # cancelled by the client: no response is due
            return await exchange.respond(202)
        body = jsonrpc.encode_reply(reply)
        if wants_json:
            return await exchange.respond(status, body, posts.JSON)
        exchange.header("Cache-Control", "no-cache")
        return await exchange.respond(status, b"event: message\ndata: " + body + b"\n\n", posts.SSE)

    # -- sessions ----------------------------------------------------------------------
    def _open(self, session: Session, client: str) -> None:
        session.outbound = lambda message, related: self._route(session, message, related)
        self.server.open_session(session)
        self.sessions[session.id] = session
        self._queues[session.id] = {}
        while len(self.admission.last_used) >= self.admission.limits.max_sessions:
            ended = self.admission.room(busy=self._streaming)  # admission.py: which
            if ended is None:
                break
            self._end(ended)
        self.admission.add(session.id, client)

    def _streaming(self, session_id: str) -> bool:
        return _GET in self._queues.get(session_id, {})

    def _route(self, session: Session, message: Message, related: Any) -> bool:
        queues = self._queues.get(session.id, {})
        queue = queues.get(related) if related is not None else None
        if queue is None:
            queue = queues.get(_GET)
        return queue is not None and _put(queue, message)

    def _end(self, session_id: str) -> None:
        self.server.close_session(session_id)
        self.admission.forget(session_id)
        self.sessions.pop(session_id, None)
        for queue in self._queues.pop(session_id, {}).values():
            queue.put_nowait({})  # wakes a GET stream, which then ends

    async def _session(self, exchange: Exchange, request_id: Any = None) -> Session | None:
        session_id = exchange.headers.get(SESSION_HEADER)
        if not session_id:
            await exchange.fail(
                400, f"Bad Request: {SESSION_HEADER} header is required", request_id=request_id
            )
            return None
        session = self.sessions.get(session_id)
        if session is None:
            await exchange.fail(
                404, "Session not found: it ended or never existed", request_id=request_id
            )
            return None
        version = exchange.headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            await exchange.fail(
                400,
                f"Bad Request: unsupported {VERSION_HEADER} {version!r}; "
                f"supported: {', '.join(HANDSHAKE_VERSIONS)}",
                request_id=request_id,
            )
            return None
        self.admission.touch(session_id)
        return session

    def _refuse_modern_stream(self, exchange: Exchange) -> bool:
        version = exchange.headers.get(VERSION_HEADER)
        if exchange.headers.get(SESSION_HEADER) or version is None:
            return False
        return version not in HANDSHAKE_VERSIONS

    # -- GET: the session's stream of messages unrelated to a request ------------------
    async def _get(self, exchange: Exchange) -> None:
        if posts.SSE not in exchange.headers.get("Accept", "").lower():
            return await exchange.fail(406, "Not Acceptable: the GET stream is text/event-stream")
        session = await self._session(exchange)
        if session is None:
            return None
        queues = self._queues.setdefault(session.id, {})
        if _GET in queues:
            return await exchange.fail(409, "Conflict: this session already has an open GET stream")
        queue: asyncio.Queue[Message] = asyncio.Queue()
        queues[_GET] = queue
        gone = asyncio.ensure_future(exchange.disconnected())
        try:
            await exchange.start_events()
            while True:
                next_message = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {gone, next_message}, return_when=asyncio.FIRST_COMPLETED
                )
                if gone in done:
                    next_message.cancel()
                    return None
                message = next_message.result()
                if not message:  # the session ended
                    return await exchange.end_events()
                await exchange.event(message)
        finally:
            gone.cancel()
            if queues.get(_GET) is queue:
                queues.pop(_GET, None)

    async def _delete(self, exchange: Exchange) -> None:
        session = await self._session(exchange)
        if session is None:
            return None
        self._end(session.id)
        return await exchange.respond(200)


_INVALID = -1


def _content_length(value: str | None) -> int | None:
    """The header's byte count, None without one, ``_INVALID`` unless ASCII digits.

    ``str.isdigit`` admits "²" and other digits ``int`` refuses, and ``int`` refuses
    more than 4,300 digits: either would escape as a 500. A number too long to be a
    real body is kept as a number over any limit."""
    if value is None:
        return None
    digits = value.strip()
    if not digits or not digits.isascii() or not digits.isdigit():
        return _INVALID
    return int(digits) if len(digits) <= 18 else 10**18


# A stream's backlog: past this, messages nobody reads are not delivered.
_MAX_QUEUED = 1000


def _put(queue: asyncio.Queue[Message], message: Message) -> bool:
    if queue.qsize() >= _MAX_QUEUED:
        return False
    queue.put_nowait(message)
    return True


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
