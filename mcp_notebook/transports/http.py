"""Streamable HTTP (MCP 2025-11-25) served by tornado on a thread of its own.

The thread answers the control plane at once, even while a cell runs; calls into user
code are handed to the Server's executor (the kernel loop). Other threads reach the
sessions through :meth:`HttpTransport.call_soon`.

A POST is answered with JSON unless something must reach the client before the result
(progress, a log line, an elicitation): then, if the client accepts it, the answer turns
into an SSE stream on the spot. Server->client messages unrelated to a request go on the
session's GET stream. Every SSE event has an id, and ``Last-Event-ID`` resumes a stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web

from ..protocol import Server, Session, jsonrpc, modern
from ..protocol.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    RpcError,
)
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import headers, seed_http
from .security import Guard
from .sse import SseStream, parse_event_id

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 4 * 1024 * 1024
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
GET_STREAM = "g"
RETRY_MS = 500  # how long a client waits before resuming a stream that broke
KEEP_FINISHED_STREAMS = 32


class HttpTransport:
    """Owns the socket, the thread, the loop and the streams of one HTTP endpoint."""

    def __init__(
        self,
        server: Server,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        path: str = "/mcp",
        max_body: int = DEFAULT_MAX_BODY,
        max_sessions: int = 1000,
        allowed_hosts: list[str] | None = None,
        allowed_origins: list[str] | None = None,
    ) -> None:
        self.server = server
        self.host, self.path, self.max_body = host, path, max_body
        self.max_sessions = max_sessions
        self.guard = Guard(
            bind_host=host,
            token=token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        # Per session: its streams by key (the GET stream and one per streamed POST).
        self.streams: dict[str, dict[str, SseStream]] = {}
        self._stream_numbers = itertools.count(1)
        self._requested_port = port
        self.port: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._http: tornado.httpserver.HTTPServer | None = None

    @property
    def sessions(self) -> dict[str, Session]:
        return self.server.sessions

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.host in ("0.0.0.0", "::"):
            host = socket.gethostname()
        return f"http://{host}:{self.port}{self.path}"

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        # Bind here, on the caller's thread, so a busy port fails the caller at once.
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sockets = tornado.netutil.bind_sockets(
            self._requested_port, address=self.host, family=family
        )
        self.port = sockets[0].getsockname()[1]
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self.loop = loop
            try:
                app = tornado.web.Application(
                    [(self.path, McpHandler, {"transport": self})],
                    default_handler_class=NotFoundHandler,
                    log_function=_log_request,
                )
                self._http = tornado.httpserver.HTTPServer(
                    app, max_body_size=self.max_body * 4, idle_connection_timeout=300
                )
                self._http.add_sockets(sockets)
            except BaseException as exc:  # reported to the caller
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="mcp-notebook-http", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self.loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return

        async def shutdown() -> None:
            if self._http is not None:
                self._http.stop()
            self.server.end_listens()  # listen streams get their final result
            self.server.continuations.close()
            for _ in range(3):
                await asyncio.sleep(0)
            for session_id in list(self.sessions):
                self.end_session(session_id)
            if self._http is not None:
                try:
                    await asyncio.wait_for(self._http.close_all_connections(), timeout)
                except asyncio.TimeoutError:
                    logger.warning("some connections did not close in time")
            loop.stop()

        loop.call_soon_threadsafe(lambda: loop.create_task(shutdown()))
        thread.join(timeout + 1)
        self.loop = self._thread = None

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback`` on the server's loop; callable from any thread."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(callback, *args)

    # -- sessions ----------------------------------------------------------------------
    def new_session(self, session: Session) -> None:
        session.outbound = lambda message, related: self._route(session, message, related)
        session.close_stream = lambda related, retry: self._close_early(session, related, retry)
        self.server.open_session(session)
        self.streams[session.id] = {}
        while len(self.sessions) > self.max_sessions:
            # Forget the least recently used session that has no open GET stream.
            for old_id in self.sessions:
                stream = self.streams.get(old_id, {}).get(GET_STREAM)
                if stream is None or stream.writer is None:
                    self.end_session(old_id)
                    break
            else:
                break

    def end_session(self, session_id: str) -> None:
        self.server.close_session(session_id)
        for stream in self.streams.pop(session_id, {}).values():
            stream.finish()

    def touch(self, session_id: str) -> None:
        self.sessions.move_to_end(session_id)  # type: ignore[attr-defined]

    # -- streams -----------------------------------------------------------------------
    def open_request_stream(self, session: Session, request_id: Any) -> SseStream:
        stream = SseStream(f"p{next(self._stream_numbers)}")
        streams = self.streams.setdefault(session.id, {})
        streams[stream.key] = stream
        streams[f"request:{request_id!r}"] = stream
        return stream

    def close_request_stream(self, session: Session, request_id: Any, stream: SseStream) -> None:
        streams = self.streams.get(session.id)
        if streams is None:
            return
        streams.pop(f"request:{request_id!r}", None)
        if not stream.resumable:
            streams.pop(stream.key, None)  # answered with plain JSON: nothing to resume
            return
        finished = [k for k, s in streams.items() if s.done and k != GET_STREAM]
        for key in finished[:-KEEP_FINISHED_STREAMS]:
            streams.pop(key, None)

    def get_stream(self, session: Session) -> SseStream:
        streams = self.streams.setdefault(session.id, {})
        if GET_STREAM not in streams:
            streams[GET_STREAM] = SseStream(GET_STREAM)
        return streams[GET_STREAM]

    def _route(self, session: Session, message: dict[str, Any], related: Any) -> bool:
        streams = self.streams.get(session.id, {})
        if related is not None:
            stream = streams.get(f"request:{related!r}")
            if stream is not None and (stream.writer is not None or stream.resumable):
                stream.send(message)
                return True
        stream = streams.get(GET_STREAM)
        if stream is not None and stream.writer is not None:
            stream.send(message)
            return True
        return False

    def _close_early(self, session: Session, related: Any, retry_ms: int | None) -> bool:
        """Close a request's SSE connection now; the client resumes it with a GET."""
        stream = self.streams.get(session.id, {}).get(f"request:{related!r}")
        if stream is None or stream.writer is None:
            return False
        stream.detach(stream.writer, retry_ms)
        return True


