"""Platform conditions of the HTTP transport, simulated on Linux (issue 13).

Each test makes a call fail the way it fails on macOS or Windows, or patches
``sys.platform``, and checks that the transport's one function for that point copes.
"""

from __future__ import annotations

import asyncio
import errno
import http.client
import json
import os
import socket
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import tornado.ioloop

from mcp_notebook import NotebookMCP, app
from mcp_notebook.protocol import LoopExecutor, Server
from mcp_notebook.transports import binding, direct, fds, limits
from mcp_notebook.transports.http import HttpTransport
from mcp_notebook.transports.limits import ConnectionLimiter, Limits
from tests import portable
from tests.messages import initialize_message
from tests.unit.transports.test_direct_reply import REPLY, Pair, body_of
from tests.unit.transports.test_http_limits import TOKEN, Client

WSAENOTSOCK = 10038  # Windows: "An operation was attempted on something that is not a socket"


def fds_open() -> int:
    return portable.open_handles()


def failing_socket_module(**failures: BaseException) -> Any:
    """The socket module as direct.py sees it, with some of its calls failing."""

    def fail(exc: BaseException) -> Any:
        def raise_it(*args: Any, **kwargs: Any) -> Any:
            raise exc

        return raise_it

    module = types.SimpleNamespace(**{n: getattr(socket, n) for n in dir(socket)})
    for name, exc in failures.items():
        setattr(module, name, fail(exc))
    return module


# -- tool calls on Windows: the duplicate of a client's socket ---------------------------


async def test_the_fast_path_does_not_need_os_dup(monkeypatch: pytest.MonkeyPatch) -> None:
    # On Windows a socket is a handle, not a C-runtime descriptor: os.dup fails with EBADF.
    def not_a_descriptor(fd: int) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(os, "dup", not_a_descriptor)
    pair = Pair()
    try:
        assert pair.direct.arm() is True
        assert pair.direct.send(REPLY)
        assert body_of(pair.receive()) == REPLY
        await pair.direct.finish(REPLY)
        assert pair.reattached == [pair.stream]
    finally:
        pair.close()


@pytest.mark.parametrize(
    "failures",
    [
        {"dup": OSError(errno.EBADF, "Bad file descriptor")},
        {"socket": OSError(WSAENOTSOCK, "not a socket")},
        {"socket": OSError(errno.EBADF, "Bad file descriptor")},
        {"socket": ValueError("negative file descriptor")},
    ],
    ids=["dup-EBADF", "wrap-WSAENOTSOCK", "wrap-EBADF", "wrap-ValueError"],
)
async def test_any_failure_to_arm_leaves_the_call_to_the_usual_path(
    monkeypatch: pytest.MonkeyPatch, failures: dict[str, BaseException]
) -> None:
    pair = Pair()
    try:
        before = fds_open()
        monkeypatch.setattr(direct, "socket", failing_socket_module(**failures))
        assert pair.direct.arm() is False  # no exception: the call is answered as usual
        assert pair.detached == 0 and not pair.direct.armed and not pair.lent
        assert fds_open() == before  # a duplicate made before the failure is closed again
    finally:
        pair.close()


async def test_a_duplicate_that_cannot_be_made_non_blocking_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pair = Pair()
    try:
        before = fds_open()

        def refuse(self: socket.socket, flag: bool) -> None:
            raise OSError(WSAENOTSOCK, "not a socket")

        monkeypatch.setattr(socket.socket, "setblocking", refuse)
        assert pair.direct.arm() is False
        assert pair.detached == 0 and not pair.lent
        assert fds_open() == before
    finally:
        monkeypatch.undo()
        pair.close()


# -- the server's loop on Windows --------------------------------------------------------


class ProactorLike(asyncio.SelectorEventLoop):
    """What a new loop is on Windows, under ipykernel too: a Proactor loop, which has no
    ``add_reader`` family (tornado then adds a selector thread to it)."""

    def add_reader(self, *args: Any) -> None:
        raise NotImplementedError

    add_writer = remove_reader = remove_writer = add_reader


@pytest.fixture
def on_windows_loops(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.AbstractEventLoop]:
    """sys.platform is win32 and asyncio.new_event_loop makes Proactor-like loops;
    the list collects the selector loops made meanwhile."""
    made: list[asyncio.AbstractEventLoop] = []
    selector_loop = asyncio.SelectorEventLoop

    def observed_selector_loop(*args: Any) -> asyncio.AbstractEventLoop:
        loop = selector_loop(*args)
        made.append(loop)
        return loop

    monkeypatch.setattr(asyncio, "ProactorEventLoop", ProactorLike, raising=False)
    monkeypatch.setattr(asyncio, "new_event_loop", ProactorLike)
    monkeypatch.setattr(asyncio, "SelectorEventLoop", observed_selector_loop)
    monkeypatch.setattr(sys, "platform", "win32")
    return made


