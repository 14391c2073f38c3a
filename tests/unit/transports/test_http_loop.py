"""The event loop of the HTTP server's thread: uvloop where it is installed (its loop turns,
callbacks and tasks cost less per request), asyncio's with MCP_NOTEBOOK_HTTP_LOOP=asyncio.

In process: the transport on its own thread, the tool on a "kernel" thread's loop, as in a
kernel; a real client's tools/call is answered on either loop, the early reply included.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import sys
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.transports.http import LOOP_VARIABLE, HttpTransport
from tests.messages import initialize_message

PROTOCOL = "2025-11-25"


def serve_a_call(kernel_loop: asyncio.AbstractEventLoop) -> tuple[type, str]:
    """Start a transport, call ``add`` over HTTP; its loop's type and the call's text."""
    mcp = NotebookMCP()

    @mcp.tool
    def add(a: int, b: int) -> int:
        return a + b

    served = HttpTransport(Server(mcp.registry, executor=LoopExecutor(kernel_loop)))
    served.start()
    try:
        assert served.loop is not None and served.port is not None
        loop_type = type(served.loop)
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=20)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}

        def post(message: dict[str, Any]) -> http.client.HTTPResponse:
            conn.request("POST", "/mcp", json.dumps(message), headers)
            return conn.getresponse()

        response = post(initialize_message(1))
        response.read()
        headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id") or ""
        headers["MCP-Protocol-Version"] = PROTOCOL
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}).read()
        texts = []
        for request_id in (2, 3):  # the second on the connection the first one lent
            params = {"name": "add", "arguments": {"a": 2, "b": request_id}}
            message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
            reply = json.loads(post({**message, "params": params}).read())
            texts.append(reply["result"]["content"][0]["text"])
        conn.close()
        return loop_type, ",".join(texts)
    finally:
        served.stop()


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_the_server_thread_runs_uvloop_where_it_is_installed(
    kernel_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvloop  # the test extra installs it (as [speed] does) where it exists

    monkeypatch.delenv(LOOP_VARIABLE, raising=False)
    loop_type, texts = serve_a_call(kernel_loop)
    assert issubclass(loop_type, uvloop.Loop)
    assert texts == "4,5"


def test_asyncio_loop_on_request(
    kernel_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOOP_VARIABLE, "asyncio")
    loop_type, texts = serve_a_call(kernel_loop)
    assert issubclass(loop_type, asyncio.BaseEventLoop)  # asyncio's own, not uvloop's
    assert texts == "4,5"
