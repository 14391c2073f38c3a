"""Platform conditions of the HTTP transport, simulated on Linux (issue 13).

Each test makes a call fail the way it fails on macOS or Windows, or patches
``sys.platform``, and checks that the transport's one function for that point copes.
"""

from __future__ import annotations

import errno
import os
import socket
import types
from typing import Any

import pytest

from mcp_notebook.transports import direct
from tests.test_direct_reply import REPLY, Pair, body_of

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