def test_the_server_thread_runs_a_selector_loop_on_windows_and_closes_it_whole(
    kernel_loop: asyncio.AbstractEventLoop, on_windows_loops: list[asyncio.AbstractEventLoop]
) -> None:
    server = Server(NotebookMCP().registry, executor=LoopExecutor(kernel_loop))
    threads_before = set(threading.enumerate())
    for round_ in range(5):
        transport = HttpTransport(server, token=TOKEN)
        transport.start()
        try:
            loop = transport.loop
            assert loop is on_windows_loops[-1] and len(on_windows_loops) == round_ + 1
            assert not isinstance(loop, ProactorLike)
            client = Client(transport.port)
            status, _, reply = client.post(initialize_message(1))
            client.conn.close()
            assert status == 200 and reply["result"]["serverInfo"]
        finally:
            transport.stop()
        assert loop.is_closed()
        assert loop not in tornado.ioloop.IOLoop._ioloop_for_asyncio  # tornado let go of it
    assert set(threading.enumerate()) == threads_before  # no server or helper thread left


# -- the connection cap under the file limit: macOS and Windows --------------------------


def limiter(max_connections: int) -> ConnectionLimiter:
    return ConnectionLimiter(Limits(max_connections=max_connections), print, lambda *a: None)


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A system without /proc (macOS); what /dev/fd and psutil say is set by the test."""
    seen: dict[str, Any] = {"/dev/fd": None, "psutil": None}
    listdir = os.listdir

    def fake_listdir(path: Any = ".") -> list[str]:
        if path in ("/proc/self/fd", "/dev/fd"):
            if seen.get(path) is None:
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
            return [str(n) for n in range(seen[path])]
        return listdir(path)

    class FakeProcess:
        def num_fds(self) -> int:
            if seen["psutil"] is None:
                raise OSError(errno.EPERM, "not allowed")
            return seen["psutil"]

        num_handles = num_fds

    monkeypatch.setattr(os, "listdir", fake_listdir)
    monkeypatch.setitem(sys.modules, "psutil", types.SimpleNamespace(Process=FakeProcess))
    return seen


def macos_limit(monkeypatch: pytest.MonkeyPatch, soft: int) -> None:
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (soft, resource.RLIM_INFINITY))
    monkeypatch.setattr(sys, "platform", "darwin")


def test_on_macos_the_cap_fits_the_256_file_default_counted_by_psutil(
    monkeypatch: pytest.MonkeyPatch, no_proc: dict[str, Any]
) -> None:
    macos_limit(monkeypatch, 256)
    no_proc["psutil"] = 40
    no_proc["/dev/fd"] = 3  # never asked: psutil answered
    assert fds.open_file_count() == 40
    assert fds.fd_headroom() == 216
    assert limiter(1000).max_connections == 216 - limits.RESERVED_FDS


def test_without_psutil_macos_counts_what_dev_fd_lists(
    monkeypatch: pytest.MonkeyPatch, no_proc: dict[str, Any]
) -> None:
    macos_limit(monkeypatch, 256)
    no_proc["/dev/fd"] = 30
    assert fds.open_file_count() == 30
    assert limiter(1000).max_connections == 256 - 30 - limits.RESERVED_FDS


def test_when_nothing_can_count_the_open_files_the_limit_still_caps(
    monkeypatch: pytest.MonkeyPatch, no_proc: dict[str, Any]
) -> None:
    macos_limit(monkeypatch, 256)
    assert fds.open_file_count() is None
    assert limiter(1000).max_connections == 256 - limits.RESERVED_FDS


def test_on_windows_the_cap_stays_under_what_select_can_watch(
    monkeypatch: pytest.MonkeyPatch, no_proc: dict[str, Any]
) -> None:
    monkeypatch.setitem(sys.modules, "resource", None)  # Windows has no resource module
    monkeypatch.setattr(sys, "platform", "win32")
    no_proc["psutil"] = 700  # handles of every kind: no limit to compare them with
    assert fds.open_file_limit() is None
    assert fds.open_file_count() == 700
    cap = limiter(1000).max_connections
    assert cap + limits.RESERVED_FDS <= fds.WINDOWS_SELECT_LIMIT
    assert limiter(100).max_connections == 100


# -- binding: both loopbacks for localhost, the default port exclusively ------------------


def ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def initialize_at(address: str, port: int, token: str = TOKEN) -> int:
    conn = http.client.HTTPConnection(address, port, timeout=30)
    try:
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        conn.request("POST", "/mcp", json.dumps(initialize_message(1)), headers)
        response = conn.getresponse()
        assert json.loads(response.read())["result"]["serverInfo"]
        return response.status
    finally:
        conn.close()


@pytest.fixture
def serve_at(kernel_loop: asyncio.AbstractEventLoop) -> Iterator[Callable[..., HttpTransport]]:
    started: list[HttpTransport] = []

    def start(host: str, port: int = 0, **options: Any) -> HttpTransport:
        server = Server(NotebookMCP().registry, executor=LoopExecutor(kernel_loop))
        transport = HttpTransport(server, host=host, port=port, token=TOKEN, **options)
        transport.start()
        started.append(transport)
        return transport

    yield start
    for transport in started:
        transport.stop()


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_localhost_serves_ipv6_loopback_clients_too(serve_at: Callable[..., HttpTransport]):
    # macOS resolves localhost to ::1 first; Node clients then only try ::1.
    transport = serve_at("localhost")
    assert transport.url == f"http://localhost:{transport.port}/mcp"
    assert initialize_at("::1", transport.port) == 200
    assert initialize_at("127.0.0.1", transport.port) == 200
    assert initialize_at("localhost", transport.port) == 200


def test_without_ipv6_localhost_serves_ipv4_and_the_url_names_it(
    monkeypatch: pytest.MonkeyPatch, serve_at: Callable[..., HttpTransport]
) -> None:
    real_socket = socket.socket

    def ipv4_only(family: int = socket.AF_INET, *args: Any) -> socket.socket:
        if family == socket.AF_INET6:
            raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")
        return real_socket(family, *args)

    module = types.SimpleNamespace(**{n: getattr(socket, n) for n in dir(socket)})
    module.socket = ipv4_only
    monkeypatch.setattr(binding, "socket", module)
    transport = serve_at("localhost")
    assert transport.url == f"http://127.0.0.1:{transport.port}/mcp"
    assert initialize_at("127.0.0.1", transport.port) == 200


def reuse_address(sock: socket.socket) -> bool:
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0


@pytest.mark.parametrize(
    ("platform", "exclusive", "reused"),
    [
        ("darwin", True, False),  # would let 127.0.0.1:8765 shadow another app's *:8765
        ("darwin", False, True),  # a chosen port rebinds despite TIME_WAIT, as before
        ("freebsd14", True, False),
        ("linux", True, True),  # Linux never binds over a listener: only TIME_WAIT is skipped
        ("linux", False, True),
    ],
)
def test_address_sharing_on_posix(
    monkeypatch: pytest.MonkeyPatch, platform: str, exclusive: bool, reused: bool
) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    sockets = binding.listen("127.0.0.1", 0, exclusive=exclusive)
    try:
        assert [reuse_address(sock) for sock in sockets] == [reused]
    finally:
        for sock in sockets:
            sock.close()


class RecordingSocket:
    def __init__(self) -> None:
        self.options: list[tuple[int, int, int]] = []

    def setsockopt(self, level: int, option: int, value: int) -> None:
        self.options.append((level, option, value))


@pytest.mark.parametrize("exclusive", [True, False])
def test_on_windows_the_default_port_is_bound_with_exclusiveaddruse(
    monkeypatch: pytest.MonkeyPatch, exclusive: bool
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    sock = RecordingSocket()
    binding.share_address(sock, exclusive)  # type: ignore[arg-type]
    # SO_EXCLUSIVEADDRUSE is ~SO_REUSEADDR = -5 in winsock2.h; never SO_REUSEADDR there.
    expected = [(socket.SOL_SOCKET, -5, 1)] if exclusive else []
    assert sock.options == expected


@pytest.fixture
def mcp_start(
    kernel_loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Callable[..., Any], list[list[socket.socket]]]]:
    """NotebookMCP.start with the default port moved to a port of the test's; the listening
    sockets each bind made are recorded."""
    started: list[NotebookMCP] = []
    bound: list[list[socket.socket]] = []
    real_listen = binding.listen

    def recorded_listen(*args: Any, **kwargs: Any) -> list[socket.socket]:
        sockets = real_listen(*args, **kwargs)
        bound.append(sockets)
        return sockets

    monkeypatch.setattr(binding, "listen", recorded_listen)

    def start(**options: Any) -> Any:
        mcp = NotebookMCP()
        started.append(mcp)
        return mcp.start(executor=LoopExecutor(kernel_loop), **options)

    yield start, bound
    for mcp in started:
        mcp.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_on_macos_the_default_port_is_bound_without_reuseaddr(
    monkeypatch: pytest.MonkeyPatch, mcp_start: tuple[Callable[..., Any], list]
) -> None:
    start, bound = mcp_start
    default = free_port()
    monkeypatch.setattr(app, "DEFAULT_PORT", default)
    monkeypatch.setattr(sys, "platform", "darwin")
    info = start()
    assert info.port == default
    assert [reuse_address(sock) for sock in bound[-1]] == [False]


def test_a_taken_default_port_falls_back_to_a_free_one(
    monkeypatch: pytest.MonkeyPatch, mcp_start: tuple[Callable[..., Any], list]
) -> None:
    start, _ = mcp_start
    with socket.socket() as other_app:  # another program listens on every address
        other_app.bind(("0.0.0.0", 0))
        other_app.listen()
        taken = other_app.getsockname()[1]
        monkeypatch.setattr(app, "DEFAULT_PORT", taken)
        info = start(host="localhost")
        assert info.port != taken and info.url.endswith(f":{info.port}/mcp")
        assert initialize_at("127.0.0.1", info.port, info.token) == 200


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
@pytest.mark.parametrize("refusal", [errno.EADDRINUSE, errno.EACCES, 10013])
def test_localhost_tries_another_port_when_ipv6_refuses_the_free_one(
    monkeypatch: pytest.MonkeyPatch, refusal: int
) -> None:
    """Windows: the free IPv4 port may lie in a range excluded for IPv6 (Hyper-V, WSL2),
    refused with WSAEACCES (10013) rather than EADDRINUSE."""
    real = binding._listen_one
    refused: list[tuple] = []

    def listen_one(family: int, address: tuple, exclusive: bool, required: bool) -> Any:
        if family == socket.AF_INET6 and not refused:
            refused.append(address)
            raise OSError(refusal, "An attempt was made to access a socket in a way forbidden")
        return real(family, address, exclusive, required)

    monkeypatch.setattr(binding, "_listen_one", listen_one)
    sockets = binding.listen("localhost", 0)
    try:
        assert refused, "the IPv6 bind was never tried"
        assert {s.family for s in sockets} == {socket.AF_INET, socket.AF_INET6}
        assert len({s.getsockname()[1] for s in sockets}) == 1  # one port for both
    finally:
        for sock in sockets:
            sock.close()


def port_in_time_wait() -> int:
    """A loopback port held only by a closed connection in TIME_WAIT, as after a server
    stopped (the server closed first)."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            accepted.close()
            assert client.recv(1) == b""
    with socket.socket() as plain, pytest.raises(OSError) as busy:
        plain.bind(("127.0.0.1", port))  # without SO_REUSEADDR: refused
    assert busy.value.errno == errno.EADDRINUSE
    return port


