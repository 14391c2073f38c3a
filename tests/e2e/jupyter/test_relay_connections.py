"""The relay's connections to a kernel server, seen from that server: a real Jupyter Server
relays to a small HTTP server of this test (registered in the discovery folder as a
notebook server would be), which records every connection and request it gets.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from mcp_notebook import discovery
from tests.e2e.jupyter.server import JupyterServer
from tests.waiting import wait_until

LIMIT = 4096  # the fake server's max_body, as its discovery file says


@dataclass
class Seen:
    number: int  # which connection, from 1
    requests: list[dict] = field(default_factory=list)
    closed_by_peer: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)  # by this server


class FakeKernelServer:
    """Answers each POST with a JSON-RPC result on a kept-alive connection, unless the
    request's method says otherwise:

    - ``close``: answer, then close the connection;
    - ``vanish``: read the request, then close without answering (it may have run);
    - ``hold``: read the request and never answer;
    - ``stream``: answer with a short SSE stream (chunked), keeping the connection.
    """

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[Seen] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return [r for seen in self.connections for r in seen.requests]

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                seen = Seen(len(self.connections) + 1)
                self.connections.append(seen)
            threading.Thread(target=self._serve, args=(sock, seen), daemon=True).start()

    def _serve(self, sock: socket.socket, seen: Seen) -> None:
        reader = sock.makefile("rb")
        try:
            while True:
                head = [reader.readline()]
                while head[-1] not in (b"\r\n", b""):
                    head.append(reader.readline())
                if head[-1] == b"":
                    seen.closed_by_peer.set()
                    return
                lines = [line.decode("latin-1").strip() for line in head[1:-1]]
                headers = dict(line.split(": ", 1) for line in lines)
                body = reader.read(int(headers.get("Content-Length", "0")))
                message = json.loads(body) if body else {}
                with self._lock:
                    seen.requests.append(message)
                method = message.get("method")
                if method == "vanish":
                    return
                if method == "hold":
                    if reader.read(1) == b"":
                        seen.closed_by_peer.set()
                    return
                reply = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {}})
                if method == "stream":
                    event = f"data: {reply}\n\n".encode()
                    sock.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n"
                        + f"{len(event):x}\r\n".encode()
                        + event
                        + b"\r\n0\r\n\r\n"
                    )
                    continue
                data = reply.encode()
                sock.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                if method == "close":
                    return
        except OSError:
            seen.closed_by_peer.set()
        finally:
            reader.close()
            sock.close()
            seen.closed.set()

    def stop(self) -> None:
        self.listener.close()


@pytest.fixture(scope="module")
def jupyter() -> Iterator[JupyterServer]:
    server = JupyterServer("/base/")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake(jupyter) -> Iterator[tuple[FakeKernelServer, str]]:
    server = FakeKernelServer()
    name = f"fake-{server.port}"
    path = discovery.register(
        name, f"http://127.0.0.1:{server.port}/mcp", "fake-token", max_body=LIMIT
    )
    try:
        yield server, jupyter.endpoint(name)
    finally:
        discovery.unregister(path)
        server.stop()


def post(jupyter, endpoint: str, body: bytes | dict, **headers: str) -> tuple[int, dict]:
    parts = urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        connection.request(
            "POST",
            parts.path,
            data,
            {**jupyter.headers, "Content-Type": "application/json", **headers},
        )
        response = connection.getresponse()
        text = response.read().decode()
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        return response.status, json.loads(text) if text else {}
    finally:
        connection.close()


def call(method: str, id: int) -> dict:
    return {"jsonrpc": "2.0", "id": id, "method": method}


def test_plain_answers_reuse_one_connection_to_the_kernel(jupyter, fake):
    server, endpoint = fake
    for number in range(1, 6):
        status, reply = post(jupyter, endpoint, call("ping", number))
        assert status == 200 and reply["id"] == number
    assert [seen.number for seen in server.connections] == [1]
    assert [r["id"] for r in server.connections[0].requests] == [1, 2, 3, 4, 5]


def test_a_connection_the_kernel_closed_is_not_used_again(jupyter, fake):
    server, endpoint = fake
    assert post(jupyter, endpoint, call("close", 1))[0] == 200
    assert server.connections[0].closed.wait(30), "the fake server's close"
    # The kernel closed its end (as a restarted or idle-timed-out server does): the next
    # request goes on a new connection, and is sent once.
    assert post(jupyter, endpoint, call("ping", 2)) == (
        200,
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    )
    assert len(server.connections) == 2
    assert [r["id"] for r in server.requests] == [1, 2]


def test_a_request_the_kernel_may_have_run_is_never_sent_twice(jupyter, fake):
    server, endpoint = fake
    assert post(jupyter, endpoint, call("ping", 1))[0] == 200  # a pooled connection now
    status, reply = post(jupyter, endpoint, call("vanish", 2))
    assert status == 502 and reply["id"] == 2
    assert "closed" in reply["error"]["message"]
    assert post(jupyter, endpoint, call("ping", 3))[0] == 200
    assert [r["id"] for r in server.requests] == [1, 2, 3]  # 2 arrived once, not again


def test_a_client_hanging_up_closes_its_pooled_connection_to_the_kernel(jupyter, fake):
    server, endpoint = fake
    assert post(jupyter, endpoint, call("ping", 1))[0] == 200
    parts = urlsplit(endpoint)
    client = socket.create_connection((parts.hostname, parts.port))
    body = json.dumps(call("hold", 2)).encode()
    token = jupyter.headers["Authorization"]
    client.sendall(
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    wait_until(lambda: len(server.requests) == 2, "the held request at the kernel")
    assert [seen.number for seen in server.connections] == [1]  # it went on the pooled one
    client.close()  # a 2026-07-28 client cancels by hanging up
    assert server.connections[0].closed_by_peer.wait(30), "the kernel's connection stayed"
    assert post(jupyter, endpoint, call("ping", 3))[0] == 200  # on a new connection
    assert len(server.connections) == 2


def test_a_connection_that_carried_a_stream_is_not_kept(jupyter, fake):
    server, endpoint = fake
    status, reply = post(jupyter, endpoint, call("stream", 1))
    assert status == 200 and reply["id"] == 1
    assert server.connections[0].closed_by_peer.wait(30), "the stream's connection stayed"
    assert post(jupyter, endpoint, call("ping", 2))[0] == 200
    assert len(server.connections) == 2


def test_bodies_over_the_kernels_limit_get_413_without_reaching_it(jupyter, fake):
    server, endpoint = fake
    fits = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": ""}}
    fits["params"]["pad"] = "x" * (LIMIT - len(json.dumps(fits)))
    assert len(json.dumps(fits)) == LIMIT
    assert post(jupyter, endpoint, fits)[0] == 200
    too_large = {**fits, "id": 2, "params": {"pad": "y" * LIMIT}}
    status, reply = post(jupyter, endpoint, too_large)  # announced by Content-Length
    assert status == 413 and f"limit is {LIMIT} bytes" in reply["error"]["message"]
    # Chunked, so only counting finds it too large.
    parts = urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    data = json.dumps(too_large).encode()
    chunks = (data[i : i + 1000] for i in range(0, len(data), 1000))
    connection.request(
        "POST",
        parts.path,
        chunks,
        {**jupyter.headers, "Content-Type": "application/json"},
        encode_chunked=True,
    )
    response = connection.getresponse()
    assert response.status == 413
    assert f"limit is {LIMIT} bytes" in json.loads(response.read())["error"]["message"]
    connection.close()
    # Far over the limit: refused when the headers are in, before the body is read.
    huge = b"z" * (LIMIT * 1000)
    status, reply = post(jupyter, endpoint, huge)
    assert status == 413
    assert [r["id"] for r in server.requests] == [1]  # none of them reached the kernel


def test_a_client_without_the_token_cannot_send_the_relay_a_body(jupyter, fake):
    server, endpoint = fake
    parts = urlsplit(endpoint)
    client = socket.create_connection((parts.hostname, parts.port), timeout=30)
    client.sendall(
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {LIMIT}\r\n\r\n".encode()
    )
    # Refused on its headers: the answer comes without one byte of the body sent.
    answer = client.recv(65536)
    assert answer.split(b" ", 2)[1] in (b"401", b"403")
    client.close()
    assert server.connections == []
