"""The endpoint's rules, once for every server: from one HTTP request to what to do.

Sans-IO, like h11: no tornado, no ASGI, no sockets. An adapter (handler.py for tornado,
asgi.py for any ASGI server) turns its framework's request into an :class:`HttpRequest`,
asks :func:`screen` before it reads a body and :func:`decide` once it has one, and carries
out the :class:`Decision`: an answer (status, headers, a JSON-RPC error or nothing), or
one of the protocol handlers it names, with the session the request is on.

The steps, in order, so that each refusal is the one a client expects:

1. ``screen``: where the request comes from (Host, Origin: 403), who sends it
   (:func:`authorize`: the bearer token, 401), how big its body says it is (400, 413);
   the tornado transport also applies :func:`gate` to a connection's first request,
   before any handler (limits.py);
2. ``decide``, by method: a POST's way (posts.py: 415, 406, 400, a dialect plug-in,
   2026-07-28, ``initialize``, any other handshake-era message); GET and DELETE of a
   session; OPTIONS; anything else 405.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..protocol import Server, Session, jsonrpc
from ..protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import posts
from .admission import Refusal
from .modern_checks import admit
from .security import Guard
from .sse import BadEventId, parse_event_id

# Statuses given before the body is looked at: their errors name no request id.
UNREAD = (401, 403, 413)
ALLOWED = "GET, POST, DELETE, OPTIONS"

# What the adapter runs: "answer" is the decision's status and error alone; the others are
# protocol handlers. "dialect": a plug-in's ``serve``; "modern": a 2026-07-28 request;
# "initialize": opens a session if it succeeds; "notify": a handshake-era notification or
# response, then 202; "call": a request on its session; "stream": the session's GET
# stream (``resume``: the stream and the event to resume after); "end": DELETE.
Handler = Literal["answer", "dialect", "modern", "initialize", "notify", "call", "stream", "end"]


@dataclass(slots=True)
class HttpRequest:
    """One request, as far as the rules look: ``headers`` are looked up without regard
    to case (tornado's ``HTTPHeaders``, asgi.py's ``Headers``)."""

    method: str
    headers: Mapping[str, str]
    body: bytes = b""
    client: str = ""  # the peer's address: sessions are counted by it


class SessionTable(Protocol):
    """The sessions of one endpoint, as the rules need them."""

    def find(self, session_id: str) -> Session | None: ...

    def touch(self, session_id: str) -> None: ...

    def refuse_session(self, client: str) -> Refusal | None: ...


@dataclass(frozen=True, slots=True)
class Settings:
    """What the rules need of the endpoint that applies them."""

    server: Server
    guard: Guard
    max_body: int
    resumable: bool = True  # GET streams are numbered and resume from Last-Event-ID


@dataclass(slots=True)
class Decision:
    """What to do with a request: the handler to run, or the answer to send."""

    handler: Handler = "answer"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    error: RpcError | None = None  # an answer's JSON-RPC error body (None: no body)
    request_id: Any = None  # the id that error names
    post: posts.Post | None = None  # a POST's way, its message and what it accepts
    session: Session | None = None  # the session the request is on, once looked up
    resume: tuple[str, int] | None = None  # "stream": the stream key and event to resume
    trace: dict[str, str] | None = None  # a POST to a traced server: its W3C trace headers


def refuse(
    status: int,
    message: str,
    code: int = INVALID_REQUEST,
    request_id: Any = None,
    data: Any = None,
    headers: tuple[tuple[str, str], ...] = (),
) -> Decision:
    return Decision("answer", status, headers, RpcError(code, message, data), request_id)


def gate(headers: Mapping[str, str], guard: Guard) -> Decision | None:
    """Where the request comes from (Host, Origin: 403), then who sends it (401). Host
    and Origin come first, so that a rebound page is 403 with or without the token."""
    problem = guard.host_problem(headers.get("Host"))
    if problem is None:
        problem = guard.origin_problem(headers.get("Origin"))
    if problem is not None:
        return refuse(403, f"Forbidden: {problem}")
    return authorize(headers, guard)


def authorize(headers: Mapping[str, str], guard: Guard) -> Decision | None:
    """Who sends the request: the bearer token today (401). The place where a resource
    server's check of an OAuth access token goes."""
    problem = guard.auth_problem(headers.get("Authorization"))
    if problem is None:
        return None
    return refuse(401, f"Unauthorized: {problem}")


def screen(request: HttpRequest, settings: Settings) -> Decision | None:
    """The checks made on the head alone, before any byte of the body is read."""
    refused = gate(request.headers, settings.guard)
    if refused is not None:
        return refused
    try:
        length = announced_length(request.headers)
    except ValueError as exc:
        return refuse(400, f"Bad Request: {exc}")
    if length is not None and length > settings.max_body:
        return refuse(413, too_large(settings.max_body))
    return None


def too_large(limit: int) -> str:
    return f"Payload Too Large: the limit is {limit} bytes"


def announced_length(headers: Mapping[str, str]) -> int | None:
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


