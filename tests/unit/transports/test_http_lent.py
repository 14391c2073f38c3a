"""Stopping the HTTP transport while connections are lent to calls (transports/direct.py).

In process: the transport on its own thread, user code on a "kernel" thread's loop, as in
a kernel. A connection lent to a call is not tornado's any more, so stopping must close
it itself: the client sees the connection end, on both protocol eras, not a hang.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.transports.http import HttpTransport
from tests.messages import initialize_message

MODERN = "2026-07-28"
started = threading.Event()


@pytest.fixture
def transport(kernel_loop: asyncio.AbstractEventLoop) -> Iterator[HttpTransport]:
    mcp = NotebookMCP()

    @mcp.tool
    async def forever() -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    served = HttpTransport(Server(mcp.registry, executor=LoopExecutor(kernel_loop)))
    served.start()
    yield served
    served.stop()


def post(port: int, message: dict[str, Any], headers: dict[str, str]) -> socket.socket:
    body = json.dumps(message)
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    head += "Accept: application/json, text/event-stream\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    raw.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n{body}".encode())
    return raw


def read_all(raw: socket.socket) -> bytes:
    received = b""
    while chunk := raw.recv(65536):
        received += chunk
    return received


def handshake_session(port: int) -> str:
    init = initialize_message(0)
    raw = post(port, init, {"Connection": "close"})
    head = read_all(raw).partition(b"\r\n\r\n")[0].decode()
    raw.close()
    return next(
        line.split(":", 1)[1].strip()
        for line in head.split("\r\n")
        if line.lower().startswith("mcp-session-id:")
    )


def modern_call() -> tuple[dict[str, Any], dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "forever", "arguments": {}, "_meta": meta}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "forever"}
    return message, headers


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_stopping_closes_connections_lent_to_calls(transport: HttpTransport, era: str) -> None:
    started.clear()
    port = transport.port
    assert port is not None
    if era == "modern":
        message, headers = modern_call()
    else:
        session = handshake_session(port)
        params = {"name": "forever", "arguments": {}}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    raw = post(port, message, headers)
    try:
        assert started.wait(10), "the tool never started"
        assert transport.lent, "the call's connection was not lent"
        transport.stop()
        assert read_all(raw) == b""  # closed: no answer is due, and no hang
        assert not transport.lent
    finally:
        raw.close()
