"""Answers written from the kernel thread: the connection lives on, nothing is lost.

A tools/call answered with JSON leaves from the kernel thread, on a connection the HTTP
thread lent it (see ``mcp_notebook/transports/direct.py``). These tests speak HTTP/1.1
with keep-alive, as real clients do, and check that every later request on the same
connection is served, that a response too big for the socket's buffer arrives whole, and
that cancellations and clients that hang up leave the server healthy.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_modern import MODERN, Modern
from tests.kernel.test_http_raw import (
    BUSY_CELL,
    Endpoint,
    assert_healthy,
    ping_message,
    wait_for_output,
)
from tests.kernels import Kernel
from tests.schema import validate_reply
from tests.sources import ADD_BARE
from tests.waiting import wait_until

SETUP = (
    """
import hashlib, time

"""
    + ADD_BARE
    + """
@mcp.tool
def big(megabytes: int) -> str:
    return "x" * (megabytes * 1024 * 1024)

@mcp.tool
def nap(seconds: float) -> str:
    time.sleep(seconds)
    return "rested"

@mcp.tool
def nap_after_mark(mark: str, seconds: float) -> str:
    open(mark, "w").close()
    time.sleep(seconds)
    return "rested"
"""
)


@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


class KeptAlive:
    """One HTTP/1.1 keep-alive connection inside one MCP session."""

    def __init__(self, ep: Endpoint, session: str, timeout: float = 30) -> None:
        self.ep, self.session = ep, session
        self.conn = ep.connect(timeout)
        self.conn.connect()
        self.socket = self.conn.sock

    def post(self, message: dict[str, Any]) -> http.client.HTTPResponse:
        body = json.dumps(message).encode()
        self.conn.request("POST", self.ep.path, body, self.ep.headers(session=self.session))
        return self.conn.getresponse()

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = self.ep.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message)
        body = response.read()
        assert response.status == 200, (response.status, body[:200])
        assert response.getheader("Content-Type") == "application/json"
        assert int(response.getheader("Content-Length")) == len(body)
        reply = json.loads(body)
        assert reply["id"] == request_id
        return validate_reply(method, reply)

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        reply = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        assert reply["result"]["isError"] is False, reply
        return reply["result"]

    def still_the_same_connection(self) -> bool:
        return self.conn.sock is self.socket and self.socket.fileno() != -1

    def close(self) -> None:
        self.conn.close()


def test_one_connection_serves_calls_and_control_requests_in_turn(ep: Endpoint) -> None:
    client = KeptAlive(ep, ep.open_session())
    try:
        for n in range(30):
            assert client.call("add", a=n, b=1)["structuredContent"] == {"result": n + 1}
            assert client.rpc("ping")["result"] == {}
        assert {t["name"] for t in client.rpc("tools/list")["result"]["tools"]} >= {"add", "big"}
        # A tool error and an unknown tool on the same connection, then a call again.
        failed = client.rpc("tools/call", {"name": "add", "arguments": {"a": "two", "b": 3}})
        assert failed["result"]["isError"] is True
        unknown = client.rpc("tools/call", {"name": "nope", "arguments": {}})
        assert unknown["error"]["code"] == -32602
        assert client.call("add", a=2, b=3)["content"][0]["text"] == "5"
        assert client.still_the_same_connection(), "the server closed a kept-alive connection"
    finally:
        client.close()


def test_call_answers_are_written_by_the_kernel_thread(ep: Endpoint) -> None:
    # Tornado stamps what it writes with its Server header; the kernel thread does not.
    client = KeptAlive(ep, ep.open_session())
    try:
        params = {"name": "add", "arguments": {"a": 1, "b": 2}}
        response = client.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        )
        assert response.status == 200 and json.loads(response.read())["id"] == 1
        assert response.getheader("Server") is None
        assert response.getheader("Date")
        response = client.post({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert response.status == 200 and json.loads(response.read())["id"] == 2
        assert response.getheader("Server", "").startswith("TornadoServer")
    finally:
        client.close()


def test_chunked_and_sized_bodies_alternate_on_one_connection(ep: Endpoint) -> None:
    # Bodies of unknown size (chunked) are read by a streaming handler, the others whole:
    # both answer calls early and hand the connection back.
    client = KeptAlive(ep, ep.open_session())
    try:
        for n in range(3):
            message = {"jsonrpc": "2.0", "id": n, "method": "tools/call"}
            message["params"] = {"name": "add", "arguments": {"a": n, "b": 10}}
            body = json.dumps(message).encode()
            headers = ep.headers(session=client.session)
            client.conn.request("POST", ep.path, iter([body]), headers)  # chunked
            response = client.conn.getresponse()
            reply = validate_reply("tools/call", json.loads(response.read()))
            assert reply["result"]["structuredContent"] == {"result": n + 10}
            assert client.call("add", a=n, b=20)["structuredContent"] == {"result": n + 20}
        assert client.still_the_same_connection()
    finally:
        client.close()


def test_a_result_bigger_than_the_socket_buffer_arrives_whole(ep: Endpoint) -> None:
    client = KeptAlive(ep, ep.open_session())
    try:
        sent = client.call("big", megabytes=24)["content"][0]["text"]
        assert len(sent) == 24 * 1024 * 1024
        assert hashlib.sha256(sent.encode()).digest() == hashlib.sha256(b"x" * len(sent)).digest()
        assert client.call("add", a=1, b=1)["content"][0]["text"] == "2"
        assert client.still_the_same_connection()
    finally:
        client.close()


def test_a_client_that_hangs_up_mid_call_leaves_the_server_healthy(
    ep: Endpoint, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    session = ep.open_session()
    client = KeptAlive(ep, session)
    request = {"name": "nap_after_mark", "arguments": {"mark": str(started), "seconds": 0.5}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": request})
    client.conn.request("POST", ep.path, body, ep.headers(session=session))
    wait_until(started.exists, "the tool to start")  # the tool runs now
    client.socket.shutdown(socket.SHUT_RDWR)
    client.close()
    # The tool ends and answers a client that is gone; the kernel is free again after it.
    status = ep.kernel.eval("[c.status for c in mcp.calls if c.target == 'nap_after_mark'][-1]")
    assert status == "done"
    assert_healthy(ep)


def test_a_call_cancelled_while_it_waits_gets_202_and_the_connection_goes_on(
    ep: Endpoint, frontend, calls_feed
) -> None:
    session = ep.open_session()
    client = KeptAlive(ep, session)
    try:
        busy = ep.kernel.client.execute(BUSY_CELL)
        wait_for_output(ep.kernel, busy, "started")  # user code must wait for the cell
        request_id = ep.next_id()
        params = {"name": "nap", "arguments": {"seconds": 0}}
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        client.conn.request("POST", ep.path, json.dumps(message), ep.headers(session=session))
        frontend.wait_for_call(calls_feed, "nap", "behind")  # queued behind the cell
        cancel = {"method": "notifications/cancelled", "params": {"requestId": request_id}}
        assert ep.post({"jsonrpc": "2.0", **cancel}, session=session).status == 202
        response = client.conn.getresponse()
        assert (response.status, response.read()) == (202, b"")
        assert ep.kernel.client.get_shell_msg(timeout=30)["content"]["status"] == "ok"
        assert client.rpc("ping")["result"] == {}
        assert client.call("add", a=4, b=5)["content"][0]["text"] == "9"
        assert client.still_the_same_connection()
        status = ep.kernel.eval("[c.status for c in mcp.calls if c.target == 'nap'][-1]")
        assert status == "cancelled"
    finally:
        client.close()


def test_http_1_0_and_connection_close_requests_are_answered_and_closed(ep: Endpoint) -> None:
    session = ep.open_session()
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    call["params"] = {"name": "add", "arguments": {"a": 1, "b": 2}}
    for request_line, extra in (
        ("POST {} HTTP/1.0", ""),
        ("POST {} HTTP/1.1", "Connection: close\r\n"),
        ("POST {} HTTP/1.1", "Connection: Close\r\n"),  # header values are case-blind
    ):
        body = json.dumps(call).encode()
        headers = ep.headers(session=session)
        head = request_line.format(ep.path) + "\r\n" + f"Host: {ep.host}:{ep.port}\r\n" + extra
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        with socket.create_connection((ep.host, ep.port), timeout=30) as raw:
            raw.sendall(head.encode() + body)
            received = b""
            while chunk := raw.recv(65536):  # the server closes: recv ends
                received += chunk
        status_line, _, rest = received.partition(b"\r\n")
        assert status_line.split()[1] == b"200", received[:200]
        reply = json.loads(rest.partition(b"\r\n\r\n")[2])
        assert validate_reply("tools/call", reply)["result"]["content"][0]["text"] == "3"
    assert ep.post(ping_message(), session=session).status == 200


# -- 2026-07-28: no session; closing the connection cancels -----------------------------
def modern_call(modern: Modern, tool: str, request_id: int, **arguments: Any) -> dict:
    return modern.message("tools/call", {"name": tool, "arguments": arguments}, id=request_id)


def test_modern_calls_share_a_kept_alive_connection(ep: Endpoint) -> None:
    modern = Modern(ep.url, ep.token)
    conn = http.client.HTTPConnection(modern.host, modern.port, timeout=30)
    conn.connect()
    first_socket = conn.sock
    try:
        for n in range(10):
            message = modern_call(modern, "add", n, a=n, b=n)
            conn.request("POST", modern.path, json.dumps(message), modern.headers(message))
            response = conn.getresponse()
            assert response.status == 200
            assert response.getheader("Content-Type") == "application/json"
            reply = validate_reply("tools/call", json.loads(response.read()), MODERN)
            assert reply["id"] == n
            assert reply["result"]["structuredContent"] == {"result": 2 * n}
            assert reply["result"]["resultType"] == "complete"
        assert conn.sock is first_socket
    finally:
        conn.close()


def test_modern_hang_up_cancels_a_call_that_waits_for_the_kernel(
    ep: Endpoint, frontend, calls_feed
) -> None:
    ep.kernel.run("napped = []")
    ep.kernel.run(
        "@mcp.tool\ndef nap_noted(seconds: float) -> str:\n"
        "    napped.append(seconds)\n    return 'rested'\n"
    )
    modern = Modern(ep.url, ep.token)
    busy = ep.kernel.client.execute(BUSY_CELL)
    wait_for_output(ep.kernel, busy, "started")  # user code must wait for the cell
    message = modern_call(modern, "nap_noted", 1, seconds=0)
    raw = socket.create_connection((modern.host, modern.port), timeout=30)
    body = json.dumps(message)
    head = f"POST {modern.path} HTTP/1.1\r\nHost: {modern.host}:{modern.port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in modern.headers(message).items())
    raw.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n{body}".encode())
    frontend.wait_for_call(calls_feed, "nap_noted", "behind")  # queued behind the cell
    raw.close()  # 2026-07-28's way to cancel
    assert ep.kernel.client.get_shell_msg(timeout=30)["content"]["status"] == "ok"
    # A barrier: calls run on the kernel thread in the order they came, so once a later
    # call has answered, the cancelled one has run already if it was going to.
    assert_healthy(ep)
    assert ep.kernel.eval("napped") == []  # it never ran
    status = ep.kernel.eval("[c.status for c in mcp.calls if c.target == 'nap_noted'][-1]")
    assert status == "cancelled"
