"""The two servers that apply the endpoint policy, made OAuth resource servers for a test:
tornado's ``HttpTransport`` (a kernel, ``mcp-notebook serve``) and the export's ASGI app
under uvicorn. Each serves two tools and counts their runs (a refused request runs none).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from mcp_notebook.auth.config import AuthConfig
from mcp_notebook.export.runtime import exported_app, server_of
from mcp_notebook.protocol import Server
from mcp_notebook.protocol.context import Context
from mcp_notebook.transports.asgi import McpAsgiApp
from mcp_notebook.transports.http import HttpTransport
from mcp_notebook.transports.security import Guard
from tests.waiting import wait_until

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass
class Served:
    kind: str
    url: str  # the MCP endpoint, which is the audience by default
    server: Server
    guard: Guard
    runs: list[str] = field(default_factory=list)  # tools run, in order
    seen: list[Any] = field(default_factory=list)  # the callers the tools saw (ctx.caller)
    # One client for the test: a new httpx client per request costs an SSL context each.
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    @property
    def base(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]

    def modern(
        self, token: str, method: str, params: dict[str, Any], name: str | None = None
    ) -> httpx.Response:
        """Any 2026-07-28 request, its client declaring the tasks extension."""
        meta = {**META, "io.modelcontextprotocol/clientCapabilities": TASKS}
        message = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": method,
            "params": {**params, "_meta": meta},
        }
        sent = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
            "Authorization": f"Bearer {token}",
        }
        if name is not None:
            sent["Mcp-Name"] = name
        return self.http.post(self.url, json=message, headers=sent)

    def call(
        self,
        token: str | None,
        tool: str = "add",
        *,
        headers: dict[str, str] | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """A 2026-07-28 ``tools/call`` (no session to open first) with ``token``."""
        given = {"a": 2} if arguments is None else arguments
        message = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": tool, "arguments": given, "_meta": META},
        }
        sent = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
            **(headers or {}),
        }
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return self.http.post(self.url, json=message, headers=sent)


def make_app(served: dict[str, Any]) -> Any:
    app = exported_app("oauth-cases", {})

    @app.tool
    def add(a: int, b: int = 1) -> int:
        served["runs"].append("add")
        return a + b

    @app.tool(scopes=["files:write"])
    def write(a: int) -> str:
        served["runs"].append("write")
        return "written"

    @app.tool(task="required")
    def report(a: int) -> str:
        served["runs"].append("report")
        return f"report {a}"

    @app.tool
    def whoami(ctx: Context, a: int = 0) -> dict[str, Any]:
        served["runs"].append("whoami")
        served["seen"].append(ctx.caller)
        caller = ctx.caller
        if caller is None:
            return {"caller": None}
        return {
            "subject": caller.subject,
            "client_id": caller.client_id,
            "scopes": sorted(caller.scopes),
            "issuer": caller.issuer,
            "expires": caller.expires,
        }

    return app


@contextlib.contextmanager
def tornado(config: AuthConfig) -> Iterator[Served]:
    box: dict[str, Any] = {"runs": [], "seen": []}
    server = server_of(make_app(box), inline=True)
    transport = HttpTransport(server, auth=config)
    transport.start()
    try:
        yield Served("tornado", transport.url, server, transport.guard, box["runs"], box["seen"])
    finally:
        transport.stop()


@contextlib.contextmanager
def asgi(config: AuthConfig) -> Iterator[Served]:
    box: dict[str, Any] = {"runs": [], "seen": []}
    server = server_of(make_app(box), inline=True)
    app = McpAsgiApp(server, token=None, auth=config)
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: uv.started, "uvicorn listening")
        port = uv.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        yield Served("asgi", url, server, app.guard, box["runs"], box["seen"])
    finally:
        uv.should_exit = True
        thread.join(10)


SERVERS = {"tornado": tornado, "asgi": asgi}


def config_for(issuer: Any, **changes: Any) -> AuthConfig:
    """A resource server of ``issuer``'s tokens needing scope "mcp", with short fetch
    bounds so that a hanging issuer is a quick test."""
    base = AuthConfig(issuer=issuer.url, scopes=("mcp",), fetch_timeout=1.0)
    return dataclasses.replace(base, **changes)