def decide(request: HttpRequest, sessions: SessionTable, settings: Settings) -> Decision:
    """What to do with a request that passed :func:`screen`, its body read."""
    method = request.method
    if method == "POST":
        decision = _post(request, sessions, settings)
        if settings.server.traced:
            decision.trace = trace_headers(request.headers)
        return decision
    if method in ("GET", "DELETE"):
        refused = _modern_stream(request)
        if refused is not None:
            return refused
        return _get(request, sessions, settings) if method == "GET" else _delete(request, sessions)
    if method == "OPTIONS":
        # No CORS: browsers on other origins are refused above; loopback pages need none.
        return Decision("answer", 204)
    return refuse(405, f"Method Not Allowed: {method}", headers=(("Allow", ALLOWED),))


def trace_headers(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The request's W3C trace context headers, these two only (the protocol core sees no
    other header); None without a ``traceparent``. Repeated headers arrive joined with
    commas (tornado): a ``traceparent`` so joined is malformed, and starts a new trace."""
    parent = headers.get("traceparent")
    if parent is None:
        return None
    state = headers.get("tracestate")
    return (
        {"traceparent": parent} if state is None else {"traceparent": parent, "tracestate": state}
    )


def body_id(request: HttpRequest, message: Any = None) -> Any:
    """The id of the request a POST's body holds, if it has one a reply may echo."""
    if message is None and request.method == "POST":
        try:
            message = jsonrpc.parse(request.body)
        except RpcError as error:
            return jsonrpc.refused_id(error)
    return jsonrpc.readable_id(message)


def _post(request: HttpRequest, sessions: SessionTable, settings: Settings) -> Decision:
    post = posts.classify(request.headers, request.body)
    way, message = post.way, post.message
    if way == "refused":
        error = post.error
        assert error is not None  # classify gives every refusal its error
        request_id = body_id(request, message)
        return Decision("answer", post.status, (), error, request_id, post)
    if way == "dialect":
        return Decision("dialect", post=post)
    if way == "modern":
        if post.kind != "request":
            return Decision("answer", 202)  # nothing besides requests needs an answer
        admitted = admit(message, request.headers, settings.server)
        if isinstance(admitted, tuple):
            status, error = admitted
            return Decision("answer", status, (), error, message["id"], post)
        return Decision("modern", post=post, session=admitted)
    if way == "initialize":
        refusal = sessions.refuse_session(request.client)
        if refusal is None:
            return Decision("initialize", post=post)
        retry = (("Retry-After", str(refusal.retry_after)),)
        return refuse(refusal.status, refusal.message, refusal.code, message["id"], None, retry)
    return _handshake(request, post, sessions, settings.server)


def _handshake(
    request: HttpRequest, post: posts.Post, sessions: SessionTable, server: Server
) -> Decision:
    """Any other handshake-era message, on the session its ``Mcp-Session-Id`` names."""
    message = post.message
    request_id = jsonrpc.readable_id(message)
    is_request = post.kind == "request"
    method: str = message["method"] if is_request else ""
    if is_request and not request.headers.get(SESSION_HEADER) and not server.serves(method):
        # A method outside the handshake era, called without a session.
        return refuse(404, f"Method not found: {method}", METHOD_NOT_FOUND, request_id)
    found = _session(request, sessions, request_id)
    if isinstance(found, Decision):
        found.post = post
        return found
    if is_request:
        return Decision("call", post=post, session=found)
    problem = server.notification_problem(message) if post.kind == "notification" else None
    if problem is not None:
        return refuse(400, problem.message, problem.code, request_id)
    return Decision("notify", 202, post=post, session=found)


def _session(
    request: HttpRequest, sessions: SessionTable, request_id: Any = None
) -> Session | Decision:
    """The request's session, or the refusal: 400 without one or with a version header
    of another era, 404 for a session that ended or never existed."""
    session_id = request.headers.get(SESSION_HEADER)
    if not session_id:
        message = f"Bad Request: {SESSION_HEADER} header is required"
        return refuse(400, message, request_id=request_id)
    session = sessions.find(session_id)
    if session is None:
        return refuse(404, "Session not found: it ended or never existed", request_id=request_id)
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version not in HANDSHAKE_VERSIONS:
        return refuse(
            400,
            f"Bad Request: unsupported {VERSION_HEADER} {version!r}; "
            f"supported: {', '.join(HANDSHAKE_VERSIONS)}",
            request_id=request_id,
        )
    sessions.touch(session_id)
    return session


def _modern_stream(request: HttpRequest) -> Decision | None:
    """2026-07-28 has no GET stream and no sessions to DELETE: 405 for its clients."""
    version = request.headers.get(VERSION_HEADER)
    if request.headers.get(SESSION_HEADER) or version is None or version in HANDSHAKE_VERSIONS:
        return None
    message = f"Method Not Allowed: {request.method} is not part of {version}"
    return refuse(405, message, headers=(("Allow", "POST"),))


def _get(request: HttpRequest, sessions: SessionTable, settings: Settings) -> Decision:
    if posts.SSE not in request.headers.get("Accept", "").lower():
        return refuse(406, "Not Acceptable: the GET stream is text/event-stream")
    found = _session(request, sessions)
    if isinstance(found, Decision):
        return found
    resume = None
    if settings.resumable:
        try:
            resume = parse_event_id(request.headers.get("Last-Event-ID"))
        except BadEventId as exc:
            return refuse(400, f"Bad Request: {exc}")
    return Decision("stream", session=found, resume=resume)


def _delete(request: HttpRequest, sessions: SessionTable) -> Decision:
    found = _session(request, sessions)
    if isinstance(found, Decision):
        return found
    return Decision("end", 200, session=found)
