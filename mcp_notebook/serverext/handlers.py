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

from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.base.handlers import APIHandler
from tornado import httputil, iostream, web

from .. import discovery
from ..protocol import jsonrpc
from ..protocol.jsonrpc import INVALID_REQUEST, RpcError
from ..reach import PREFIX, endpoint_path
from .identity import relay_headers
from .relay import (
    PASSED_PREFIX,
    PASSED_REQUEST,
    Exchange,
    Target,
    UpstreamError,
    request_headers,
    response_headers,
)

logger = logging.getLogger(__name__)

RESOURCE = "kernels"
SSE = "text/event-stream"
# What a page on another origin (one Jupyter lets in: allow_origin, or a token) must read.
EXPOSED = "Mcp-Session-Id, MCP-Protocol-Version"


def routes(base_url: str) -> list[tuple[str, type[web.RequestHandler]]]:
    return [
        (f"{base_url}{PREFIX}/api/servers", ServersHandler),
        (f"{base_url}{PREFIX}/([^/]+)/mcp", RelayHandler),
    ]


def _request_id(body: bytes) -> Any:
    """The id of the JSON-RPC request in ``body``, when it has a readable one."""
    try:
        message = json.loads(body) if body else None
    except ValueError:  # not JSON (or not UTF-8): the kernel would say so; we cannot
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, (str, int)) else None


def lookup(name: str) -> discovery.ServerRecord:
    """The running server called ``name``, else the one whose kernel id is ``name`` (two
    notebooks of the same file name, in two folders, have the same server name)."""
    try:
        return discovery.find(name)
    except discovery.NotFound:
        for record in discovery.running():
            if record.kernel_id == name:
                return record
        raise


def _passed(header: str) -> bool:
    return header in PASSED_REQUEST or header.startswith(PASSED_PREFIX)


class ServersHandler(APIHandler):
    """``GET mcp-notebook/api/servers``: the notebook servers this Jupyter Server relays to."""

    @web.authenticated
    @authorized("read", resource=RESOURCE)
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


class RelayHandler(APIHandler):
    """``mcp-notebook/<name>/mcp``: the MCP endpoint of the kernel server ``name``."""

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "OPTIONS")

    _exchange: Exchange | None = None
    _streaming = False
    _kernel_refused = False

    @web.authenticated
    @authorized("execute", resource=RESOURCE)
    async def get(self, name: str) -> None:
        await self._relay(name)

    @web.authenticated
    @authorized("execute", resource=RESOURCE)
    async def post(self, name: str) -> None:
        await self._relay(name)

    @web.authenticated
    @authorized("execute", resource=RESOURCE)
    async def delete(self, name: str) -> None:
        await self._relay(name)

    def _refuse(self, status: int, message: str) -> None:
        """Our own answer (the kernel was not reached), as the kernel's endpoint would
        shape it: a JSON-RPC error to the request's id when it has a readable one."""
        self.set_status(status)
        error = jsonrpc.error_response(
            _request_id(self.request.body), RpcError(INVALID_REQUEST, message)
        )
        self.finish(jsonrpc.dumps(error))

    async def _relay(self, name: str) -> None:
        try:
            record = lookup(name)
        except discovery.NotFound:
            return self._refuse(404, f"Not Found: no running notebook server named {name!r}")
        try:
            exchange = Exchange(Target.of(record.url, record.token))
        except UpstreamError as exc:
            return self._refuse(502, f"Bad Gateway: {exc}")
        self._exchange = exchange
        headers = request_headers(self.request.headers, relay_headers(record, self.current_user))
        try:
            # No query string: the endpoint takes none, and Jupyter's ?token= stays here.
            await exchange.run(self.request.method or "GET", headers, self.request.body, self)
        except UpstreamError as exc:
            return self._refuse(502, f"Bad Gateway: {exc}")
        except (iostream.StreamClosedError, httputil.HTTPInputError) as exc:
            if self.request.connection.stream.closed():  # type: ignore[union-attr]
                return None  # the client left: nothing to answer
            if not self._headers_written:
                return self._refuse(502, f"Bad Gateway: the kernel's server closed: {exc}")
            logger.debug("mcp_notebook: the kernel's stream of %s ended: %s", name, exc)
        if self._kernel_refused:
            return self._refuse(502, "Bad Gateway: the kernel's server refused the relay's token")
        if not self._finished:
            self.finish(set_content_type=self._headers.get("Content-Type", "application/json"))

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
