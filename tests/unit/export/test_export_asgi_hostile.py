"""The export's ASGI app (transports/asgi.py) as a hostile client meets it.

The app is meant for any ASGI server, and not every one checks what it passes on: these
call the app directly with what such a server would hand it, and one test goes through
uvicorn on loopback. Each bad request gets one precise HTTP status, never an exception
(a 500 and a traceback) or a request held for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import threading
import tracemalloc
from collections.abc import Sequence
from typing import Any

import pytest
import uvicorn

from mcp_notebook.export.runtime import exported_app, server_of
from mcp_notebook.transports.asgi import McpAsgiApp
from mcp_notebook.transports.settings import Limits
from tests.export.messages import INITIALIZE
from tests.waiting import until, wait_until

TOKEN = "hostile-test-token"
INIT = json.dumps(INITIALIZE).encode()


def make_app(limits: Limits | None = None) -> McpAsgiApp:
    app = exported_app("hostile", {})

    @app.tool
    def add(a: int) -> int:
        return a

    return McpAsgiApp(server_of(app, inline=True), token=TOKEN, limits=limits)


def post_scope(headers: Sequence[tuple[bytes, bytes]] = (), token: str = TOKEN) -> dict[str, Any]:
    """The ASGI scope of one POST to /mcp from loopback, with ``token`` and MCP's headers."""
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "client": ("127.0.0.1", 50000),
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            *headers,
        ],
    }


async def exchange(
    app: McpAsgiApp, headers: list[tuple[bytes, bytes]], chunks: list[bytes], more: bool = False
) -> tuple[int, dict[str, Any]]:
    """One POST through the app: its status and JSON body. ``more``: the body never ends."""
    scope = post_scope(headers)
    waiting = list(chunks)
    sent: list[dict[str, Any]] = []
    forever = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if waiting:
            return {
                "type": "http.request",
                "body": waiting.pop(0),
                "more_body": bool(waiting) or more,
            }
        await forever.wait()  # a client that sends nothing more, and stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), 30)
    (start,) = [m for m in sent if m["type"] == "http.response.start"]
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body)


@pytest.mark.parametrize(
    ("length", "status"),
    [
        ("\u00b2".encode("latin-1"), 400),  # str.isdigit() says yes; int() says no
        (b"\xb9\xb3", 400),
        (b"-5", 400),
        (b"0x10", 400),
        (b"1" * 5000, 413),  # past int()'s digit limit: a number, and far too large
        (b"99999999999999999999", 413),
    ],
)
async def test_an_odd_content_length_is_a_clear_status_not_an_exception(length, status):
    code, body = await exchange(make_app(), [(b"content-length", length)], [INIT])
    assert code == status
    assert body["error"]["code"] == -32600
    assert ("Content-Length" if status == 400 else "Payload Too Large") in body["error"]["message"]


async def test_an_honest_content_length_is_still_served():
    code, body = await exchange(make_app(), [(b"content-length", str(len(INIT)).encode())], [INIT])
    assert code == 200 and body["id"] == 1


async def test_a_body_that_never_ends_is_refused_with_408():
    app = make_app(Limits(body_timeout=0.2))
    code, body = await exchange(app, [], [INIT[:10]], more=True)
    assert code == 408
    assert "did not arrive within 0.2 s" in body["error"]["message"]


def test_a_trickling_body_through_uvicorn_gets_408_and_the_server_keeps_serving():
    app = make_app(Limits(body_timeout=0.5))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, "uvicorn listening")
        port = server.servers[0].sockets[0].getsockname()[1]
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(f"{head}Content-Length: {len(INIT)}\r\n\r\n".encode() + INIT[:5])
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = slow.recv(65536)
                assert chunk, "the connection closed without a response"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as good:
            good.sendall(f"{head}Content-Length: {len(INIT)}\r\n\r\n".encode() + INIT)
            answer = b""
            while b'"result"' not in answer:
                chunk = good.recv(65536)
                assert chunk, "no reply to a well-formed initialize"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(30)


async def test_requests_past_the_connection_cap_are_refused_at_once_with_503():
    app = make_app(Limits(max_connections=2, body_timeout=60))
    held = [asyncio.ensure_future(exchange(app, [], [INIT[:10]], more=True)) for _ in range(2)]
    await until(lambda: app._serving == 2, "two requests held open")
    code, body = await exchange(app, [], [INIT])
    assert code == 503 and body["error"]["code"] == -32000
    assert "2 requests are being served" in body["error"]["message"]
    for request in held:
        request.cancel()
    await asyncio.gather(*held, return_exceptions=True)
    assert app._serving == 0  # a request that ends, however it ends, frees its place
    code, body = await exchange(app, [], [INIT])
    assert code == 200 and body["id"] == 1


UNREAD = 30  # clients that never read their reply
REPLY = 3_900_000


def test_replies_nobody_reads_through_uvicorn_are_let_go():
    """30 clients that never read a 3.9 MB reply held +247 MiB under uvicorn, which keeps
    what it is handed until the client reads it. The app hands a reply over in pieces,
    each to be taken within ``write_timeout``; past that it gives up and the connection
    closes. Memory is what tracemalloc sees this process hold."""
    app = exported_app("unread", {})
    app.calls.max_bytes = 2 * 1024 * 1024  # the history would keep 1 MiB of each reply
    ran: list[str] = []

    @app.tool
    def blob(seed: str) -> str:
        ran.append(seed)
        return seed * (REPLY // len(seed))

    asgi = McpAsgiApp(server_of(app, inline=True), token=TOKEN, limits=Limits(write_timeout=1))
    config = uvicorn.Config(asgi, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    unread: list[socket.socket] = []
    tracemalloc.start()
    try:
        wait_until(lambda: server.started, "uvicorn listening")
        port = server.servers[0].sockets[0].getsockname()[1]
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
        )
        with socket.create_connection(("127.0.0.1", port), timeout=30) as first:
            first.sendall(f"{head}Content-Length: {len(INIT)}\r\n\r\n".encode() + INIT)
            answer = b""
            while b'"result"' not in answer:
                answer += first.recv(65536)
        session = answer.split(b"mcp-session-id: ")[1].split(b"\r\n")[0].decode()
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        for n in range(UNREAD):
            call = {"jsonrpc": "2.0", "id": n, "method": "tools/call"}
            call["params"] = {"name": "blob", "arguments": {"seed": f"{n:03}"}}
            body = json.dumps(call).encode()
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", port))
            unread.append(sock)
            sock.sendall(
                f"{head}Mcp-Session-Id: {session}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        wait_until(lambda: len(ran) == UNREAD, "every call ran")

        def held() -> int:
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before

        wait_until(lambda: held() < 16 * 1024 * 1024, "the unread replies are let go")
        for sock in unread:  # each was closed, its reply cut short
            sock.settimeout(30)
            got = 0
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(1 << 20):
                    got += len(chunk)
            assert got < REPLY
    finally:
        tracemalloc.stop()
        for sock in unread:
            sock.close()
        server.should_exit = True
        thread.join(30)
