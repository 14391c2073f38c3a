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
import itertools
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tornado.httpserver
import tornado.httputil
import tornado.ioloop
import tornado.iostream

from ..protocol import Server, Session
from ..protocol.jsonrpc import INVALID_REQUEST
from ..threads import start_thread
from . import binding, oauth, policy
from .bodies import read_whole
from .direct import DirectReply
from .handler import GET_STREAM, McpHandler, MetadataHandler, NotFoundHandler
from .http_exchange import Routes
from .limits import ConnectionLimiter, Refusal, SessionAdmission
from .responses import close_response, error_body
from .security import NOT_FOUND, Guard
from .settings import DEFAULT_MAX_BODY, Limits
from .sse import ReplayBudget, SseStream
from .streamed import StreamedMcpHandler

if TYPE_CHECKING:
    from ..auth.config import AuthConfig

logger = logging.getLogger(__name__)

KEEP_FINISHED_STREAMS = 32
# Set to "asyncio": the server's thread runs asyncio's loop even where uvloop is installed.
LOOP_VARIABLE = "MCP_NOTEBOOK_HTTP_LOOP"


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
        limits: Limits | None = None,
        allowed_hosts: list[str] | None = None,
        allowed_origins: list[str] | None = None,
        exclusive: bool = False,
        relay_key: str | None = None,
        auth: AuthConfig | None = None,
    ) -> None:
        """``exclusive``: no other program may bind the port meanwhile, nor have it now
        on another address of ours (binding.share_address); for the default port.
        ``auth``: an OAuth 2.1 resource server instead of the static ``token``
        (transports/oauth.py); its audience defaults to :attr:`url`."""
        self.server = server
        self.host, self.path, self.max_body = host, path, max_body
        self.limits = limits or Limits()
        self.admission = SessionAdmission(self.limits)
        self.connections: ConnectionLimiter | None = None
        self.guard = Guard(
            bind_host=host,
            token=token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            relay_key=relay_key,
        )
        self.settings = policy.Settings(server, self.guard, max_body)
        self.auth = auth
        self.metadata_paths: frozenset[str] = frozenset()
        # Per session: its streams by key (the GET stream and one per streamed POST).
        self.streams: dict[str, dict[str, SseStream]] = {}
        self.replay = ReplayBudget()  # what all of them keep for resumption, together
        self._stream_numbers = itertools.count(1)
        self._requested_port, self._exclusive = port, exclusive
        self.port: int | None = None
        self.addresses: list[str] = []  # where it listens (both loopbacks for "localhost")
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._http: tornado.httpserver.HTTPServer | None = None
        self._closing = False
        # Connections lent to calls answered from the kernel thread (transports/direct.py).
        self.lent: set[DirectReply] = set()

    @property
    def sessions(self) -> dict[str, Session]:
        return self.server.sessions

    def find(self, session_id: str) -> Session | None:
        return self.server.sessions.get(session_id)

    @property
    def url(self) -> str:
        host = self.host
        if host == "localhost" and len(self.addresses) == 1:
            host = self.addresses[0]  # no IPv6 here: name the address that listens
        host = f"[{host}]" if ":" in host else host
        if self.host in ("0.0.0.0", "::"):
            host = socket.gethostname()
        return f"http://{host}:{self.port}{self.path}"

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._closing = False
        # Bind here, on the caller's thread, so a busy port fails the caller at once.
        sockets = binding.listen(self.host, self._requested_port, exclusive=self._exclusive)
        self.port = sockets[0].getsockname()[1]
        self.addresses = [sock.getsockname()[0] for sock in sockets]
        if self.auth is not None:
            oauth.protect(self.guard, self.server, self.auth, self.url)
            self.metadata_paths = oauth.metadata_paths(self.guard, self.path)
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = new_server_loop()
            asyncio.set_event_loop(loop)
            self.loop = loop
            try:
                self._http = _LimitedHttpServer(
                    self._routes(),
                    max_body_size=self.max_body * 4,
                    idle_connection_timeout=self.limits.idle_timeout,
                )
                self.connections = ConnectionLimiter(
                    self.limits, self._http.handle_stream, self._screen
                )
                self._http.limiter = self.connections
                self.connections.listen(sockets, loop)
            except BaseException as exc:  # reported to the caller
                failure.append(exc)
                close_server_loop(loop)
                ready.set()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                close_server_loop(loop)

        self._thread = start_thread(run, name="mcp-notebook-http")  # out of the debugger
        ready.wait()
        if failure:
            raise failure[0]

    def _routes(self) -> Routes:
        """The endpoint's path (with or without trailing slashes, as the ASGI app serves
        it), read whole or streamed (bodies.py); the OAuth metadata; else 404."""
        endpoint = self.path.rstrip("/")
        metadata = frozenset(path.rstrip("/") for path in self.metadata_paths)
        limit = self.max_body

        def whole(request: tornado.httputil.HTTPServerRequest) -> bool:
            return request.path.rstrip("/") == endpoint and read_whole(request, limit)

        def streamed(request: tornado.httputil.HTTPServerRequest) -> bool:
            return request.path.rstrip("/") == endpoint

        def described(request: tornado.httputil.HTTPServerRequest) -> bool:
            return request.path.rstrip("/") in metadata

        return Routes(
            [(whole, McpHandler), (streamed, StreamedMcpHandler), (described, MetadataHandler)],
            NotFoundHandler,
            self,
        )

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self.loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return

        async def shutdown() -> None:
            self._closing = True
            if self.connections is not None:
                self.connections.close()
            self.server.end_listens()  # listen streams get their final result
            self.server.continuations.close()
            for _ in range(3):
                await asyncio.sleep(0)
            for session_id in list(self.sessions):
                self.end_session(session_id)
            for direct in list(self.lent):  # detached: close_all_connections misses them
                direct.shut_down()
            if self._http is not None:
                try:
                    await asyncio.wait_for(self._http.close_all_connections(), timeout)
                except asyncio.TimeoutError:
                    logger.warning("some connections did not close in time")
            loop.stop()

        loop.call_soon_threadsafe(lambda: loop.create_task(shutdown()))
        thread.join(timeout + 1)
        self.loop = self._thread = None

    def reattach(self, stream: tornado.iostream.IOStream, address: Any) -> None:
        """Serve the next requests of a connection that a handler detached."""
        if self._http is None or self._closing:
            stream.close()
            return
        self._http.handle_stream(stream, address)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback`` on the server's loop; callable from any thread."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(callback, *args)

    def _screen(
        self, start_line: tornado.httputil.RequestStartLine, headers: tornado.httputil.HTTPHeaders
    ) -> bytes | None:
        """None if a request may reach the endpoint (it carries the token: its connection is
        trusted), else the response the endpoint would give it (limits.py sends it early)."""
        path = start_line.path.split("?", 1)[0].rstrip("/") or "/"
        if path in self.metadata_paths:
            # Needs no token: answered here, whole, and the connection closes (untrusted).
            asked = policy.HttpRequest(start_line.method, headers)
            answer = policy.metadata(asked, self.guard)
            error, body = answer.error, answer.body or b""
            if error is not None:
                body = error_body(error.code, error.message)
            return close_response(answer.status, body, answer.headers)
        refused = policy.gate(headers, self.guard)
        if refused is None:
            return None
        if path != (self.path.rstrip("/") or "/"):
            return close_response(404, error_body(INVALID_REQUEST, NOT_FOUND))  # NotFoundHandler's
        error = refused.error
        assert error is not None  # a refusal carries its error
        body = error_body(error.code, error.message)
        return close_response(refused.status, body, refused.headers)

    # -- sessions ----------------------------------------------------------------------
    def refuse_session(self, client: str) -> Refusal | None:
        """Why ``client`` may not open a session now (429 or 503), or None."""
        return self.admission.admit(client, self.end_session, busy=self._streaming)

    def new_session(self, session: Session, client: str = "") -> None:
        """Serve ``session``, opened by the client at address ``client``."""
        session.outbound = lambda message, related: self._route(session, message, related)
        session.close_stream = lambda related, retry: self._close_early(session, related, retry)
        self.server.open_session(session)
        self.streams[session.id] = {}
        # Make room (admission.py): never by ending a session with an open GET stream.
        while len(self.admission.last_used) >= self.limits.max_sessions:
            ended = self.admission.room(busy=self._streaming)
            if ended is None:
                break
            self.end_session(ended)
        self.admission.add(session.id, client)

    def _streaming(self, session_id: str) -> bool:
        stream = self.streams.get(session_id, {}).get(GET_STREAM)
        return stream is not None and stream.writer is not None

    def end_session(self, session_id: str) -> None:
        self.server.close_session(session_id)
        self.admission.forget(session_id)
        for stream in self.streams.pop(session_id, {}).values():
            stream.finish()
            self.replay.forget(stream)

    def touch(self, session_id: str) -> None:
        self.admission.touch(session_id)

    # -- streams -----------------------------------------------------------------------
    def open_request_stream(self, session: Session, request_id: Any) -> SseStream:
        stream = SseStream(f"p{next(self._stream_numbers)}", budget=self.replay)
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
            self.replay.forget(stream)
            return
        finished = [k for k, s in streams.items() if s.done and k != GET_STREAM]
        for key in finished[:-KEEP_FINISHED_STREAMS]:
            self.replay.forget(streams.pop(key))

    def get_stream(self, session: Session) -> SseStream:
        streams = self.streams.setdefault(session.id, {})
        if GET_STREAM not in streams:
            streams[GET_STREAM] = SseStream(GET_STREAM, budget=self.replay)
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


