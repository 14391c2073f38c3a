"""The kernel's memory and file descriptors stay bounded: 20,000 tool calls, then 1,000
calls whose clients hang up mid-call, leave RSS and the fd count about where they were.

Bounds (generous; the figures land in test-artifacts/stress.json): RSS may grow by at most
64 MiB (the call history keeps the last 1,000 calls, filled before the baseline), the fd
count by at most 8 once the server has closed the connections the clients left.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import Served
from tests.kernel.stress.client import KeepAlive
from tests.kernel.stress.conftest import fd_count, rss_bytes

CALLS = 20_000
THREADS = 8
ABORTED = 1_000
WAVE = 100
RSS_GROWTH = 64 * 1024 * 1024
FD_GROWTH = 8


def calls(served: Served, count: int, threads: int = THREADS) -> None:
    failures: list[BaseException] = []

    def run(index: int) -> None:
        client = KeepAlive(served).open_session()
        try:
            for seq in range(count // threads):
                assert client.tool("echo", client=index, seq=seq) == f"{index}:{seq}"
        except BaseException as exc:
            failures.append(exc)
        finally:
            client.close()

    workers = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    assert not failures, failures[:3]
    assert not any(worker.is_alive() for worker in workers)


def aborted_calls(served: Served, session: str, count: int) -> None:
    """Send ``tools/call`` requests and hang up without reading the reply."""
    parts = urlsplit(served.url)
    for seq in range(count):
        accept = "application/json" if seq % 2 else "text/event-stream"
        message = {
            "jsonrpc": "2.0",
            "id": seq,
            "method": "tools/call",
            "params": {"name": "nap", "arguments": {"seconds": 0.001}},
        }
        body = json.dumps(message).encode()
        head = (
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nAccept: {accept}\r\n"
            f"Authorization: Bearer {served.token}\r\nMcp-Session-Id: {session}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(head + body)


def settle(pid: int, limit: int, deadline: float = 60) -> int:
    """The kernel's fd count once it is at most ``limit`` (the server closed what the clients
    left), or whatever it is at the deadline."""
    end = time.monotonic() + deadline
    while (count := fd_count(pid)) > limit and time.monotonic() < end:
        time.sleep(0.05)
    return count


def test_memory_and_fds_stay_bounded_over_calls_and_aborted_calls(
    served: Served, kernel_pid: int, figures: dict[str, Any]
) -> None:
    fds_idle = fd_count(kernel_pid)
    calls(served, 1_000)  # warm up: caches, and a full call history
    probe = KeepAlive(served).open_session()
    assert probe.tool("echo", client=0, seq=0) == "0:0"
    fds_before = settle(kernel_pid, fds_idle + 1)  # the warm-up's connections are closed
    rss_before = rss_bytes(kernel_pid)

    began = time.perf_counter()
    calls(served, CALLS)
    seconds = time.perf_counter() - began
    rss_after_calls = rss_bytes(kernel_pid)
    fds_after_calls = settle(kernel_pid, fds_before + FD_GROWTH)

    for _ in range(ABORTED // WAVE):
        aborted_calls(served, probe.headers["Mcp-Session-Id"], WAVE)
        # The server noticed the hang-ups before the next wave (else the connection cap,
        # full of calls whose clients left, would refuse some of the next wave).
        settle(kernel_pid, fds_before + FD_GROWTH)
    # Calls run in order on the kernel's thread: once this one is answered, all are done.
    assert probe.tool("echo", client=0, seq=1) == "0:1"
    assert probe.call("ping")["result"] == {}
    fds_after = settle(kernel_pid, fds_before + FD_GROWTH)
    rss_after = rss_bytes(kernel_pid)
    probe.close()
    # How the aborted calls ended, from the call history (it holds the last 1,000 calls).
    endings = served.kernel.eval(
        "dict(__import__('collections').Counter(c.status for c in mcp.calls if c.target == 'nap'))"
    )
    refused = served.kernel.eval("mcp._transport.connections.refused")
    # At the per-address cap the probe, idle, may have made room (it reconnects then).
    shed_idle = served.kernel.eval("mcp._transport.connections.shed_idle")

    mib = 1024 * 1024
    figures["resources"] = {
        "calls": CALLS,
        "calls_per_s": round(CALLS / seconds),
        "aborted_calls": ABORTED,
        "aborted_calls_ended": endings,
        "connections_refused": refused,
        "idle_connections_closed_for_room": shed_idle,
        "rss_before_mib": round(rss_before / mib, 1),
        "rss_growth_after_calls_mib": round((rss_after_calls - rss_before) / mib, 1),
        "rss_growth_after_aborted_mib": round((rss_after - rss_before) / mib, 1),
        "fds_before": fds_before,
        "fd_growth_after_calls": fds_after_calls - fds_before,
        "fd_growth_after_aborted": fds_after - fds_before,
    }
    assert rss_after - rss_before < RSS_GROWTH, figures["resources"]
    assert fds_after - fds_before <= FD_GROWTH, figures["resources"]
