"""Streamable HTTP as an ASGI application, so that any ASGI server (uvicorn, hypercorn...)
serves a :class:`~mcp_notebook.protocol.Server`: both eras, on one endpoint.

It shares with the tornado transport everything that is not socket handling: the endpoint
policy (policy.py: the Host / Origin / token checks, the body limit, which way a POST
goes, the 2026-07-28 checks, the session lookup, GET and DELETE), and the session table's
limits (admission.py). This is the ASGI adapter of that policy. No tornado is imported.

What it leaves to the tornado transport: dialect plug-ins (a POST one claims is refused
with 400, naming it), resuming a broken SSE stream (``Last-Event-ID``; streams here are
not numbered), and the early reply written from the kernel thread (there is no kernel:
the reply goes when ``handle`` returns).
A request's reply is plain JSON unless something related to it (progress, a confirmation
asked of the client) was sent while it ran and the client takes SSE: then the response is
an SSE stream carrying those messages and, last, the reply.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..protocol import Server, Session, jsonrpc
from ..protocol.codes import SERVER_ERROR
from ..protocol.jsonrpc import Message
from ..protocol.names import SESSION_HEADER
from . import oauth, policy, posts
from .admission import Refusal, SessionAdmission
from .asgi_exchange import Exchange, NotReading, Receive, Scope, Send
from .modern_checks import reply_status
from .security import NOT_FOUND, Guard
from .settings import DEFAULT_MAX_BODY, Limits

if TYPE_CHECKING:
    from ..auth.config import AuthConfig

logger = logging.getLogger(__name__)

_GET = "get"  # the key of a session's GET stream among its queues


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
        auth: AuthConfig | None = None,
    ) -> None:
        """``auth``: an OAuth 2.1 resource server instead of the static ``token``; without
        an audience, this endpoint's address as the ASGI server reports it (``scope
        ["server"]``) on the first request: behind a proxy, name the public URL."""
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.guard = Guard(
            bind_host=host,
            token=token,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        self.max_body = max_body
        # No stream is kept to resume: Last-Event-ID is not looked at.
        self.settings = policy.Settings(server, self.guard, max_body, resumable=False)
        self.admission = SessionAdmission(limits or Limits())
        self.sessions: dict[str, Session] = {}
        # Where a session's messages go: the queue of the request they relate to, else its
        # GET stream's ("get"); nothing open there, and the message is not delivered.
        self._queues: dict[str, dict[Any, asyncio.Queue[Message]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None  # the ASGI server's, once it calls
        self._serving = 0  # HTTP requests in progress (GET streams included)
        self._unsubscribe = server.registry.subscribe(self._announce)
        self.auth = auth
        self.metadata_paths: frozenset[str] = frozenset()
        if auth is not None and auth.audience is not None:
            self._protect(auth.audience)

    def _protect(self, url: str) -> None:
        assert self.auth is not None
        oauth.protect(self.guard, self.server, self.auth, url)
        self.metadata_paths = oauth.metadata_paths(self.guard, self.path)

    def _own_url(self, scope: Scope) -> str:
        host, port = scope.get("server") or ("127.0.0.1", 80)
        host = f"[{host}]" if ":" in str(host) else host
        return f"{scope.get('scheme', 'http')}://{host}:{port}{self.path}"

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
        if self.auth is not None and self.guard.resource is None:
            self._protect(self._own_url(exchange.scope))
        path = exchange.scope.get("path", "").rstrip("/") or "/"
        method = exchange.scope.get("method", "GET")
        if path in self.metadata_paths:
            asked = policy.HttpRequest(method, exchange.headers)
            return await exchange.answer(policy.metadata(asked, self.guard))
        if path != self.path:
            return await exchange.fail(404, NOT_FOUND)
        client = (exchange.scope.get("client") or ("", 0))[0] or ""
        request = policy.HttpRequest(method, exchange.headers, b"", client)
        refused, caller = policy.screen(request, self.settings), None
        if refused is None and self.guard.resource is not None:
            # OAuth: the whole check, before any byte of the body is read.
            refused, caller = await policy.authenticate(request.headers, self.guard)
        if refused is not None:
            return await exchange.answer(refused)
        exchange.caller = caller
        if method == "POST":
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
                return await exchange.fail(413, policy.too_large(self.max_body))
            request.body = body
        decision = policy.decide(request, self, self.settings, caller)
        return await self._carry_out(exchange, decision)

    async def _carry_out(self, exchange: Exchange, decision: policy.Decision) -> None:
        way, post, session = decision.handler, decision.post, decision.session
        if way == "answer":
            return await exchange.answer(decision)
        if way == "stream" or way == "end":
            assert session is not None
            if way == "stream":
                return await self._get(exchange, session)
            self._end(session.id)
            return await exchange.answer(decision)
        assert post is not None
        if way == "dialect":
            assert post.claimed is not None
            name = post.claimed.dialect.name
            message = f"Bad Request: the {name} dialect is served by mcp-notebook's own HTTP server"
            request_id = jsonrpc.readable_id(post.message)
            return await exchange.fail(400, message, request_id=request_id)
        if way == "initialize":
            return await self._post_initialize(exchange, post)
        assert session is not None
        if way == "modern":
            return await self._post_modern(exchange, post, session)
        if way == "call":
            return await self._post_handshake(exchange, post, session)
        await self.server.handle(post.message, session, caller=exchange.caller)  # "notify"
        return await exchange.answer(decision)

    async def _post_modern(self, exchange: Exchange, post: posts.Post, session: Session) -> None:
        queue: asyncio.Queue[Message] = asyncio.Queue()
        session.transport = "http"
        # A client that takes no SSE cannot hear anything before the reply: say so at once
        # (a Context's request then fails fast instead of waiting for an answer).
        session.outbound = (
            (lambda message, related: _put(queue, message))
            if post.wants_sse
            else (lambda message, related: False)
        )
        await self._answer(exchange, post, session, queue, cancel_on_close=True)

    async def _post_initialize(self, exchange: Exchange, post: posts.Post) -> None:
        """An ``initialize`` the session limits let through: a session opens if it
        succeeds."""
        session = Session(transport="http", caller=exchange.caller)
        reply = await self.server.handle(post.message, session, caller=exchange.caller)
        if reply is not None and "result" in reply:
            client = (exchange.scope.get("client") or ("", 0))[0] or ""
            self._open(session, client)
            exchange.header(SESSION_HEADER, session.id)
        await self._reply(exchange, reply, post.wants_json)

    async def _post_handshake(self, exchange: Exchange, post: posts.Post, session: Session) -> None:
        request_id = post.message["id"]
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
        if session.era == "modern":
            session.caller = exchange.caller
        call = asyncio.ensure_future(
            self.server.handle(post.message, session, caller=exchange.caller)
        )
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

    # -- the session table, as the policy asks it (policy.SessionTable) ----------------
    def find(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def touch(self, session_id: str) -> None:
        self.admission.touch(session_id)

    def refuse_session(self, client: str) -> Refusal | None:
        return self.admission.admit(client, self._end, busy=self._streaming)

    # -- GET: the session's stream of messages unrelated to a request ------------------
    async def _get(self, exchange: Exchange, session: Session) -> None:
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
