"""The tornado adapter of the MCP endpoint: POST, GET (SSE) and DELETE.

What a request gets is decided by the endpoint policy (policy.py, shared with the ASGI
app); this handler turns tornado's request into a ``policy.HttpRequest`` and carries out
the ``Decision``: an answer, or the protocol handler it names (one method each, below).
How replies leave (JSON, SSE, early from the kernel thread) is replying.py's.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from ..protocol import Session
from ..protocol.caller import Caller
from ..protocol.jsonrpc import INVALID_REQUEST, Message
from ..protocol.names import SESSION_HEADER
from ..protocol.request import ANSWERED_EARLY, RUN_USER_CODE
from . import policy, relayed
from .http_exchange import HttpExchange
from .modern_checks import reply_status
from .posts import Post
from .replying import ReplyingHandler
from .responses import error_body
from .security import NOT_FOUND
from .sse import SseStream

GET_STREAM = "g"
_stream_numbers = itertools.count(1)  # 2026 streams are never resumed: local names do


class NotFoundHandler(HttpExchange):
    def prepare(self) -> None:
        self.set_status(404)
        self.set_header("Content-Type", "application/json")
        self.finish(error_body(INVALID_REQUEST, NOT_FOUND))

    def write_error(self, status_code: int, **kwargs: Any) -> None:  # 405, 500: JSON too
        self.set_header("Content-Type", "application/json")
        self.finish(error_body(INVALID_REQUEST, self._reason))


class MetadataHandler(ReplyingHandler):
    """The OAuth protected-resource metadata (RFC 9728), for requests on a connection a
    token made trusted; other connections get it from the early screen (http.py)."""

    SUPPORTED_METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")

    def prepare(self) -> None:  # no token needed: not the endpoint's screen
        asked = policy.HttpRequest(self.request.method or "GET", self.request.headers)
        self.answer(policy.metadata(asked, self.transport.guard))


class McpHandler(ReplyingHandler):
    """The endpoint, for requests whose body tornado reads whole first: none, or a known
    size within the limit (see bodies.py ``read_whole``). Others go to StreamedMcpHandler."""

    # Every method reaches the policy, which answers those the endpoint has not with 405.
    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "OPTIONS", "PUT", "PATCH", "HEAD")
    # The session, id and serving task of the handshake-era call this POST waits for:
    # dropped if the client hangs up first.
    _handshake_call: tuple[Session, Any, Any] | None = None
    _call: asyncio.Future[Message | None] | None = None  # the 2026-07-28 request served
    _trace: dict[str, str] | None = None  # its W3C trace headers, if the server is traced
    caller: Caller | None = None  # who sent it, with OAuth configured (policy.authenticate)

    # Every method is served the same way: the policy decides, the handler carries it out.
    async def post(self) -> None:
        await self._serve()

    async def get(self) -> None:
        await self._serve()

    async def delete(self) -> None:
        await self._serve()

    async def options(self) -> None:
        await self._serve()

    async def put(self) -> None:
        await self._serve()

    async def patch(self) -> None:
        await self._serve()

    async def head(self) -> None:
        await self._serve()

    async def _serve(self) -> None:
        request = self.request
        asked = policy.HttpRequest(
            request.method or "GET", request.headers, self._body(), request.remote_ip or ""
        )
        guard = self.transport.guard
        if guard.resource is not None:  # OAuth: no coroutine of its own on the path without
            refused, self.caller = await policy.authenticate(request.headers, guard)
            if refused is not None:
                self.answer(refused)
                return self._let_go()
        decision = policy.decide(asked, self.transport, self.transport.settings, self.caller)
        if decision.post is not None:
            self._message = decision.post.message
        await self._carry_out(decision)
        self._let_go()  # answered, or its connection lent to the call (no on_finish then)

    async def _carry_out(self, decision: policy.Decision) -> None:
        way, post, session = decision.handler, decision.post, decision.session
        self._trace = decision.trace
        if way == "answer":
            return self.answer(decision)
        if way == "stream" or way == "end":
            assert session is not None
            if way == "stream":
                return await self._get_stream(session, decision.resume)
            self.transport.end_session(session.id)
            return self.answer(decision)
        assert post is not None
        if way == "dialect":
            assert post.claimed is not None
            dialect, claim = post.claimed.dialect, post.claimed.claim
            return await dialect.serve(self, self.transport.server, claim)
        if way == "initialize":
            return await self._open_session(post)
        assert session is not None
        if way == "call":
            return await self._call_handshake(post, session)
        if way == "modern":
            return await self._call_modern(post, session)
        await self.transport.server.handle(
            post.message, session, caller=self.caller, trace=self._trace
        )  # "notify"
        return self.answer(decision)

    async def _open_session(self, post: Post) -> None:
        """A handshake-era ``initialize`` the session limits let through: a session opens
        if it succeeds."""
        message = post.message
        session = Session(
            transport="http", via=relayed.via(self.request.headers, self.transport.guard)
        )
        session.caller = self.caller
        reply = await self.transport.server.handle(
            message, session, caller=self.caller, trace=self._trace
        )
        if reply is not None and "result" in reply:
            self.transport.new_session(session, self.request.remote_ip or "")
            self.set_header(SESSION_HEADER, session.id)
        return self._reply(reply, post.wants_json)

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
            reply = await self.transport.server.handle(
                message, session, direct, self.caller, self._trace
            )
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

    # -- 2026-07-28: one self-contained request; closing its stream cancels it ----------
    async def _call_modern(self, post: Post, session: Session) -> None:
        """Serve a request that passed the checks; its reply goes as JSON, early from the
        kernel thread, or on the request's SSE stream once something was streamed."""
        message, wants_json = post.message, post.wants_json
        stream = SseStream(f"m{next(_stream_numbers)}", numbered=False)
        stream.writer = self
        self._stream = stream
        session.transport = "http"
        session.via = relayed.via(self.request.headers, self.transport.guard)
        session.outbound = lambda outgoing, related: _sent(stream, outgoing)
        early = wants_json and message["method"] in ANSWERED_EARLY
        direct = self._direct_reply(reply_status, self._cancel_call) if early else None
        session.caller = self.caller
        handled = self.transport.server.handle(message, session, direct, self.caller, self._trace)
        self._call = asyncio.ensure_future(handled)
        try:
            reply = await self._call
        except asyncio.CancelledError:
            if direct is not None and direct.armed:
                direct.abandon()
            return None  # the client closed the stream: that is how it cancels
        if direct is not None and direct.armed:
            return await direct.finish(reply)  # the response may have left already
        if stream.resumable or stream.writer is not self:
            if reply is not None:
                stream.send(reply)
            stream.finish()
            return None
        self.set_status(reply_status(reply) if reply else 200)
        return self._reply(reply, wants_json)

    def _cancel_call(self) -> None:
        call = self._call
        if call is not None and not call.done():
            call.cancel()

    # -- GET: the server->client stream, or the resumption of a broken one -------------
    async def _get_stream(self, session: Session, resume: tuple[str, int] | None) -> None:
        """The session's server->client stream, or the resumption of a broken one."""
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
        if self.held_open is not None:
            self.held_open.set()
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


def _sent(stream: SseStream, message: dict[str, Any]) -> bool:
    stream.send(message)
    return True
