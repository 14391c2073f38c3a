"""An exported notebook as Ray Serve replicas: ``serve run PACKAGE.ray:app``.

Imported only by ``PACKAGE/ray.py`` (``pip install 'mcp-notebook[ray]'``): nothing else in
mcp_notebook imports Ray.

Layout: one ingress deployment (``McpIngress``, the HTTP route) and N deployments of one
replica each (``mcp-replica-0`` .. ``mcp-replica-{N-1}``), each importing the exported
module once at start and serving it with the ASGI app (``asgi.McpAsgiApp``: the same
security checks, both eras). Why N one-replica deployments and not one deployment of N
replicas: a handshake-era session lives in one replica's memory, and Ray Serve routes a
handle's call to whichever replica of a deployment it likes. Its model multiplexing
(``multiplexed_model_id``) only prefers replicas that reported holding an id: it falls back
to another replica when those are busy or before the report arrives, so it cannot promise
that a session's requests reach the replica that holds it. Here the ingress picks the
replica itself:

- a request with no ``Mcp-Session-Id`` (every 2026-07-28 request, and a handshake-era
  ``initialize``) goes to the replica with the fewest of this ingress's requests in flight;
- the session id a replica hands out is given back to the client prefixed with the
  replica's number (``2.<id>``), and a request carrying it goes to that replica, with the
  prefix removed. No table is kept, so ingress replicas can be added freely.

Ray Serve replaces a replica that dies. A 2025 session on it is gone: its next request gets
404 from the new replica and the client initializes again, as the spec says. A request
that was running on the dead replica (or was sent to it before Ray Serve noticed) gets 503
with ``Retry-After: 1``.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..protocol.names import SESSION_HEADER
from .runtime import asgi_app

logger = logging.getLogger(__name__)

REPLICAS_ENV = "MCP_NOTEBOOK_REPLICAS"
_SESSION = SESSION_HEADER.lower().encode("latin-1")
_SEPARATOR = "."
# OAuth's protected-resource metadata (RFC 9728): the one path besides the endpoint that a
# replica answers (when auth is on), so the ingress must not turn it into /mcp.
_METADATA = "/.well-known/oauth-protected-resource"
REPLICA_ONGOING = 100  # a handshake-era GET stream holds one for as long as it is open
INGRESS_ONGOING = 1000  # it only relays: the limit is on the replicas


# Apps told their client left, kept until they finish (the loop holds tasks only weakly).
_finishing: set[asyncio.Future[Any]] = set()


def _finished(served: asyncio.Future[Any]) -> None:
    _finishing.discard(served)
    if not served.cancelled() and (error := served.exception()) is not None:
        logger.warning("a request ended with an error after its client left", exc_info=error)


def _cancel(stream: Any) -> None:
    """Cancel a replica's call (best effort: Ray may find it ended, or be shutting down)."""
    try:
        stream.cancel()
    except Exception as exc:
        logger.debug("cancelling a replica's call failed: %r", exc)


class McpReplica:
    """One replica: the exported code, run once, served by its ASGI app."""

    def __init__(self, module: str) -> None:
        exported = importlib.import_module(module)  # runs the notebook's code once
        self._app = asgi_app(exported.mcp)
        logger.info("replica of %s ready in process %d", module, os.getpid())

    async def http(self, scope: dict[str, Any], body: bytes) -> AsyncIterator[Any]:
        """The ASGI app's answer to one request: first ``(status, headers)``, then the body's
        chunks as they are sent (an SSE stream stays open until it ends or is cancelled)."""
        sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        delivered = False
        hung_up = asyncio.Event()  # Ray tells us the client left by closing this generator

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await hung_up.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            await sent.put(message)

        scope = {
            **scope,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in scope["headers"]],
        }
        served = asyncio.ensure_future(self._app(scope, receive, send))
        got: asyncio.Future[dict[str, Any]] | None = None
        raised = False
        try:
            while True:
                got = asyncio.ensure_future(sent.get())
                await asyncio.wait({got, served}, return_when=asyncio.FIRST_COMPLETED)
                if not got.done():
                    raised = True
                    served.result()  # the app ended without a complete response
                    return
                message = got.result()
                if message["type"] == "http.response.start":
                    headers = [
                        (k.decode("latin-1"), v.decode("latin-1"))
                        for k, v in message.get("headers", [])
                    ]
                    yield (message["status"], headers)
                elif message["type"] == "http.response.body":
                    if message.get("body"):
                        yield message["body"]
                    if not message.get("more_body", False):
                        return
        finally:
            if got is not None:
                got.cancel()  # Ray cancels us inside the wait (user code on its own thread)
            if not served.done():
                # Tell the app as an HTTP server would, and let it finish: it ends a GET
                # stream, cancels a 2026-07-28 call, lets a handshake-era call run on.
                # (Cancelling it instead left a 2026-07-28 call running.)
                hung_up.set()
                _finishing.add(served)
                served.add_done_callback(_finished)
            elif not raised:
                _finished(served)  # an error nobody raised is logged, not lost


