"""Handshake-era calls whose clients hung up before they started do not hold live clients up.

A cell holds the kernel while raw HTTP clients call a tool and then close their
connections without cancelling (no ``notifications/cancelled``, no DELETE): nothing can
receive those replies (the client never got an event id to resume from), so the calls
are dropped before they start, and the monitor says so. A live client's call queued
behind them runs as soon as the cell ends. The test learns that calls are queued from
the monitor (its rows say "queued behind cell [n]"), which the server updates by itself.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_raw import Endpoint
from tests.kernel.test_queued_calls import HeldKernel

SETUP = """
ran = []

@mcp.tool
def note(n: int) -> int:
    '''Remember that it ran.'''
    ran.append(n)
    return n
"""
ABANDONED = 20
DROPPED = "dropped: client gone"


@pytest.fixture(scope="module")
def served(kernel, frontend):
    return start_server(kernel, SETUP, "%mcp start --port 0 --name abandoned-calls")


@pytest.fixture(scope="module")
def table(served, frontend):
    """The call table of a monitor opened with %mcp monitor."""
    return frontend.children(frontend.open_monitor(served.kernel))[4]


def post_and_keep_open(ep: Endpoint, session: str, request_id: int, n: int) -> socket.socket:
    """A tools/call sent on a raw socket; its response is not read."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "note", "arguments": {"n": n}},
        }
    ).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in ep.headers(session=session).items())
    sock = socket.create_connection((ep.host, ep.port), timeout=30)
    sock.sendall(
        f"POST {ep.path} HTTP/1.1\r\nHost: {ep.host}:{ep.port}\r\n{head}"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


async def test_calls_whose_clients_hung_up_are_dropped_before_they_run(
    served, frontend, table, tmp_path
):
    ep = Endpoint(served)
    sessions = [ep.open_session() for _ in range(ABANDONED)]
    held = HeldKernel(served.kernel, tmp_path)
    try:
        sockets = [
            post_and_keep_open(ep, session, 100 + n, n) for n, session in enumerate(sessions)
        ]
        queued = f"queued behind cell [{held.number}]"
        await frontend.until(
            lambda: sum(r.endswith(queued) for r in frontend.labels(table)) == ABANDONED
        )
        for sock in sockets:
            sock.close()  # hung up: no cancel, no DELETE; the sessions live on
        await frontend.until(
            lambda: sum(r.endswith(DROPPED) for r in frontend.labels(table)) == ABANDONED
        )
        live = post_and_keep_open(ep, sessions[0], 999, 999)
        await frontend.until(lambda: frontend.labels(table)[0].endswith(queued))
    finally:
        held.finish()
    with live:
        live.settimeout(30)
        answer = b""
        while b'"result"' not in answer and (chunk := live.recv(65536)):
            answer += chunk
    assert b"999" in answer and answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert served.kernel.eval("ran") == [999]  # none of the abandoned calls ran
    statuses = served.kernel.eval(f"[c.status for c in mcp.calls][-{ABANDONED + 1}:]")
    assert statuses == [DROPPED] * ABANDONED + ["done"]
    # The sessions are still there: a client that comes back can go on calling.
    assert ep.call_tool(sessions[1], "note", n=7)["content"][0]["text"] == "7"
