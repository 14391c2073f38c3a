"""DirectReply on a real socket pair: what the client receives, and when the connection
goes back to the HTTP server or is closed."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest
import tornado.iostream

from mcp_notebook.transports.direct import DirectReply, json_response
from tests.portable import open_handles
from tests.waiting import until

REPLY = {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": False}}


class Pair:
    """A server-side IOStream lent to a DirectReply, and the client's end of it."""

    def __init__(self, **options: Any) -> None:
        server, self.client = socket.socketpair()
        self.client.settimeout(10)
        self.stream = tornado.iostream.IOStream(server)
        self.reattached: list[tornado.iostream.IOStream] = []
        self.detached = 0
        self.lent: set[DirectReply] = set()
        self.direct = DirectReply(
            lambda: self.stream,
            self._detach,
            self.reattached.append,
            socket.AF_UNIX,
            self.lent,
            **options,
        )

    def _detach(self) -> None:
        self.detached += 1

    def receive(self, size: int | None = None) -> bytes:
        """Everything until the response is complete (by Content-Length) or EOF."""
        data = b""
        while True:
            head, _, body = data.partition(b"\r\n\r\n")
            if _ and size is None:
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                if len(body) >= length:
                    return data
            chunk = self.client.recv(1 << 20)
            if not chunk:
                return data
            data += chunk

    def close(self) -> None:
        self.client.close()
        self.stream.close()


async def noticed(check: Callable[[], bool]) -> None:
    """Let the loop run until ``check()`` holds (the stream notices a hang-up on it)."""
    await until(check, "the stream to notice")


def body_of(response: bytes) -> Any:
    return json.loads(response.partition(b"\r\n\r\n")[2])


async def test_a_reply_sent_from_another_thread_then_the_connection_goes_back() -> None:
    pair = Pair()
    try:
        assert pair.direct.arm()
        sent = []
        worker = threading.Thread(target=lambda: sent.append(pair.direct.send(REPLY)))
        worker.start()
        worker.join(10)
        assert sent == [True]
        response = await asyncio.to_thread(pair.receive)
        assert response.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"Content-Type: application/json\r\n" in response
        assert body_of(response) == REPLY
        await pair.direct.finish({"ignored": "the early reply won"})
        assert pair.reattached == [pair.stream]
        assert not pair.direct.send(REPLY)  # exactly one response per request
    finally:
        pair.close()


async def test_without_an_early_send_finish_writes_the_reply() -> None:
    pair = Pair(status=lambda reply: 404)
    try:
        assert pair.direct.arm()
        await pair.direct.finish(REPLY)
        response = await asyncio.to_thread(pair.receive)
        assert response.startswith(b"HTTP/1.1 404 Not Found\r\n")
        assert body_of(response) == REPLY
        assert pair.reattached == [pair.stream]
    finally:
        pair.close()


async def test_no_reply_due_is_202_without_a_body() -> None:
    assert json_response(None).startswith(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n")


async def test_what_did_not_fit_the_socket_buffer_is_sent_by_finish() -> None:
    pair = Pair()
    try:
        assert pair.direct.arm()
        big = {**REPLY, "result": {"content": [{"type": "text", "text": "x" * (8 << 20)}]}}
        assert pair.direct.send(big)  # far more than a socket buffer holds
        receiving = asyncio.ensure_future(asyncio.to_thread(pair.receive))
        await pair.direct.finish(big)
        assert body_of(await receiving) == big
        assert pair.reattached == [pair.stream]
    finally:
        pair.close()


async def test_a_reply_that_is_not_json_becomes_an_error_to_its_id() -> None:
    """A NaN that reached a result: the client still gets its one reply, not a closed socket."""
    pair = Pair()
    try:
        assert pair.direct.arm()
        assert pair.direct.send({"jsonrpc": "2.0", "id": 1, "result": {"x": float("nan")}})
        await pair.direct.finish(None)
        answer = body_of(await asyncio.to_thread(pair.receive))
        assert answer["id"] == 1 and answer["error"]["code"] == -32603
        assert "not JSON" in answer["error"]["message"]
        assert pair.reattached == [pair.stream]  # and the connection serves on
    finally:
        pair.close()


async def test_a_client_gone_before_the_send_is_not_handed_back() -> None:
    pair = Pair()
    try:
        assert pair.direct.arm()
        pair.client.close()
        await noticed(pair.stream.closed)
        assert not pair.direct.send(REPLY)
        await pair.direct.finish(REPLY)
        assert pair.reattached == []
        assert pair.stream.closed()
    finally:
        pair.close()


@pytest.mark.parametrize("status", [200, 400, 404])
def test_status_lines(status: int) -> None:
    line = json_response(REPLY, status).split(b"\r\n", 1)[0]
    assert line.split(b" ")[:2] == [b"HTTP/1.1", str(status).encode()]


def open_fds() -> int:
    return open_handles()


async def test_a_failed_duplicate_detaches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = Pair()
    try:

        def no_more_files(fd: int) -> int:
            raise OSError(24, "Too many open files")

        monkeypatch.setattr(socket, "dup", no_more_files)
        assert pair.direct.arm() is False  # the call is answered the usual way instead
        assert pair.detached == 0 and not pair.direct.armed and not pair.lent
    finally:
        pair.close()


async def test_a_hang_up_lets_go_of_the_socket_at_once() -> None:
    hung_up = []
    pair = Pair(on_hang_up=lambda: hung_up.append(True))
    try:
        before = open_fds()
        assert pair.direct.arm()
        assert pair.lent == {pair.direct}
        assert open_fds() == before + 1  # the duplicate
        pair.client.close()
        await noticed(lambda: bool(hung_up))
        assert hung_up == [True]
        # Gone: the client's end (closed above), the stream's socket and the duplicate.
        assert open_fds() == before - 2
        assert not pair.direct.send(REPLY)  # nobody to answer
        await pair.direct.finish(REPLY)
        assert pair.reattached == [] and not pair.lent
    finally:
        pair.close()


async def test_shutting_down_closes_a_lent_connection_and_gives_up_the_call() -> None:
    gave_up = []
    pair = Pair(on_hang_up=lambda: gave_up.append(True))
    try:
        assert pair.direct.arm()
        pair.direct.shut_down()
        assert gave_up == [True] and not pair.lent
        assert await asyncio.to_thread(pair.receive, 0) == b""  # EOF: not a hang
        assert not pair.direct.send(REPLY)
    finally:
        pair.close()


async def test_a_default_socket_timeout_does_not_make_sends_block() -> None:
    socket.setdefaulttimeout(5)
    pair = Pair()
    try:
        assert pair.direct.arm()
        assert pair.direct._socket is not None
        assert pair.direct._socket.gettimeout() == 0.0
    finally:
        socket.setdefaulttimeout(None)
        pair.close()
