"""The request handler of the MCP endpoint: POST, GET (SSE) and DELETE, era by era.

A POST goes one of five ways (posts.py ``classify``), each served by one method:
refused, the seed dialect (seed_http.py), 2026-07-28 (modern_post.py), a handshake-era
``initialize``, or any other handshake-era message on its session (here). How replies
leave (JSON, SSE, early from the kernel thread) is replying.py's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import tornado.web

from ..protocol import Session
from ..protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.request import ANSWERED_EARLY, RUN_USER_CODE
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import posts, relayed, seed_http
from .modern_post import ModernRequests
from .posts import Post, PostWay
from .replying import error_body
from .security import NOT_FOUND
from .sse import BadEventId, SseStream, parse_event_id

GET_STREAM = "g"


class NotFoundHandler(tornado.web.RequestHandler):
    def prepare(self) -> None:
        self.set_status(404)
        self.set_header("Content-Type", "application/json")
        self.finish(error_body(INVALID_REQUEST, NOT_FOUND))


class McpHandler(ModernRequests):
    """The endpoint, for requests whose body tornado reads whole first: none, or a known
    size within the limit (see bodies.py ``WholeBody``). Others go to StreamedMcpHandler."""

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "OPTIONS")
    # The handshake-era call this POST waits for: dropped if the client hangs up first.
    # The session, id and serving task of the handshake-era call this POST waits for.
    _handshake_call: tuple[Session, Any, Any] | None = None

    def _session(self, message: object = None) -> Session | None:
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

    # -- POST: one client message, served by the method of its way ---------------------
    async def post(self) -> None:
        post = posts.classify(self.request.headers, self._body())
        self._message = post.message
        await self._ways[post.way](self, post)
        self._let_go()  # answered, or its connection lent to the call (no on_finish then)

    async def _post_refused(self, post: Post) -> None:
        error = post.error
        assert error is not None  # classify gives every refusal its error
        self.fail(post.status, error.message, error.code, data=error.data)

    async def _post_seed(self, post: Post) -> None:
        await seed_http.answer(self, self.transport.server, post.seed, post.shape)

    async def _post_initialize(self, post: Post) -> None:
        """A handshake-era ``initialize``: a session opens if it succeeds and the limits
        on sessions (limits.py) let one more open for this client."""
        message = post.message
        client = self.request.remote_ip or ""
        refusal = self.transport.refuse_session(client)
        if refusal is not None:
            self.set_header("Retry-After", str(refusal.retry_after))
            return self.fail(refusal.status, refusal.message, refusal.code, message["id"])
        session = Session(
            transport="http", via=relayed.via(self.request.headers, self.transport.guard)
        )
        reply = await self.transport.server.handle(message, session)
        if reply is not None and "result" in reply:
            self.transport.new_session(session, client)
            self.set_header(SESSION_HEADER, session.id)
        return self._reply(reply, post.wants_json)

    async def _post_handshake(self, post: Post) -> None:
        """Any other handshake-era message, on the session its ``Mcp-Session-Id`` names;
        a notification or response gets 202."""
        message, server = post.message, self.transport.server
        has_session = bool(self.request.headers.get(SESSION_HEADER))
        if post.kind == "request" and not has_session and not server.serves(message["method"]):
            # A method outside the handshake era, called without a session.
            method, request_id = message["method"], message["id"]
            return self.fail(404, f"Method not found: {method}", METHOD_NOT_FOUND, request_id)
        session = self._session(message)
        if session is None:
            return None
        if post.kind == "request":
            return await self._call_handshake(post, session)
        problem = server.notification_problem(message) if post.kind == "notification" else None
        if problem is not None:
            return self.fail(400, problem.message, problem.code)
        await server.handle(message, session)
        self.set_status(202)
        self.finish()
        return None

    async def _call_handshake(self, post: Post, session: Session) -> None:
        """A request on a session. Its reply leaves early from the kernel thread (a JSON
        ``tools/call``), on an SSE stream of its own (a call that may stream progress,
        when the client takes SSE and something was streamed), or as plain JSON."""
        message = post.message
        request_id, method = message["id"], message["method"]
        stream: SseStream | None = None
        if post.wants_sse and method in RUN_USER_CODE:
            stream = self.transport.open_request_stream(session, request_id)
            stream.writer = self
            self._stream = stream
        early = post.wants_json and method in ANSWERED_EARLY
        direct = self._direct_reply(on_hang_up=self._call_unreachable) if early else None
        self._handshake_call = (session, request_id, asyncio.current_task())
        try:
            reply = await self.transport.server.handle(message, session, direct)
        except BaseException:
            if direct is not None and direct.armed:
                direct.abandon()
            raise
        finally:
            self._handshake_call = None
            if stream is not None:
                self.transport.close_request_stream(session, request_id, stream)
        if direct is not None and direct.armed:
            return await direct.finish(reply)  # the response may have left already
        if stream is None or (not stream.resumable and stream.writer is self):
            return self._reply(reply, post.wants_json)  # nothing was streamed: plain JSON
        if reply is not None:
            stream.send(reply)
        stream.finish()
        return None

    # One method per way a POST can go; posts.classify chooses.
    _ways: ClassVar[dict[PostWay, Callable[[McpHandler, Post], Awaitable[None]]]] = {
        "refused": _post_refused,
        "seed": _post_seed,
        "modern": ModernRequests._post_modern,
        "initialize": _post_initialize,
        "handshake": _post_handshake,
    }

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
        if not self._finished and self._ended is not None:  # _start_sse made it
            await self._ended.wait()

    def on_connection_close(self) -> None:
        super().on_connection_close()  # a streamed body that was cut short ends the request
        # The stream goes on without this connection, until the client resumes it.
        stream = self._stream
        if stream is not None and stream.writer is self:
            stream.writer = None
        self._cancel_call()  # 2026-07-28: closing the response stream cancels the request
        self._call_unreachable()
        self._let_go()
        if self.seed_closed is not None:
            self.seed_closed.set()
        if self._ended is not None:
            self._ended.set()

    def _call_unreachable(self) -> None:
        """The client hung up while its handshake-era call waits. Unless the session may
        resume the call's stream (the client has an event id of it), nothing can receive
        the reply: a call that has not started is dropped (Server.client_gone)."""
        call, stream = self._handshake_call, self._stream
        if call is None or (stream is not None and stream.resumable):
            return
        self.transport.server.client_gone(*call)

    # -- DELETE: end the session -------------------------------------------------------
    async def delete(self) -> None:  # async: StreamedMcpHandler's awaits the body first
        if self._refuse_modern_stream():
            return
        session = self._session()
        if session is None:
            return
        self.transport.end_session(session.id)
        self.set_status(200)
        self.finish()

    async def options(self) -> None:
        # No CORS: browsers on other origins are refused above; loopback pages need none.
        self.set_status(204)
        self.finish()
