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
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..protocol import Server, Session, jsonrpc
from ..protocol.codes import SERVER_ERROR
from ..protocol.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import posts
from .admission import Refusal
from .modern_checks import admit
from .security import Guard

if TYPE_CHECKING:
    from ..auth.resource import Verdict
    from ..protocol.caller import Caller
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
    body: bytes | None = None  # an answer's own JSON body (the resource metadata document)


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
    refused = where_from(headers, guard)
    return refused if refused is not None else authorize(headers, guard)


def where_from(headers: Mapping[str, str], guard: Guard) -> Decision | None:
    """Host and Origin (403): DNS rebinding and other sites' pages."""
    problem = guard.host_problem(headers.get("Host"))
    if problem is None:
        problem = guard.origin_problem(headers.get("Origin"))
    if problem is not None:
        return refuse(403, f"Forbidden: {problem}")
    return None


def authorize(headers: Mapping[str, str], guard: Guard) -> Decision | None:
    """Who sends the request: the static bearer token (401), or with OAuth configured,
    what the resource server can tell without a fetch (auth/resource.py ``check``); the
    adapter then awaits :func:`authenticate` for the whole answer."""
    resource = guard.resource
    if resource is not None:
        verdict = resource.check(headers.get("Authorization"))
        return None if verdict.status in (0, 200) else refused_by(verdict)
    problem = guard.auth_problem(headers.get("Authorization"))
    if problem is None:
        return None
    return refuse(401, f"Unauthorized: {problem}")


async def authenticate(
    headers: Mapping[str, str], guard: Guard
) -> tuple[Decision | None, Caller | None]:
    """With OAuth configured, the verified caller, or the refusal (401, 403, 503); the
    issuer's keys fetched if need be (on a worker thread: this loop never blocks)."""
    resource = guard.resource
    if resource is None:
        return None, None
    verdict = await resource.verify(headers.get("Authorization"))
    if verdict.status == 200:
        return None, verdict.caller
    return refused_by(verdict), None


def refused_by(verdict: Verdict) -> Decision:
    """A resource server's refusal as the endpoint answers it."""
    headers: tuple[tuple[str, str], ...] = ()
    if verdict.challenge is not None:
        headers = (("WWW-Authenticate", verdict.challenge),)
    if verdict.retry_after is not None:
        headers += (("Retry-After", str(verdict.retry_after)),)
    code = SERVER_ERROR if verdict.status == 503 else INVALID_REQUEST
    return refuse(verdict.status, verdict.message, code, headers=headers)


def metadata(request: HttpRequest, guard: Guard) -> Decision:
    """The protected-resource metadata document (RFC 9728), served without a token, from
    the same origins as the endpoint (Host and Origin checked; no CORS, as there)."""
    refused = where_from(request.headers, guard)
    if refused is not None:
        return refused
    resource = guard.resource
    if resource is None:
        return refuse(404, "Not Found: this server has no OAuth protected-resource metadata")
    if request.method == "OPTIONS":
        return Decision("answer", 204)
    if request.method != "GET":  # HEAD too: the early screen writes whole responses
        return refuse(405, f"Method Not Allowed: {request.method}", headers=(("Allow", "GET"),))
    body = jsonrpc.dumps(resource.metadata)  # JSON: the adapters say so
    return Decision("answer", 200, (("Cache-Control", "max-age=300"),), body=body)


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


def decide(
    request: HttpRequest,
    sessions: SessionTable,
    settings: Settings,
    caller: Caller | None = None,
) -> Decision:
    """What to do with a request that passed :func:`screen` (and :func:`authenticate`:
    ``caller``, with OAuth configured), its body read."""
    method = request.method
    if method == "POST":
        return _post(request, sessions, settings, caller)
    if method in ("GET", "DELETE"):
        refused = _modern_stream(request)
        if refused is not None:
            return refused
        if method == "GET":
            return _get(request, sessions, settings, caller)
        return _delete(request, sessions, caller)
    if method == "OPTIONS":
        # No CORS: browsers on other origins are refused above; loopback pages need none.
        return Decision("answer", 204)
    return refuse(405, f"Method Not Allowed: {method}", headers=(("Allow", ALLOWED),))


def body_id(request: HttpRequest, message: Any = None) -> Any:
    """The id of the request a POST's body holds, if it has one a reply may echo."""
    if message is None and request.method == "POST":
        try:
            message = jsonrpc.parse(request.body)
        except RpcError as error:
            return jsonrpc.refused_id(error)
    return jsonrpc.readable_id(message)


