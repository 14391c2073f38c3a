"""The extension's handlers: the relayed MCP endpoint and the listing of servers.

Both are Jupyter Server ``APIHandler``s, so Jupyter Server decides who gets in: its
identity provider (token, cookie, JupyterHub OAuth), its authorizer (``kernels``:
``execute`` for the endpoint, since any MCP request may run notebook code; ``read`` for
the listing), its Host and Origin rules (``allow_origin``, ``allow_remote_access``) and
its XSRF check, which token-authenticated requests skip (as every Jupyter API call does).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.base.handlers import APIHandler
from tornado import httputil, iostream, web
from tornado.http1connection import HTTP1Connection

from .. import discovery
from ..protocol import jsonrpc
from ..protocol.forwarding import Forwarding
from ..protocol.jsonrpc import INVALID_REQUEST, RpcError
from ..reach import PREFIX, endpoint_path
from ..transports.bodies import announced_length
from ..transports.lingering import LINGER_BYTES, answer_and_close
from ..transports.responses import close_response, error_body
from ..transports.settings import DEFAULT_MAX_BODY
from .identity import relay_headers
from .records import Records
from .relay import (
    PASSED_PREFIX,
    PASSED_REQUEST,
    POOL,
    Exchange,
    Target,
    Unreachable,
    UpstreamError,
    request_headers,
    response_headers,
)

logger = logging.getLogger(__name__)

RESOURCE = "kernels"
# The body limit of a server that does not say its own (an older version).
FALLBACK_MAX_BODY = 64 * 1024 * 1024
SSE = "text/event-stream"
# What a page on another origin (one Jupyter lets in: allow_origin, or a token) must read.
EXPOSED = "Mcp-Session-Id, MCP-Protocol-Version"


def routes(base_url: str) -> list[tuple[str, type[web.RequestHandler]]]:
    return [
        (f"{base_url}{PREFIX}/api/servers", ServersHandler),
        (f"{base_url}{PREFIX}/([^/]+)/mcp", RelayHandler),
    ]


def _request_id(body: bytes) -> Any:
    """The id of the JSON-RPC request in ``body``, when it has one a reply may name (read
    by the package's one JSON policy: never an id the reply could not encode)."""
    return jsonrpc.request_id_in(body) if body else None


# The relay's own spans (protocol/forwarding.py) when OTEL_* trace Jupyter Server, or None.
TRACING: Forwarding | None = None
# Remembered discovery lookups (records.py): Jupyter Server's, on its loop.
RECORDS = Records()
lookup = RECORDS.find


def _passed(header: str) -> bool:
    return header in PASSED_REQUEST or header.startswith(PASSED_PREFIX)


class ServersHandler(APIHandler):
    """``GET mcp-notebook/api/servers``: the notebook servers this Jupyter Server relays to."""

    @web.authenticated
    @authorized("read", resource=RESOURCE)  # type: ignore[untyped-decorator]  # unannotated
    def get(self) -> None:
        base = self.base_url
        origin = f"{self.request.protocol}://{self.request.host}"
        kernels = set(self.kernel_manager.list_kernel_ids())
        servers: list[dict[str, Any]] = []
        for record in discovery.running():
            path = endpoint_path(base, record.name)  # base ends with "/"
            servers.append(
                {
                    "name": record.name,
                    "path": path,
                    "url": origin + path,
                    "kernel_id": record.kernel_id,
                    # The same endpoint by kernel id: unambiguous when names repeat.
                    "kernel_path": endpoint_path(base, record.kernel_id)
                    if record.kernel_id
                    else None,
                    # Whether this Jupyter Server runs that kernel (else another process
                    # of the same user does: it is reachable all the same).
                    "own_kernel": record.kernel_id in kernels,
                    "notebook": record.notebook,
                    "started": record.started,
                }
            )
        self.finish(json.dumps({"servers": servers}))


@web.stream_request_body
class RelayHandler(APIHandler):
    """``mcp-notebook/<name>/mcp``: the MCP endpoint of the kernel server ``name``.

    The body is read as it arrives (after Jupyter let the request in), up to the kernel's
    own limit: one announced larger is refused before it is read, one that grows larger
    is dropped as it comes, and either gets the kernel's 413."""

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "OPTIONS")

    _exchange: Exchange | None = None
    _streaming = False
    _kernel_refused = False
    _record: discovery.ServerRecord | None = None
    _too_large = False
    _limit = FALLBACK_MAX_BODY

    def initialize(self) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self._body = b""

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()  # Jupyter's authentication, Host, Origin and XSRF checks
        if self._finished or self.request.method == "OPTIONS":
            return
        # What the methods' decorators check again once the body is in: no byte of the
        # body is read for a client Jupyter does not let run code.
        user = self.current_user
        if not user or not await ensure_async(
            self.authorizer.is_authorized(self, user, "execute", RESOURCE)
        ):
            raise web.HTTPError(403, f"User is not authorized to execute on resource: {RESOURCE}.")
        try:
            self._record = lookup(self.path_args[0])
        except discovery.NotFound:
            # Answered once the body (and the request's id) is in: a kernel's default limit.
            self._limit = DEFAULT_MAX_BODY
        else:
            self._limit = self._record.max_body or FALLBACK_MAX_BODY
        try:
            length = announced_length(self.request.headers)
        except ValueError:
            return  # tornado answers 400 before any body
        if length is not None and length > self._limit:
            return self._refuse_unread(413, self._too_large_message())
        connection = self.request.connection
        drained = self._limit + LINGER_BYTES  # past it, a chunked body ends the connection
        if isinstance(connection, HTTP1Connection) and drained < connection._max_body_size:
            connection.set_max_body_size(drained)

    def data_received(self, chunk: bytes) -> None:
        if self._too_large:
            return  # dropped: the answer is a 413
        self._size += len(chunk)
        if self._size > self._limit:
            self._too_large = True
            self._chunks.clear()
        else:
            self._chunks.append(chunk)

    @web.authenticated
    @authorized("execute", resource=RESOURCE)  # type: ignore[untyped-decorator]  # unannotated
    async def get(self, name: str) -> None:
        await self._relay(name)

    @web.authenticated
    @authorized("execute", resource=RESOURCE)  # type: ignore[untyped-decorator]  # unannotated
    async def post(self, name: str) -> None:
        await self._relay(name)

    @web.authenticated
    @authorized("execute", resource=RESOURCE)  # type: ignore[untyped-decorator]  # unannotated
    async def delete(self, name: str) -> None:
        await self._relay(name)

    def _too_large_message(self) -> str:
        return f"Payload Too Large: the limit is {self._limit} bytes"

    def _refuse(self, status: int, message: str) -> None:
        """Our own answer (the kernel was not reached), as the kernel's endpoint would
        shape it: a JSON-RPC error to the request's id when it has a readable one."""
        self.set_status(status)
        error = jsonrpc.error_response(_request_id(self._body), RpcError(INVALID_REQUEST, message))
        self.finish(jsonrpc.dumps(error))

    def _refuse_unread(self, status: int, message: str) -> None:
        """Answer before the body is read, then drain it (bounded) and close: closing with
        the body unread would reset the connection, and the client lose the answer."""
        body = error_body(INVALID_REQUEST, message)
        cors = [(n, v) for n, v in self._headers.get_all() if n.startswith("Access-Control-")]
        self.log.info(
            "mcp_notebook: %s %s: %d %s", self.request.method, self.request.path, status, message
        )
        answer_and_close(self.detach(), close_response(status, body, cors))

    async def _relay(self, name: str) -> None:
        self._body, self._chunks = b"".join(self._chunks), []
        if self._too_large:
            return self._refuse(413, self._too_large_message())
        if TRACING is None or self.request.method != "POST":
            return await self._relay_body(name)
        # Jupyter Server is traced: a span of the relay's own, the kernel's span its child.
        with TRACING.relayed(self._body, self.request.headers) as self._body:
            return await self._relay_body(name)

    async def _relay_body(self, name: str) -> None:
        record = self._record
        if record is None:
            return self._refuse(404, f"Not Found: no running notebook server named {name!r}")
        for attempt in (1, 2):
            try:
                exchange = Exchange(Target.of(record.url, record.token, record.idle_timeout))
            except UpstreamError as exc:
                return self._refuse(502, f"Bad Gateway: {exc}")
            self._exchange = exchange
            headers = request_headers(
                self.request.headers, relay_headers(record, self.current_user)
            )
            try:
                # No query string: the endpoint takes none, and Jupyter's ?token= stays here.
                await exchange.run(self.request.method or "GET", headers, self._body, self)
            except Unreachable as exc:
                # Nothing was sent. The server may have restarted elsewhere, or stopped:
                # look again, and go there once.
                RECORDS.forget(name)
                POOL.drop(exchange.target.key)
                try:
                    fresh = lookup(name)
                except discovery.NotFound:
                    return self._refuse(
                        404, f"Not Found: no running notebook server named {name!r}"
                    )
                moved = (fresh.url, fresh.token) != (record.url, record.token)
                if attempt == 1 and moved and not self._client_gone():
                    record = fresh
                    continue
                return self._refuse(502, f"Bad Gateway: {exc}")
            except UpstreamError as exc:
                return self._refuse(502, f"Bad Gateway: {exc}")
            except (iostream.StreamClosedError, httputil.HTTPInputError) as exc:
                if self._client_gone():
                    return None  # the client left: nothing to answer
                if not self._headers_written:
                    return self._refuse(502, f"Bad Gateway: the kernel's server closed: {exc}")
                logger.debug("mcp_notebook: the kernel's stream of %s ended: %s", name, exc)
            break
        if self._kernel_refused:
            RECORDS.forget(name)  # its server restarted with a new token: look again next time
            return self._refuse(502, "Bad Gateway: the kernel's server refused the relay's token")
        if not self._finished:
            self.finish(set_content_type=self._headers.get("Content-Type", "application/json"))

    def _client_gone(self) -> bool:
        closed: bool = self.request.connection.stream.closed()  # type: ignore[union-attr]
        return closed

    # -- relay.Sink: the kernel's response, passed on as it arrives -----------------------
    def start(self, status: int, reason: str, headers: httputil.HTTPHeaders) -> None:
        if status == 401:
            # The kernel refused the relay's own token (its server restarted with a new
            # one): the client's credentials were fine, so it gets no challenge, a 502.
            self._kernel_refused = True
            return
        self.set_status(status, reason)
        for header, value in response_headers(headers):
            self.set_header(header, value)
        self.set_header("Access-Control-Expose-Headers", EXPOSED)
        self._streaming = headers.get("Content-Type", "").startswith(SSE)
        if self._streaming:
            self.set_header("X-Accel-Buffering", "no")  # nginx in front: pass events on
            self.flush()  # the client learns at once that its stream is open

    def chunk(self, data: bytes) -> Any:
        if self._kernel_refused:
            return None
        self.write(data)
        return self.flush() if self._streaming else None

    @allow_unauthenticated
    def options(self, *args: Any, **kwargs: Any) -> None:
        """A CORS preflight: Jupyter's answer, plus the MCP request headers a browser
        client asks to send (Jupyter's own list names only its API's headers)."""
        super().options(*args, **kwargs)
        asked = self.request.headers.get("Access-Control-Request-Headers", "").split(",")
        mcp = [h.strip() for h in asked if _passed(h.strip().lower())]
        allowed = self._headers.get("Access-Control-Allow-Headers", "")
        self.set_header("Access-Control-Allow-Headers", ", ".join([allowed, *mcp]).strip(", "))
        self.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")

    def on_connection_close(self) -> None:
        if self._exchange is not None:
            self._exchange.close()
        super().on_connection_close()