def _sent(stream: SseStream, message: dict[str, Any]) -> bool:
    stream.send(message)
    return True


def _log_request(handler: tornado.web.RequestHandler) -> None:
    # Access lines would land in the notebook's stderr; keep them for debug logging.
    request = handler.request
    logger.debug("%s %s %s", handler.get_status(), request.method, request.uri)


def _error_body(code: int, message: str, request_id: Any = None) -> bytes:
    return jsonrpc.dumps(jsonrpc.error_response(request_id, RpcError(code, message)))


class NotFoundHandler(tornado.web.RequestHandler):
    def prepare(self) -> None:
        self.set_status(404)
        self.set_header("Content-Type", "application/json")
        self.finish(_error_body(INVALID_REQUEST, "Not Found: the MCP endpoint is elsewhere"))


@tornado.web.stream_request_body
class McpHandler(tornado.web.RequestHandler):
    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "OPTIONS")

    def initialize(self, transport: HttpTransport) -> None:
        self.transport = transport
        self._chunks: list[bytes] = []
        self._size = 0
        self._too_large = False
        self._streaming = False
        self._ended: asyncio.Event | None = None

    # -- gatekeeping -------------------------------------------------------------------
    def fail(
        self,
        status: int,
        message: str,
        code: int = INVALID_REQUEST,
        request_id: Any = None,
        data: Any = None,
    ) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        if status == 401:
            self.set_header("WWW-Authenticate", 'Bearer realm="mcp-notebook"')
        error = RpcError(code, message, data)
        self.finish(jsonrpc.dumps(jsonrpc.error_response(request_id, error)))

    def prepare(self) -> None:
        guard, headers = self.transport.guard, self.request.headers
        problem = guard.host_problem(headers.get("Host"))
        if problem is None:
            problem = guard.origin_problem(headers.get("Origin"))
        if problem is not None:
            return self.fail(403, f"Forbidden: {problem}")
        problem = guard.auth_problem(headers.get("Authorization"))
        if problem is not None:
            return self.fail(401, f"Unauthorized: {problem}")
        if self.request.method == "POST":
            length = headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > self.transport.max_body:
                return self.fail(413, self._too_large_message())
        return None

    def _too_large_message(self) -> str:
        return f"Payload Too Large: the limit is {self.transport.max_body} bytes"

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size > self.transport.max_body:
            self._too_large = True
            self._chunks.clear()
        elif not self._too_large:
            self._chunks.append(chunk)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(_error_body(INVALID_REQUEST, self._reason))

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
        if self._too_large:
            return self.fail(413, self._too_large_message())
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
        body = b"".join(self._chunks)
        try:
            message = jsonrpc.parse(body)
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
            session = Session(transport="http")
            reply = await server.handle(message, session)
            if reply is not None and "result" in reply:
                self.transport.new_session(session)
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
            await server.handle(message, session)
            self.set_status(202)
            return self.finish()
        stream = None
        if wants_sse:
            stream = self.transport.open_request_stream(session, message["id"])
            stream.writer = self
            self._stream = stream
        try:
            reply = await server.handle(message, session)
        finally:
            if stream is not None:
                self.transport.close_request_stream(session, message["id"], stream)
        if stream is None or (not stream.resumable and stream.writer is self):
            return self._reply(reply, wants_json)  # nothing was streamed: plain JSON
        if reply is not None:
            stream.send(reply)
        stream.finish()
        return None

    # -- POST, 2026-07-28: one self-contained request ---------------------------------
    def _is_modern(self, message: Any) -> bool:
        """A request of the stateless revision: its _meta or its header says so."""
        if modern.requested_version(message) is not None:
            return True
        header = self.request.headers.get(VERSION_HEADER)
        return header is not None and header not in HANDSHAKE_VERSIONS

    async def _post_modern(self, message: dict[str, Any], kind: str, wants_json: bool) -> None:
        if kind != "request":
            self.set_status(202)  # nothing a client sends besides requests needs an answer
            return self.finish()
        request_id, method = message["id"], message["method"]
        server = self.transport.server
        try:
            session = modern.open_request(message)
        except RpcError as error:
            if error.code == UNSUPPORTED_VERSION and self._version_header_mismatch(message):
                return self._header_mismatch(request_id)
            return self.fail(400, error.message, error.code, request_id, error.data)
        if self._version_header_mismatch(message):
            return self._header_mismatch(request_id)
        problem = headers.mismatch(message, self.request.headers, server.registry.tools)
        if problem is not None:
            return self.fail(400, f"Header mismatch: {problem}", HEADER_MISMATCH, request_id)
        if not server.serves(method, "modern"):
            return self.fail(404, f"Method not found: {method}", METHOD_NOT_FOUND, request_id)
        stream = SseStream(f"m{next(self.transport._stream_numbers)}", numbered=False)
        stream.writer = self
        self._stream = stream
        session.transport = "http"
        session.outbound = lambda outgoing, related: _sent(stream, outgoing)
        self._call = asyncio.ensure_future(server.handle(message, session))
        try:
            reply = await self._call
        except asyncio.CancelledError:
            return None  # the client closed the stream: that is how it cancels
        if stream.resumable or stream.writer is not self:
            if reply is not None:
                stream.send(reply)
            stream.finish()
            return None
        error = (reply or {}).get("error") or {}
        status = {MISSING_CAPABILITY: 400, METHOD_NOT_FOUND: 404}.get(error.get("code"), 200)
        self.set_status(status)
        return self._reply(reply, wants_json)

    def _version_header_mismatch(self, message: dict[str, Any]) -> bool:
        return self.request.headers.get(VERSION_HEADER) != modern.requested_version(message)

    def _header_mismatch(self, request_id: Any) -> None:
        self.fail(
            400,
            f"Header mismatch: {VERSION_HEADER} must equal _meta's protocol version",
            HEADER_MISMATCH,
            request_id,
        )

    def _reply(self, reply: dict[str, Any] | None, wants_json: bool) -> None:
        if self.request.connection.stream.closed():  # client gone mid-call
            return
        if reply is None:  # cancelled by the client: no response is due
            self.set_status(202)
            self.finish()
            return
        body = jsonrpc.dumps(reply)
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
    def _refuse_modern_stream(self) -> bool:
        """2026-07-28 has no GET stream and no sessions to DELETE: 405 for its clients."""
        version = self.request.headers.get(VERSION_HEADER)
        if self.request.headers.get(SESSION_HEADER) or version is None:
            return False
        if version in HANDSHAKE_VERSIONS:
            return False
        self.set_header("Allow", "POST")
        self.fail(405, f"Method Not Allowed: {self.request.method} is not part of {version}")
        return True

    async def get(self) -> None:
        if self._refuse_modern_stream():
            return None
        if "text/event-stream" not in self.request.headers.get("Accept", "").lower():
            return self.fail(406, "Not Acceptable: the GET stream is text/event-stream")
        session = self._session()
        if session is None:
            return None
        resume = parse_event_id(self.request.headers.get("Last-Event-ID"))
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
        # The stream goes on without this connection, until the client resumes it.
        stream = getattr(self, "_stream", None)
        if stream is not None and stream.writer is self:
            stream.writer = None
        call = getattr(self, "_call", None)
        if call is not None and not call.done():
            call.cancel()  # 2026-07-28: closing the response stream cancels the request
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