class McpIngress:
    """The HTTP route: sends each request to a replica chosen as the module says."""

    def __init__(self, *replicas: DeploymentHandle) -> None:
        self._replicas = [r.options(stream=True) for r in replicas]
        self._in_flight = [0] * len(replicas)
        self._turn = itertools.count()

    def _least_busy(self) -> int:
        start = next(self._turn) % len(self._replicas)
        order = [(start + i) % len(self._replicas) for i in range(len(self._replicas))]
        return min(order, key=lambda i: self._in_flight[i])

    def _route(self, session: str | None) -> tuple[int, str | None]:
        """The replica for a request and the session id that replica knows it by."""
        if session is None:
            return self._least_busy(), None
        number, _, inner = session.partition(_SEPARATOR)
        if number.isdigit() and int(number) < len(self._replicas) and inner:
            return int(number), inner
        return 0, session  # not one of ours: replica 0 answers 404 (or 400) as it would

    async def __call__(self, request: Request) -> Response:
        session = request.headers.get(SESSION_HEADER)
        index, inner = self._route(session)
        headers = [(k, v) for k, v in request.headers.items() if k.encode("latin-1") != _SESSION]
        if inner is not None:
            headers.append((SESSION_HEADER.lower(), inner))
        path = request.url.path if request.url.path.startswith(_METADATA) else "/mcp"
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode("latin-1"),
            "root_path": "",
            "query_string": request.url.query.encode("latin-1"),
            "headers": headers,
            "client": list(request.client) if request.client else None,
            "server": None,
        }
        body = await request.body()
        self._in_flight[index] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._in_flight[index] -= 1

        stream: Any = None
        try:
            stream = self._replicas[index].http.remote(scope, body)
            status, reply_headers = await stream.__anext__()
        except Exception as exc:  # the replica died, or is being replaced
            release()
            logger.warning("replica %d did not answer: %s", index, exc)
            return JSONResponse(
                {"error": f"replica {index} is unavailable; retry"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
        except BaseException:
            # The client gave up (Ray Serve cancels the request), typically while a dead
            # replica is replaced: a count left behind kept every later request away from
            # the replacement, as least-busy never chose it again. Its call is cancelled on
            # the replica too (Ray does not, unless under direct ingress): a tool call
            # whose client left before its reply began no longer runs on.
            release()
            if stream is not None:
                _cancel(stream)
            raise
        out = {}
        for name, value in reply_headers:
            if name.lower() == SESSION_HEADER.lower():
                value = f"{index}{_SEPARATOR}{value}"
            out[name] = value

        ended = False

        async def chunks() -> AsyncIterator[bytes]:
            nonlocal ended
            async for chunk in stream:
                yield chunk
            ended = True

        def finish() -> None:
            release()
            if not ended:
                # The client hung up: end the replica's side now. Left to Ray, it ended
                # only once Python freed the handle's generator, and a GET stream held its
                # session's one stream (409 to the next) until then.
                _cancel(stream)

        media_type = out.pop("content-type", None)
        return _Relayed(finish, chunks(), status_code=status, headers=out, media_type=media_type)


class _Relayed(StreamingResponse):
    """A replica's streamed answer that ends the request's count however it ends: sent
    whole, cut by the client, or never started (a generator's ``finally`` runs only once
    the generator has started, and a client that hung up first never starts it)."""

    def __init__(self, done: Callable[[], None], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._done = done

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._done()


def build(module: str, replicas: int | None = None, **replica_options: Any) -> Any:
    """The Ray Serve application of the exported ``module`` (``PACKAGE.notebook``) with
    ``replicas`` replicas (default ``$MCP_NOTEBOOK_REPLICAS`` or 2); ``replica_options`` go
    to each replica's ``serve.deployment`` (e.g. ``ray_actor_options={"num_cpus": 1}``)."""
    count = replicas if replicas is not None else int(os.environ.get(REPLICAS_ENV, "2"))
    if count < 1:
        raise ValueError(f"replicas must be at least 1, not {count}")
    # Ray Serve's default of 5 requests at once per replica would queue (and back off)
    # requests that a replica's worker threads, or the ingress's loop, could be running.
    options = {"max_ongoing_requests": REPLICA_ONGOING, **replica_options}
    replica = serve.deployment(McpReplica, num_replicas=1, **options)
    bound = [replica.options(name=f"mcp-replica-{i}").bind(module) for i in range(count)]
    ingress = serve.deployment(
        McpIngress, name="McpIngress", num_replicas=1, max_ongoing_requests=INGRESS_ONGOING
    )
    return ingress.bind(*bound)