def _post(
    request: HttpRequest, sessions: SessionTable, settings: Settings, caller: Caller | None
) -> Decision:
    post = posts.classify(request.headers, request.body)
    way, message = post.way, post.message
    if way == "refused":
        error = post.error
        assert error is not None  # classify gives every refusal its error
        request_id = body_id(request, message)
        return Decision("answer", post.status, (), error, request_id, post)
    if way == "dialect":
        return Decision("dialect", post=post)
    if caller is not None and post.kind == "request":
        refused = tool_scopes(message, caller, settings)
        if refused is not None:
            return refused
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
    return _handshake(request, post, sessions, settings.server, caller)


def tool_scopes(message: Any, caller: Caller, settings: Settings) -> Decision | None:
    """A ``tools/call`` of a tool that needs scopes the token lacks: HTTP 403
    ``insufficient_scope``, before anything runs. The spec's "Scope Challenge Handling"
    asks for this 403 (not a JSON-RPC error in a 200): it is what starts a client's
    step-up authorization, which a JSON-RPC error would not. A call that reaches its tool
    another way (the dispatcher's ``call_notebook_tool``) meets the chain's check instead
    (protocol/scopes.py), which can only answer with a JSON-RPC error."""
    resource = settings.guard.resource
    if resource is None or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    tool = settings.server.registry.tools.get(name) if isinstance(name, str) else None
    if tool is None or not tool.scopes:
        return None
    verdict = resource.scoped(caller, tool.scopes)
    if verdict.status == 200:
        return None
    refused = refused_by(verdict)
    refused.request_id = jsonrpc.readable_id(message)
    return refused


def _handshake(
    request: HttpRequest,
    post: posts.Post,
    sessions: SessionTable,
    server: Server,
    caller: Caller | None,
) -> Decision:
    """Any other handshake-era message, on the session its ``Mcp-Session-Id`` names."""
    message = post.message
    request_id = jsonrpc.readable_id(message)
    is_request = post.kind == "request"
    method: str = message["method"] if is_request else ""
    if is_request and not request.headers.get(SESSION_HEADER) and not server.serves(method):
        # A method outside the handshake era, called without a session.
        return refuse(404, f"Method not found: {method}", METHOD_NOT_FOUND, request_id)
    found = _session(request, sessions, request_id, caller)
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
    request: HttpRequest,
    sessions: SessionTable,
    request_id: Any = None,
    caller: Caller | None = None,
) -> Session | Decision:
    """The request's session, or the refusal: 400 without one or with a version header
    of another era, 404 for a session that ended or never existed, or (OAuth) that
    another token holder opened: a session id is no credential."""
    session_id = request.headers.get(SESSION_HEADER)
    if not session_id:
        message = f"Bad Request: {SESSION_HEADER} header is required"
        return refuse(400, message, request_id=request_id)
    session = sessions.find(session_id)
    if session is None or (
        (caller is not None or session.caller is not None)
        and not same_holder(session.caller, caller)
    ):
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


def same_holder(opener: Caller | None, caller: Caller | None) -> bool:
    """May ``caller`` use a session ``opener`` opened? The same subject and client of the
    same issuer (a refreshed token keeps its session); anyone when OAuth is off."""
    if opener is None or caller is None:
        return opener is None
    return (opener.issuer, opener.subject, opener.client_id) == (
        caller.issuer,
        caller.subject,
        caller.client_id,
    )


def _get(
    request: HttpRequest, sessions: SessionTable, settings: Settings, caller: Caller | None
) -> Decision:
    if posts.SSE not in request.headers.get("Accept", "").lower():
        return refuse(406, "Not Acceptable: the GET stream is text/event-stream")
    found = _session(request, sessions, caller=caller)
    if isinstance(found, Decision):
        return found
    resume = None
    if settings.resumable:
        try:
            resume = parse_event_id(request.headers.get("Last-Event-ID"))
        except BadEventId as exc:
            return refuse(400, f"Bad Request: {exc}")
    return Decision("stream", session=found, resume=resume)


def _delete(request: HttpRequest, sessions: SessionTable, caller: Caller | None) -> Decision:
    found = _session(request, sessions, caller=caller)
    if isinstance(found, Decision):
        return found
    return Decision("end", 200, session=found)