def new_server_loop() -> asyncio.AbstractEventLoop:
    """The loop of the server's thread: one with ``add_reader`` on every platform.

    The connection limiter watches the listening sockets with ``add_reader``. On Windows
    the default loop (also under ipykernel, which keeps it for the user's code) is a
    Proactor loop, which has none: tornado would add a selector thread to it, and our
    limiter could not listen at all. ipykernel runs its own service threads on selector
    loops for the same reason. Elsewhere: uvloop when it is installed (``[speed]``; the
    thread is ours, the kernel's loop stays ipykernel's), whose loop turns, callbacks
    and tasks cost less per request; else asyncio's selector loop.
    ``MCP_NOTEBOOK_HTTP_LOOP=asyncio`` keeps asyncio's loop.
    """
    if sys.platform == "win32":
        return asyncio.SelectorEventLoop()
    if os.environ.get(LOOP_VARIABLE, "").strip().lower() != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def close_server_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close the server thread's loop and whatever tornado and asyncio started for it
    (the executor's threads, a selector thread, tornado's IOLoop for it)."""
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        io_loop = tornado.ioloop.IOLoop.current(instance=False)
        if io_loop is not None:
            io_loop.close()  # closes the asyncio loop too
        loop.close()
        asyncio.set_event_loop(None)


class _LimitedHttpServer(tornado.httpserver.HTTPServer):
    """tornado's HTTP server, fed by a ConnectionLimiter instead of its own accept loop."""

    limiter: ConnectionLimiter

    def start_request(self, server_conn: Any, request_conn: Any) -> Any:
        delegate = super().start_request(server_conn, request_conn)
        return self.limiter.wrap(server_conn.stream, request_conn, delegate)
