"""What a client with the token sends does not stay in the kernel's memory.

A real kernel serves over HTTP; a raw client sends requests as large as a body may be
(4 MiB). The kernel's resident size is read from outside (tests/portable.py), without
running its garbage collector or trimming its allocator: what a person would see.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_raw import LIMIT, Endpoint, initialize_message
from tests.portable import rss
from tests.waiting import wait_until

SETUP = '''
@mcp.tool
def double(n: int) -> int:
    """Twice n."""
    return 2 * n

@mcp.tool
def blob(seed: str) -> str:
    """A reply of about 12 MB (distinct each time: nothing is shared between calls)."""
    blobs.append(seed)
    return seed * (12_000_000 // len(seed))

blobs = []

def held_rss():
    """Resident bytes that something holds: freed memory the allocator keeps goes back
    first (glibc keeps freed large blocks in its arenas, up to ~200 MB here)."""
    import ctypes, gc, psutil
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the bound is generous anyway
        pass
    return psutil.Process().memory_info().rss

@mcp.resource_template("notes://{day}", name="notes")
def notes(day: str) -> str:
    return day
'''
MIB = 1024 * 1024
GROWTH = 48 * MIB  # what the kernel may grow by in each test (measured: under 20 MiB)
BIG = LIMIT - 64 * 1024  # a value as large as a request may carry


@pytest.fixture(scope="module")
def ep(kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


@pytest.fixture(scope="module")
def session(ep: Endpoint) -> str:
    return ep.open_session()


@pytest.fixture(scope="module")
def pid(ep: Endpoint) -> int:
    return ep.kernel.eval("__import__('os').getpid()")


def rpc(ep: Endpoint, session: str | None, method: str, params: dict) -> tuple[int, dict, dict]:
    message = {"jsonrpc": "2.0", "id": ep.next_id(), "method": method, "params": params}
    reply = ep.post(json.dumps(message).encode(), session=session)
    return reply.status, dict(reply.headers), reply.json()


def test_refused_big_calls_do_not_linger(ep: Endpoint, session: str, pid: int) -> None:
    """Each request's body and parsed message used to wait for the cyclic garbage
    collector (the handler, its request and connection refer to each other): 100 calls
    with a 4 MiB argument the tool refuses left the kernel 100-210 MB larger."""
    argument = "x" * BIG
    for n in range(3):  # warm-up: what any such call allocates once
        rpc(ep, session, "tools/call", {"name": "double", "arguments": {"n": f"{n}{argument}"}})
    before = rss(pid)
    for n in range(100):
        params = {"name": "double", "arguments": {"n": f"{n}{argument}"}}
        _, _, reply = rpc(ep, session, "tools/call", params)
        assert reply["result"]["isError"] is True
    grown = rss(pid) - before
    print(f"the kernel grew by {grown / MIB:.1f} MiB")
    assert grown < GROWTH, f"the kernel grew by {grown >> 20} MiB"


def test_subscribed_uris_are_bounded_in_length(ep: Endpoint, session: str, pid: int) -> None:
    """60 subscriptions to 3.9 MB URIs used to be kept (~231 MiB for the session's life)."""
    before = rss(pid)
    for n in range(60):
        uri = f"notes://{n}" + "d" * BIG
        _, _, reply = rpc(ep, session, "resources/subscribe", {"uri": uri})
        assert reply["error"]["code"] == -32602, str(reply)[:300]
        assert "longer than 8192" in reply["error"]["message"]
    grown = rss(pid) - before
    assert grown < GROWTH, f"the kernel grew by {grown >> 20} MiB"
    _, _, kept = rpc(ep, session, "resources/subscribe", {"uri": "notes://" + "d" * 8000})
    assert kept["result"] == {}


def test_an_initialize_with_huge_capabilities_opens_no_session(ep: Endpoint, pid: int) -> None:
    """A session kept its client's capabilities whole: 3.8 MB held ~15 MiB per session."""
    before = rss(pid)
    for n in range(20):
        message = initialize_message(ep.next_id())
        message["params"]["capabilities"] = {"experimental": {"x": [str(n)] * (BIG // 10)}}
        reply = ep.post(json.dumps(message).encode())
        assert reply.status == 200 and "Mcp-Session-Id" not in reply.headers
        error = reply.json()["error"]
        assert error["code"] == -32602
        assert "too large to keep" in error["message"]
    grown = rss(pid) - before
    assert grown < GROWTH, f"the kernel grew by {grown >> 20} MiB"
    ordinary = initialize_message(ep.next_id())
    ordinary["params"]["capabilities"] = {"experimental": {"x": "y" * 30_000}}
    assert ep.post(json.dumps(ordinary).encode()).headers["Mcp-Session-Id"]


UNREAD = 40  # connections that never read their reply


def test_replies_nobody_reads_are_let_go(ep: Endpoint, session: str) -> None:
    """40 connections that never read a 3.9 MB reply held +172 MiB for over 75 s: the
    server wrote with no timeout. Now a client that reads nothing of its reply for
    ``write_timeout`` seconds is disconnected, and the reply freed (measured here as what
    the kernel holds: after a garbage collection and glibc's ``malloc_trim``). Each reply
    is 12 MB, more than the system may buffer for one socket (Linux lets a loopback
    socket's send buffer grow to 4 MiB): a reply that fits there has left the server
    whole, and its connection rightly stays open."""
    kernel = ep.kernel
    kernel.run("%mcp history --max-mb 2")  # the history would keep 1 MiB of each reply
    kernel.run("mcp.limits.write_timeout = 1")
    before = kernel.eval("held_rss()")
    unread: list[socket.socket] = []
    try:
        for n in range(UNREAD):
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "blob", "arguments": {"seed": f"{n:03}"}},
                }
            ).encode()
            head = "".join(f"{k}: {v}\r\n" for k, v in ep.headers(session=session).items())
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((ep.host, ep.port))
            unread.append(sock)
            sock.sendall(
                f"POST {ep.path} HTTP/1.1\r\nHost: {ep.host}\r\n{head}"
                f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        wait_until(lambda: kernel.eval("len(blobs)") == UNREAD, "every call ran")
        wait_until(
            lambda: kernel.eval("held_rss()") - before < GROWTH,
            "the kernel lets go of the unread replies",
        )
        for sock in unread:  # each was closed by the server, its reply cut short
            sock.settimeout(30)
            got = 0
            try:
                while chunk := sock.recv(1 << 20):
                    got += len(chunk)
            except ConnectionResetError:
                pass
            assert got < 12_000_000
        assert ep.call_tool(session, "double", n=2)["content"][0]["text"] == "4"
    finally:
        for sock in unread:
            sock.close()
        kernel.run("mcp.limits.write_timeout = 30")
        kernel.run("%mcp history --max-mb 64")
