"""Idle sockets from clients without the token cannot lock the notebook's owner out.

A real kernel serves with a bearer token and short header/idle timeouts
(``mcp.limits``). The flood test lowers the kernel's file-descriptor limit under the
number of idle sockets the test opens, as a 1,024 default does against ~1,000 sockets.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import socket
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import Served, start_server
from tests.kernel.test_http_raw import Endpoint, initialize_message
from tests.kernels import Kernel
from tests.portable import cpu_seconds
from tests.portable import rss as rss_bytes
from tests.sources import ADD_BARE
from tests.waiting import wait_until

TIMEOUT = 3.0  # the server's header and idle timeouts in this module (seconds)
SETUP = (
    f"""
mcp.limits.header_timeout = {TIMEOUT}
mcp.limits.idle_timeout = {TIMEOUT}
"""
    + ADD_BARE
)
FD_LIMIT = 256
IDLE_SOCKETS = 300  # more than the kernel has file descriptors left
CPU_BOUND = 2.0  # CPU-seconds the kernel may use while the idle sockets run out
RSS_BOUND = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    kernel = Kernel()
    try:
        yield start_server(kernel, SETUP)
    finally:
        kernel.shutdown()


@pytest.fixture(scope="module")
def endpoint(served: Served) -> Endpoint:
    return Endpoint(served)


def kernel_pid(kernel: Kernel) -> int:
    return kernel.eval("__import__('os').getpid()")


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed ``sock`` (EOF or reset); False while it is open."""
    if hasattr(select, "poll"):  # select() fails on descriptors past FD_SETSIZE (1024)
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        readable = bool(poller.poll(0))
    else:  # Windows: no poll(); its select() takes any socket
        readable = bool(select.select([sock], [], [], 0)[0])
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


# connect_ex on a non-blocking socket: EINPROGRESS on POSIX, WSAEWOULDBLOCK on Windows.
CONNECTING = {0, errno.EINPROGRESS, getattr(errno, "WSAEWOULDBLOCK", errno.EINPROGRESS)}


def open_idle(endpoint: Endpoint, count: int) -> list[socket.socket]:
    """``count`` connections that never send a byte (connecting without blocking)."""
    sockets = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        code = sock.connect_ex((endpoint.host, endpoint.port))
        assert code in CONNECTING, os.strerror(code)
        sockets.append(sock)
    return sockets


def authenticated_requests_answer(endpoint: Endpoint) -> None:
    reply = endpoint.initialize()
    assert reply.status == 200, (reply.status, reply.body)
    session = reply.headers["Mcp-Session-Id"]
    assert endpoint.rpc(session, "ping")["result"] == {}
    assert endpoint.call_tool(session, "add", a=2, b=3)["structuredContent"] == {"result": 5}


def test_idle_and_header_slow_connections_are_closed(endpoint: Endpoint) -> None:
    silent = socket.create_connection((endpoint.host, endpoint.port), timeout=30)
    # A client that starts a request but never finishes its headers.
    slow = socket.create_connection((endpoint.host, endpoint.port), timeout=30)
    slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    # A client with the token: one request answered, then nothing more on the connection.
    kept = endpoint.connect()
    body = json.dumps(initialize_message(1)).encode()
    kept.request("POST", endpoint.path, body, endpoint.headers())
    response = kept.getresponse()
    response.read()
    assert response.status == 200

    def slow_closed() -> bool:
        with contextlib.suppress(OSError):
            slow.send(b"X")  # trickling bytes does not keep a header open
        return closed_by_server(slow)

    wait_until(lambda: closed_by_server(silent), "the silent connection to be closed", timeout=60)
    wait_until(slow_closed, "the header-slow connection to be closed", timeout=60)
    wait_until(
        lambda: closed_by_server(kept.sock),
        "the idle keep-alive connection to be closed",
        timeout=60,
    )
    for sock in (silent, slow):
        sock.close()
    kept.close()
    authenticated_requests_answer(endpoint)


@pytest.mark.skipif(
    sys.platform == "win32",
    reason="lowers the kernel's RLIMIT_NOFILE with the resource module, which Windows lacks: "
    "it has no per-process descriptor limit to run out of",
)
def test_idle_flood_under_fd_limit_leaves_the_token_holder_served(
    served: Served, endpoint: Endpoint
) -> None:
    kernel = served.kernel
    pid = kernel_pid(kernel)
    kernel.run(
        "import resource\n"
        "_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({FD_LIMIT}, _hard))"
    )
    rss_before = rss_bytes(pid)
    idle: list[socket.socket] = []
    try:
        idle = open_idle(endpoint, IDLE_SOCKETS)
        cpu_before = cpu_seconds(pid)
        # The owner's client still gets in, while every descriptor is taken by strangers.
        authenticated_requests_answer(endpoint)
        # Every idle socket ends: shed for a newcomer or closed at the header timeout.
        wait_until(
            lambda: all(closed_by_server(s) for s in idle), "the idle sockets to close", timeout=60
        )
        used = cpu_seconds(pid) - cpu_before
        assert used < CPU_BOUND, f"the kernel used {used:.2f} CPU-s while sockets idled"
        assert rss_bytes(pid) - rss_before < RSS_BOUND
        authenticated_requests_answer(endpoint)
    finally:
        for sock in idle:
            sock.close()
        kernel.run("resource.setrlimit(resource.RLIMIT_NOFILE, (_soft, _hard))")


BODIES = 40  # connections, each announcing the largest body and sending all but its end
BODY = 4 * 1024 * 1024


def test_bodies_without_the_token_are_not_kept(served: Served, endpoint: Endpoint) -> None:
    kernel = served.kernel
    pid = kernel_pid(kernel)
    kernel.run("mcp.limits.header_timeout = 60")  # the bodies would be held all this time
    rss_before = rss_bytes(pid)
    head = (
        f"POST {endpoint.path} HTTP/1.1\r\nHost: {endpoint.host}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {BODY}\r\n\r\n"
    ).encode()
    almost = b"x" * (BODY - 10)
    stalled: list[socket.socket] = []
    try:
        for _ in range(BODIES):
            sock = socket.create_connection((endpoint.host, endpoint.port), timeout=30)
            stalled.append(sock)
            sock.sendall(head + almost)
        grown = rss_bytes(pid) - rss_before
        assert grown < RSS_BOUND, f"the kernel grew by {grown >> 20} MiB"
        for sock in stalled:
            sock.settimeout(10)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
            assert b"WWW-Authenticate: Bearer" in answer
        authenticated_requests_answer(endpoint)
    finally:
        for sock in stalled:
            sock.close()
        kernel.run(f"mcp.limits.header_timeout = {TIMEOUT}")
