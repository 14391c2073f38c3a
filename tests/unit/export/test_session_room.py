"""The export's ASGI app keeps room for new sessions as the kernel's server does
(transports/admission.py): through uvicorn, from real sockets bound to 127.0.0.2..10."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
import uvicorn

from mcp_notebook.export.runtime import exported_app, server_of
from mcp_notebook.transports.asgi import McpAsgiApp
from mcp_notebook.transports.settings import Limits
from tests.unit.transports.test_http_limits import TOKEN, Client, flood_from_loopback_range
from tests.waiting import wait_until


@contextlib.contextmanager
def served(limits: Limits) -> Iterator[tuple[McpAsgiApp, int]]:
    app = exported_app("room", {})

    @app.tool
    def hold() -> str:
        return "held"

    asgi = McpAsgiApp(server_of(app, inline=True), token=TOKEN, limits=limits)
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, "uvicorn listening")
        yield asgi, server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture
def full_table() -> Iterator[tuple[McpAsgiApp, int]]:
    with served(Limits(max_sessions=20, session_burst=30, session_rate=0.001)) as app_port:
        yield app_port


def test_one_process_filling_the_exports_table_from_many_loopback_addresses_leaves_room(
    full_table: tuple[McpAsgiApp, int],
) -> None:
    app, port = full_table
    flooders = flood_from_loopback_range(port, per_address=3)  # 27 for a table of 20
    newcomer = Client(port)
    try:
        status, _, body = newcomer.initialize()
        assert status == 200, body
        assert newcomer.call("tools/list")["result"]["tools"][0]["name"] == "hold"
        assert len(app.sessions) == 20
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        gone = [flooder for flooder in flooders if flooder.post(ping)[0] == 404]
        assert gone == flooders[: 27 + 1 - 20]  # the least recently used, told so
    finally:
        for client in (*flooders, newcomer):
            client.close()


def test_the_loopback_range_shares_one_allowance_in_the_export_too() -> None:
    with served(Limits(session_burst=9, session_rate=0.001)) as (app, port):
        flooders = flood_from_loopback_range(port, per_address=1)
        more = Client(port, source="127.0.0.11")
        try:
            status, headers, body = more.initialize()
            assert status == 429, body
            assert int(headers["Retry-After"]) >= 1
            assert len(app.sessions) == 9
        finally:
            for client in (*flooders, more):
                client.close()
