"""Faults around calls: ``%mcp stop`` in the middle of things, clients gone mid-call.

Already covered elsewhere: a handshake client that hangs up on a running call
(``test_http_direct``), a 2026-07-28 client that hangs up on a running async call
(``test_http_modern``) or on a call queued behind a cell (``test_http_direct``). Here: the
rest of the grid, and stopping the server with calls running and streams open.
"""

from __future__ import annotations

import http.client
import json
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_modern import Modern
from tests.kernel.test_http_raw import ACCEPT_BOTH, Endpoint, assert_healthy, wait_for_output
from tests.kernels import Kernel
from tests.sources import ADD_BARE
from tests.waiting import wait_until

SETUP = (
    '''
import asyncio, time
from pathlib import Path

cancelled = []
ran = []

@mcp.tool
async def waiter(mark: str) -> str:
    """Awaits ten minutes; notes a cancellation."""
    Path(mark).touch()
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        cancelled.append(mark)
        raise
    return "waited"

@mcp.tool
def nap(mark: str, seconds: float) -> str:
    Path(mark).touch()
    time.sleep(seconds)
    ran.append(mark)
    return "rested"

'''
    + ADD_BARE
)
BUSY_CELL = """
print("started", flush=True)
time.sleep(2)
"""
FINAL = {"done", "error", "denied", "cancelled", "interrupted"}


@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


def read_to_the_end(response: http.client.HTTPResponse) -> bytes:
    """What is left of a response until the server ends it (a socket timeout: a hang)."""
    try:
        return response.read()
    except (ConnectionResetError, http.client.IncompleteRead) as gone:
        return getattr(gone, "partial", b"")


def server_threads(kernel: Kernel) -> list[str]:
    return kernel.eval(
        "[t.name for t in __import__('threading').enumerate() if t.name.startswith('mcp')]"
    )


def test_stop_with_calls_running_and_streams_open_ends_them_all(
    ep: Endpoint, tmp_path: Path
) -> None:
    kernel = ep.kernel
    modern = Modern(ep.url, ep.token)
    session = ep.open_session()
    opened: list[http.client.HTTPConnection] = []

    def open_request(method: str, body: dict | None, headers: dict) -> http.client.HTTPResponse:
        conn = ep.connect(timeout=30)
        opened.append(conn)
        conn.request(method, ep.path, json.dumps(body) if body else None, headers)
        return conn.getresponse()

    try:
        # A handshake session's GET stream, and a 2026-07-28 listen stream.
        stream = open_request("GET", None, ep.headers(session=session, accept="text/event-stream"))
        assert stream.status == 200
        listen_message = modern.message("subscriptions/listen", {"notifications": {}}, id=9)
        listen = open_request("POST", listen_message, modern.headers(listen_message))
        assert listen.status == 200
        # One async call of each era running on the kernel loop.
        handshake_mark, modern_mark = tmp_path / "handshake", tmp_path / "modern"
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
        call["params"] = {"name": "waiter", "arguments": {"mark": str(handshake_mark)}}
        modern_call = modern.message(
            "tools/call", {"name": "waiter", "arguments": {"mark": str(modern_mark)}}, id=6
        )
        with ThreadPoolExecutor(2) as pool:
            handshake_reply = pool.submit(
                open_request, "POST", call, ep.headers(session=session, accept=ACCEPT_BOTH)
            )
            modern_reply = pool.submit(
                open_request, "POST", modern_call, modern.headers(modern_call)
            )
            wait_until(handshake_mark.exists, "the handshake mark file")
            wait_until(modern_mark.exists, "the modern mark file")
            kernel.run("%mcp stop")
            # Every client hears the end: a reply or a closed connection, no hang.
            for pending in (handshake_reply, modern_reply):
                try:
                    response = pending.result(timeout=30)
                except (ConnectionError, http.client.RemoteDisconnected):
                    continue
                read_to_the_end(response)
        read_to_the_end(stream)
        read_to_the_end(listen)
    finally:
        for conn in opened:
            conn.close()
    assert server_threads(kernel) == []
    # The calls ended: cancelled in the kernel, not left to run for ten minutes.
    statuses = kernel.eval("[c.status for c in mcp.calls if c.target == 'waiter']")
    assert set(statuses) <= FINAL, statuses
    assert sorted(kernel.eval("cancelled")) == sorted([str(handshake_mark), str(modern_mark)])
    # ...and serving again works.
    kernel.run(f"%mcp start --port {ep.port}")
    assert_healthy(ep)


def test_a_handshake_client_gone_while_its_call_waits_for_a_cell(
    ep: Endpoint, tmp_path: Path, frontend, calls_feed
) -> None:
    """The handshake era does not cancel on a hang-up, but a call still queued whose client
    cannot resume its stream (it got no event id of it) has nobody to receive its reply:
    it is dropped before it starts, and the server carries on."""
    kernel = ep.kernel
    session = ep.open_session()
    busy = kernel.client.execute(BUSY_CELL)
    wait_for_output(kernel, busy, "started")
    mark = tmp_path / "queued"
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
    call["params"] = {"name": "nap", "arguments": {"mark": str(mark), "seconds": 0}}
    body = json.dumps(call).encode()
    raw = socket.create_connection((ep.host, ep.port), timeout=30)
    head = f"POST {ep.path} HTTP/1.1\r\nHost: {ep.host}:{ep.port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in ep.headers(session=session).items())
    raw.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    frontend.wait_for_call(calls_feed, "nap", "behind")  # queued behind the cell
    raw.close()
    assert kernel.client.get_shell_msg(timeout=30)["content"]["status"] == "ok"
    assert_healthy(ep)  # a cell after the call's turn: it has passed
    assert not mark.exists() and str(mark) not in kernel.eval("ran")
    assert kernel.eval(
        f"[c.status for c in mcp.calls if c.arguments.get('mark') == {str(mark)!r}]"
    ) == ["dropped: client gone"]


def test_a_2026_client_gone_while_a_sync_tool_runs(ep: Endpoint, tmp_path: Path) -> None:
    """Its hang-up cancels the call, and the sync tool is stopped where it runs (as
    Kernel > Interrupt would; before, it ran to its end); nobody is left waiting."""
    kernel = ep.kernel
    modern = Modern(ep.url, ep.token)
    mark = tmp_path / "running"
    message = modern.message(
        "tools/call", {"name": "nap", "arguments": {"mark": str(mark), "seconds": 30}}, id=4
    )
    body = json.dumps(message).encode()
    raw = socket.create_connection((modern.host, modern.port), timeout=30)
    head = f"POST {modern.path} HTTP/1.1\r\nHost: {modern.host}:{modern.port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in modern.headers(message).items())
    raw.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    wait_until(mark.exists, "the mark file")  # it runs now
    raw.close()
    assert_healthy(ep)  # the next cell runs once the tool's code left the main thread
    assert str(mark) not in kernel.eval("ran")  # stopped in its sleep, before its end
    status = kernel.eval(
        f"[c.status for c in mcp.calls if c.arguments.get('mark') == {str(mark)!r}]"
    )
    assert status == ["cancelled"]  # the client cancelled it (its hang-up)
