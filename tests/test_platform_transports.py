"""Platform conditions of the HTTP transport, simulated on Linux (issue 13).

Each test makes a call fail the way it fails on macOS or Windows, or patches
``sys.platform``, and checks that the transport's one function for that point copes.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import sys
import threading
import types
from typing import Any

import pytest
import tornado.ioloop

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import LoopExecutor, Server
from mcp_notebook.transports import direct
from mcp_notebook.transports.http import HttpTransport
from tests.kernel.test_http_raw import initialize_message
from tests.test_direct_reply import REPLY, Pair, body_of
from tests.test_http_limits import TOKEN, Client

WSAENOTSOCK = 10038  # Windows: "An operation was attempted on something that is not a socket"


def fds_open() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


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
