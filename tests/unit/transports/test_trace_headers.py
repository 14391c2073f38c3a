"""The HTTP ``traceparent`` / ``tracestate`` headers continue the client's trace, on the
tornado server (a kernel's, ``mcp-notebook serve``'s) and on an export's ASGI app, for a
client that puts no trace context in ``_meta``; ``_meta`` wins when both are there; a
malformed header starts a trace of its own and the call is served as always."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_notebook.export.runtime import exported_app, server_of
from mcp_notebook.protocol import Server
from mcp_notebook.protocol.telemetry import TracingSettings, apply
from mcp_notebook.transports import policy
from mcp_notebook.transports.asgi import McpAsgiApp
from mcp_notebook.transports.http import HttpTransport
from mcp_notebook.transports.security import Guard
from tests.conftest import MODES
from tests.waiting import wait_until

TOKEN = "trace-headers-token"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
META_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
META_SPAN = "b7ad6b7169203331"


def _server() -> Server:
    app = exported_app("traced", {})

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    return server_of(app, inline=True)


def _tornado(server: Server) -> Iterator[str]:
    transport = HttpTransport(server, token=TOKEN)
    transport.start()
    try:
        yield f"http://127.0.0.1:{transport.port}/mcp"
    finally:
        transport.stop()


def _asgi(server: Server) -> Iterator[str]:
    app = McpAsgiApp(server, token=TOKEN)
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: uv.started, "uvicorn listening")
        yield f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}/mcp"
    finally:
        uv.should_exit = True
        thread.join(10)


@dataclass
class Endpoint:
    url: str
    exported: InMemorySpanExporter

    def calls(self) -> list[ReadableSpan]:
        return [s for s in self.exported.get_finished_spans() if s.name == "tools/call add"]

    @asynccontextmanager
    async def client(self, mode: str, **headers: str) -> AsyncIterator[Client]:
        """The official SDK client; ``headers`` go with each of its HTTP requests."""
        sent = {"Authorization": f"Bearer {TOKEN}", **headers}
        async with (
            httpx2.AsyncClient(headers=sent, timeout=30) as http,
            Client(streamable_http_client(self.url, http_client=http), mode=mode) as client,
        ):
            yield client


@pytest.fixture(scope="module", params=["tornado", "asgi"])
def endpoint(request: pytest.FixtureRequest) -> Iterator[Endpoint]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    server = _server()
    assert apply(TracingSettings(True, provider), server)
    serving = (_tornado if request.param == "tornado" else _asgi)(server)
    yield Endpoint(next(serving), exported)
    serving.close()


async def _one_call(endpoint: Endpoint, mode: str, meta: Any = None, **headers: str) -> Any:
    endpoint.exported.clear()
    async with endpoint.client(mode, **headers) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3}, meta=meta)
    assert result.content[0].text == "5"
    (span,) = endpoint.calls()
    return span


@MODES
async def test_a_client_with_the_header_alone_continues_its_trace(
    endpoint: Endpoint, mode: str
) -> None:
    span = await _one_call(endpoint, mode, traceparent=TRACEPARENT, tracestate="vendor=blue")
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None and format(span.parent.span_id, "016x") == CLIENT_SPAN
    assert span.parent.is_remote
    assert span.parent.trace_state.get("vendor") == "blue"


async def test_the_trace_context_in_meta_wins_over_the_header(endpoint: Endpoint) -> None:
    meta = {"traceparent": f"00-{META_TRACE_ID}-{META_SPAN}-01"}
    span = await _one_call(endpoint, "legacy", meta, traceparent=TRACEPARENT)
    assert format(span.context.trace_id, "032x") == META_TRACE_ID
    assert span.parent is not None and format(span.parent.span_id, "016x") == META_SPAN


@pytest.mark.parametrize(
    "traceparent", ["garbage", f"00-{'0' * 32}-{CLIENT_SPAN}-01", f"{TRACEPARENT},{TRACEPARENT}"]
)
async def test_a_malformed_header_starts_a_trace_of_its_own(
    endpoint: Endpoint, traceparent: str
) -> None:
    span = await _one_call(endpoint, "legacy", traceparent=traceparent)
    assert span.parent is None
    assert format(span.context.trace_id, "032x") not in (TRACE_ID, "0" * 32)


def test_an_untraced_server_hands_no_header_to_the_core() -> None:
    server = _server()
    settings = policy.Settings(server, Guard(bind_host="127.0.0.1", token=None), 1 << 20)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}'
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    asked = policy.HttpRequest("POST", {**headers, "traceparent": TRACEPARENT}, body)

    class NoSessions:
        def find(self, session_id: str) -> None:
            return None

        def touch(self, session_id: str) -> None:
            pass

        def refuse_session(self, client: str) -> None:
            return None

    assert policy.decide(asked, NoSessions(), settings).trace is None
    server.traced = True
    assert policy.decide(asked, NoSessions(), settings).trace == {"traceparent": TRACEPARENT}