def test_on_macos_a_default_port_held_by_time_wait_is_kept_after_a_restart(
    monkeypatch: pytest.MonkeyPatch, mcp_start: tuple[Callable[..., Any], list]
) -> None:
    # Without SO_REUSEADDR a restarted kernel would lose port 8765 for a while; nothing
    # listens there, so there is nothing to shadow and the port is bound again.
    start, _ = mcp_start
    port = port_in_time_wait()
    monkeypatch.setattr(app, "DEFAULT_PORT", port)
    monkeypatch.setattr(sys, "platform", "darwin")
    info = start()
    assert info.port == port
    assert initialize_at("127.0.0.1", port, info.token) == 200


def test_on_macos_a_listener_on_the_default_port_is_never_shadowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with socket.socket() as other_app:
        other_app.bind(("0.0.0.0", 0))
        other_app.listen()
        port = other_app.getsockname()[1]
        with pytest.raises(OSError) as taken:
            binding.listen("127.0.0.1", port, exclusive=True)
        assert taken.value.errno == errno.EADDRINUSE


@pytest.mark.parametrize("host", ["not..a..host", "x" * 64 + ".example.com"])
def test_a_host_name_idna_refuses_is_an_os_error_naming_it(host: str) -> None:
    # The IDNA codec raises UnicodeError for these, which %mcp start and serve, catching
    # OSError, showed as a traceback; a cannot-listen error is what they say for others.
    with pytest.raises(OSError, match="is not a valid host name"):
        binding.check_address(host)
