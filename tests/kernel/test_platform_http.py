"""Platform conditions of the HTTP server in a real kernel, simulated on Linux (issue 13)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.conftest import Served, start_server
from tests.kernel.test_http_direct import KeptAlive
from tests.kernel.test_http_raw import Endpoint
from tests.kernels import Kernel
from tests.unit.transports.test_platform_transports import ipv6_loopback

SETUP = """
import errno, os, socket, types
from mcp_notebook.transports import direct as _direct

runs = []

@mcp.tool
def add(a: int, b: int) -> int:
    runs.append((a, b))
    return a + b

def _failing(exc):
    def fail(*args, **kwargs):
        raise exc
    return fail

def _socket_module_failing(name, exc):
    module = types.SimpleNamespace(**{n: getattr(socket, n) for n in dir(socket)})
    setattr(module, name, _failing(exc))
    return module
"""

# What each simulation replaces in the kernel, and how it puts it back.
ON_WINDOWS = (
    "_os_dup = os.dup; os.dup = _failing(OSError(errno.EBADF, 'Bad file descriptor'))",
    "os.dup = _os_dup",
)


@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


@pytest.fixture
def client(ep: Endpoint) -> Iterator[KeptAlive]:
    ep.kernel.run("runs.clear()")
    client = KeptAlive(ep, ep.open_session())
    try:
        yield client
    finally:
        client.close()


def call_add(client: KeptAlive, request_id: int) -> tuple[dict, str | None]:
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    response = client.post(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )
    assert response.status == 200
    return json.loads(response.read()), response.getheader("Server")


def test_a_kept_alive_call_leaves_from_the_kernel_thread_when_os_dup_fails_as_on_windows(
    ep: Endpoint, client: KeptAlive
) -> None:
    patch, undo = ON_WINDOWS
    ep.kernel.run(patch)
    try:
        reply, server_header = call_add(client, 1)
    finally:
        ep.kernel.run(undo)
    assert reply["result"]["structuredContent"] == {"result": 5}
    assert reply["result"]["isError"] is False
    assert server_header is None  # tornado stamps its answers; the kernel thread does not
    assert ep.kernel.eval("runs") == [(2, 3)]
    assert client.rpc("ping")["result"] == {}
    assert client.still_the_same_connection()


@pytest.mark.parametrize(
    "failure",
    [
        "_socket_module_failing('dup', OSError(errno.EBADF, 'Bad file descriptor'))",
        "_socket_module_failing('socket', OSError(errno.EBADF, 'Bad file descriptor'))",
        "_socket_module_failing('socket', OSError(10038, 'not a socket'))",
        "_socket_module_failing('socket', ValueError('negative file descriptor'))",
    ],
    ids=["dup-EBADF", "wrap-EBADF", "wrap-WSAENOTSOCK", "wrap-ValueError"],
)
def test_a_kept_alive_call_runs_once_and_returns_its_result_when_arming_fails(
    ep: Endpoint, client: KeptAlive, failure: str
) -> None:
    ep.kernel.run(f"_direct.socket = {failure}")
    try:
        reply, server_header = call_add(client, 1)
        again, _ = call_add(client, 2)
    finally:
        ep.kernel.run("_direct.socket = socket")
    for answer in (reply, again):
        assert answer["result"]["isError"] is False, answer
        assert answer["result"]["structuredContent"] == {"result": 5}
    assert server_header is not None  # answered by tornado: the usual path
    assert ep.kernel.eval("runs") == [(2, 3), (2, 3)]  # each call ran exactly once
    assert client.still_the_same_connection()


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_mcp_start_host_localhost_serves_an_ipv6_loopback_client(ep: Endpoint) -> None:
    # macOS resolves localhost to ::1 first, and Node clients then only try ::1.
    kernel = ep.kernel
    kernel.run("%mcp start --host localhost --port 0")
    try:
        url = kernel.eval("mcp.url")
        port = urlsplit(url).port
        assert url == f"http://localhost:{port}/mcp"
        for address in ("[::1]", "127.0.0.1"):
            at = Endpoint(Served(kernel, f"http://{address}:{port}/mcp", ep.token))
            result = at.call_tool(at.open_session(), "add", a=1, b=2)
            assert result["structuredContent"] == {"result": 3}
    finally:
        kernel.run(f"%mcp start --host 127.0.0.1 --port {ep.port}")
