"""Connection caps and session admission of the HTTP transport (transports/limits.py).

In process: the transport on its own thread, user code on a "kernel" thread's loop, as in
a kernel. Clients are raw sockets and ``http.client`` keep-alive connections; all come
from 127.0.0.1 unless a test binds another loopback address as a second client.
"""

from __future__ import annotations

import asyncio
import errno
import http.client
import json
import select
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server
from mcp_notebook.protocol.codes import SERVER_ERROR
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.transports.http import HttpTransport
from mcp_notebook.transports.limits import ConnectionLimiter, Limits, SessionAdmission
from tests.messages import initialize_message
from tests.waiting import until, wait_until

TOKEN = "secret-token"
release = threading.Event()
holding = threading.Event()


@pytest.fixture
def serve(kernel_loop: asyncio.AbstractEventLoop) -> Iterator[Callable[..., HttpTransport]]:
    started: list[HttpTransport] = []

    def start(**options: Any) -> HttpTransport:
        mcp = NotebookMCP()

        @mcp.tool
        def hold() -> str:
            """Block the kernel thread until the test releases it."""
            holding.set()
            release.wait(30)
            return "released"

        server = Server(mcp.registry, executor=LoopExecutor(kernel_loop))
        transport = HttpTransport(server, token=TOKEN, **options)
        transport.start()
        started.append(transport)
        return transport

    yield start
    release.set()
    for transport in started:
        transport.stop()


class Client:
    """One keep-alive connection with the token."""

    def __init__(self, port: int, source: str | None = None) -> None:
        self.conn = http.client.HTTPConnection(
            "127.0.0.1", port, timeout=30, source_address=(source, 0) if source else None
        )
        self.session: str | None = None
        self.ids = iter(range(1, 1_000_000))

    def post(self, message: dict[str, Any]) -> tuple[int, http.client.HTTPMessage, Any]:
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", json.dumps(message), headers)
        response = self.conn.getresponse()
        body = response.read()
        return response.status, response.headers, json.loads(body) if body else None

    def initialize(self) -> tuple[int, http.client.HTTPMessage, Any]:
        status, headers, body = self.post(initialize_message(next(self.ids)))
        if status == 200:
            self.session = headers["Mcp-Session-Id"]
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return status, headers, body

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self.ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        status, _, body = self.post(message)
        assert status == 200, (status, body)
        assert body["id"] == request_id
        return body

    def close(self) -> None:
        self.conn.close()


def idle_sockets(port: int, count: int, source: str = "127.0.0.1") -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


# -- item 9: an initialize flood cannot evict a live session -----------------------------
def test_a_live_session_survives_an_initialize_flood(serve: Callable[..., HttpTransport]) -> None:
    limits = Limits(session_rate=0.001)  # no refill within the test: the burst is all
    transport = serve(limits=limits)
    live = Client(transport.port)
    flooder = Client(transport.port)
    other = Client(transport.port)  # another agent on the same (loopback) address
    try:
        assert live.initialize()[0] == 200
        for _ in range(1001):
            status, _, body = flooder.post(initialize_message(7))
            assert status == 200, body  # past its allowance, its unused sessions recycle
        assert len(transport.sessions) <= limits.session_burst
        assert other.initialize()[0] == 200
        assert other.call("ping")["result"] == {}
        assert live.call("ping")["result"] == {}
        assert live.call("tools/list")["result"]["tools"][0]["name"] == "hold"
    finally:
        for client in (live, flooder, other):
            client.close()


def test_sessions_that_are_used_count_against_the_allowance(
    serve: Callable[..., HttpTransport],
) -> None:
    transport = serve(limits=Limits(session_burst=3, session_rate=0.001))
    clients = [Client(transport.port) for _ in range(4)]
    try:
        for client in clients[:3]:
            assert client.initialize()[0] == 200  # ... and used: notifications/initialized
        status, headers, body = clients[3].initialize()
        assert status == 429
        assert int(headers["Retry-After"]) >= 1
        assert body["id"] is not None and body["error"]["code"] == SERVER_ERROR
        for client in clients[:3]:
            assert client.call("ping")["result"] == {}
    finally:
        for client in clients:
            client.close()


def test_a_full_session_table_ends_its_least_recently_used_session_which_answers_404(
    serve: Callable[..., HttpTransport],
) -> None:
    transport = serve(limits=Limits(max_sessions=3))
    clients = [Client(transport.port) for _ in range(4)]
    try:
        for client in clients[:3]:
            assert client.initialize()[0] == 200
        for client in clients[1:3]:
            assert client.call("ping")["result"] == {}  # clients[0] is the idlest now
        assert clients[3].initialize()[0] == 200  # a newcomer finds room
        status, _, body = clients[0].post({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert status == 404 and body["id"] == 9  # ended: its client initializes again
        assert clients[0].initialize()[0] == 200
        for client in clients[2:]:
            assert client.call("ping")["result"] == {}
    finally:
        for client in clients:
            client.close()


# -- one process, many loopback addresses --------------------------------------------------
LOOPBACK_RANGE = [f"127.0.0.{n}" for n in range(2, 11)]


def flood_from_loopback_range(port: int, per_address: int) -> list[Client]:
    """Sessions opened (and used) from 127.0.0.2..10, ``per_address`` from each."""
    flooders = []
    for source in LOOPBACK_RANGE:
        for _ in range(per_address):
            flooder = Client(port, source=source)
            flooders.append(flooder)
            assert flooder.initialize()[0] == 200
    return flooders


def test_one_process_filling_the_table_from_many_loopback_addresses_leaves_room(
    serve: Callable[..., HttpTransport],
) -> None:
    # 27 sessions for a table of 20, all used and none idle for long: on their own
    # allowances per address, they used to fill it, and every newcomer got 503.
    transport = serve(limits=Limits(max_sessions=20, session_burst=30, session_rate=0.001))
    flooders = flood_from_loopback_range(transport.port, per_address=3)
    newcomer = Client(transport.port)
    try:
        status, _, body = newcomer.initialize()
        assert status == 200, body
        assert newcomer.call("tools/list")["result"]["tools"][0]["name"] == "hold"
        assert len(transport.admission.last_used) == 20
        gone = [
            f for f in flooders if f.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})[0] == 404
        ]
        assert len(gone) == 27 + 1 - 20  # the least recently used made room, and said so
        assert gone == flooders[: len(gone)]
    finally:
        for client in (*flooders, newcomer):
            client.close()


def test_the_loopback_range_shares_one_allowance_of_new_sessions(
    serve: Callable[..., HttpTransport],
) -> None:
    transport = serve(limits=Limits(session_burst=9, session_rate=0.001))
    flooders = flood_from_loopback_range(transport.port, per_address=1)  # the allowance
    more = Client(transport.port, source="127.0.0.11")
    try:
        status, headers, body = more.initialize()  # another address, the same origin
        assert status == 429, body
        assert int(headers["Retry-After"]) >= 1
        assert len(transport.admission.last_used) == 9
    finally:
        for client in (*flooders, more):
            client.close()


def test_session_admission_refills_and_expires_only_unused_sessions() -> None:
    admission = SessionAdmission(
        Limits(max_sessions=2, session_burst=2, session_rate=1.0, session_idle_timeout=60)
    )
    assert admission.refusal("a", now=0) is None
    assert admission.refusal("a", now=0) is None
    refusal = admission.refusal("a", now=0)
    assert refusal is not None and refusal.status == 429 and refusal.retry_after == 1
    assert admission.refusal("b", now=0) is None  # another client has its own allowance
    assert admission.refusal("a", now=1.5) is None  # refilled
    admission.last_used.update({"s1": 0.0, "s2": 30.0})  # full; both streaming
    refusal = admission.refusal("b", now=50, busy=lambda sid: True)
    assert refusal is not None and refusal.status == 503 and refusal.retry_after == 10
    assert admission.expirable(now=50) is None
    assert admission.expirable(now=61) == "s1"
    assert admission.expirable(now=61, busy=lambda sid: sid == "s1") is None  # streaming
    assert admission.expirable(now=91, busy=lambda sid: sid == "s1") == "s2"
    admission.add("u1", "a")
    admission.add("u2", "b")
    admission.add("u3", "a")
    assert admission.oldest_unused("a") == "u1"
    admission.touch("u1")  # used: it no longer makes room
    assert admission.oldest_unused("a") == "u3"
    admission.forget("u3")
    assert admission.oldest_unused("a") is None


def test_every_loopback_address_is_one_origin_and_others_their_own() -> None:
    from mcp_notebook.transports.admission import origin_of

    loopback = ("127.0.0.1", "127.5.6.7", "::1", "::ffff:127.0.0.2", "fe80::1%eth0")
    assert {origin_of(address) for address in loopback[:4]} == {"loopback"}
    assert origin_of("::ffff:10.0.0.1") == origin_of("10.0.0.1") == "10.0.0.1"
    assert origin_of("10.0.0.2") != origin_of("10.0.0.1")
    assert origin_of(loopback[4]) == "fe80::1" and origin_of("") == ""


def test_a_full_table_ends_the_idlest_session_of_the_origin_holding_most() -> None:
    admission = SessionAdmission(Limits(max_sessions=4))
    for session_id, client in [("a1", "10.0.0.1"), ("b1", "127.0.0.2"), ("b2", "127.0.0.3")]:
        admission.add(session_id, client)
    admission.add("b3", "::1")
    admission.touch("b1")  # b2 is loopback's least recently used, a1 older but alone
    assert admission.room() == "b2"
    assert admission.room(busy=lambda sid: sid != "a1") == "a1"  # streams are kept
    assert admission.room(busy=lambda sid: True) is None
    assert admission.refusal("10.0.0.9", busy=lambda sid: True).status == 503


def test_limits_refuse_what_would_switch_a_bound_off() -> None:
    limits = Limits()
    limits.idle_timeout = 2
    for bad in (0, -1, float("nan"), None, "60"):
        with pytest.raises(ValueError, match="idle_timeout must be a positive number"):
            limits.idle_timeout = bad
    assert limits.idle_timeout == 2


# -- item 3: connection caps -------------------------------------------------------------
def test_at_the_cap_strangers_make_room_for_the_token_holder(
    serve: Callable[..., HttpTransport],
) -> None:
    transport = serve(limits=Limits(max_connections=8))
    strangers = idle_sockets(transport.port, 20)
    owner = Client(transport.port)
    try:
        assert owner.initialize()[0] == 200
        assert owner.call("ping")["result"] == {}
        wait_until(lambda: all(closed_by_server(s) for s in strangers[:13]), "the oldest to go")
        # More strangers come; the owner's idle keep-alive connection is never their room.
        strangers += idle_sockets(transport.port, 20)
        wait_until(lambda: sum(map(closed_by_server, strangers)) >= 33, "strangers to be shed")
        assert owner.call("ping")["result"] == {}
        assert len(transport.connections.open) <= 8
    finally:
        owner.close()
        for sock in strangers:
            sock.close()


def test_a_client_over_its_own_cap_leaves_other_clients_alone(
    serve: Callable[..., HttpTransport],
) -> None:
    transport = serve(limits=Limits(max_connections=100, max_connections_per_client=4))
    owners = [Client(transport.port) for _ in range(4)]
    try:
        for owner in owners:
            assert owner.initialize()[0] == 200
        # Its fifth connection takes the place of its own connection idle the longest.
        (extra,) = idle_sockets(transport.port, 1)
        wait_until(lambda: closed_by_server(owners[0].conn.sock), "its idlest one to make room")
        assert not closed_by_server(extra)
        other = Client(transport.port, source="127.0.0.2")
        assert other.initialize()[0] == 200
        for owner in [*owners[1:], other]:
            assert owner.call("ping")["result"] == {}
        assert transport.connections.per_client["127.0.0.1"] == 4
        other.close()
        extra.close()
    finally:
        for owner in owners:
            owner.close()


@pytest.mark.parametrize(
    "limits",
    [Limits(max_connections_per_client=4), Limits(max_connections=4)],
    ids=["per-client cap", "total cap"],
)
def test_a_token_holders_idle_keep_alive_connections_make_room_for_a_new_client(
    serve: Callable[..., HttpTransport], limits: Limits
) -> None:
    # A leaky pool: four connections that showed the token, then idle. Every loopback
    # client is one address, so before, every new local client was reset until they
    # timed out (60 s), and a ping every 59 s kept everyone out.
    transport = serve(limits=limits)
    pool = [Client(transport.port) for _ in range(4)]
    newcomer = Client(transport.port)
    try:
        for client in pool:
            assert client.initialize()[0] == 200
        assert newcomer.initialize()[0] == 200
        assert newcomer.call("ping")["result"] == {}
        assert closed_by_server(pool[0].conn.sock)  # idle the longest
        assert transport.connections.shed_idle == 1 and transport.connections.refused == 0
        for client in pool[1:]:
            assert client.call("ping")["result"] == {}
    finally:
        newcomer.close()
        for client in pool:
            client.close()


def test_a_connection_whose_next_request_is_arriving_is_not_idle(
    serve: Callable[..., HttpTransport],
) -> None:
    # Between two requests a connection is idle, until the next one's first bytes are in:
    # closing it then would lose a request its client already sent half of.
    transport = serve(limits=Limits(max_connections=2))
    body = json.dumps(initialize_message(1))
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{transport.port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
    )
    request = f"{head}Content-Length: {len(body)}\r\n\r\n{body}".encode()
    sending = socket.create_connection(("127.0.0.1", transport.port), timeout=30)
    idle = Client(transport.port)
    try:
        sending.sendall(request)
        assert sending.recv(65536).startswith(b"HTTP/1.1 200")
        assert idle.initialize()[0] == 200
        sending.sendall(request[:40])  # the next request's headers, half of them
        wait_until(
            lambda: any(
                getattr(r.stream, "_read_buffer_size", 0)
                for r in transport.connections.open.values()
            ),
            "the half request to be read",
        )
        (stranger,) = idle_sockets(transport.port, 1)
        wait_until(lambda: closed_by_server(idle.conn.sock), "the idle one to make room")
        assert not closed_by_server(sending)
        sending.sendall(request[40:])
        assert sending.recv(65536).startswith(b"HTTP/1.1 200")  # its request was kept
        stranger.close()
    finally:
        sending.close()
        idle.close()


def test_connections_lent_to_calls_count_against_the_cap(
    serve: Callable[..., HttpTransport],
) -> None:
    release.clear()
    holding.clear()
    transport = serve(limits=Limits(max_connections=2))
    caller, other = Client(transport.port), Client(transport.port)
    result: list[dict[str, Any]] = []
    try:
        assert caller.initialize()[0] == 200
        assert other.initialize()[0] == 200
        threads = [
            threading.Thread(
                target=lambda c=client: result.append(c.call("tools/call", {"name": "hold"}))
            )
            for client in (caller, other)
        ]
        threads[0].start()
        assert holding.wait(10), "the tool never started"
        assert transport.lent, "the call's connection was not lent"
        # The other's call waits behind it: no connection is idle, none can make room.
        threads[1].start()
        wait_until(
            lambda: all(r.idle_since is None for r in transport.connections.open.values()),
            "the second call to be in",
        )
        (stranger,) = idle_sockets(transport.port, 1)
        wait_until(lambda: closed_by_server(stranger), "the stranger to be refused")
        assert transport.connections.refused == 1
        release.set()
        for thread in threads:
            thread.join(30)
        assert [r["result"]["content"][0]["text"] for r in result] == ["released"] * 2
        assert caller.call("ping")["result"] == {}  # the connection came back, counted once
        assert len(transport.connections.open) == 2
        caller.close()
        wait_until(lambda: len(transport.connections.open) == 1, "the closed one to be forgotten")
        stranger.close()
    finally:
        release.set()
        caller.close()
        other.close()


def test_a_connect_flood_in_the_same_batch_does_not_shed_the_token_holder(
    serve: Callable[..., HttpTransport],
) -> None:
    transport = serve(limits=Limits(max_connections=8))
    strangers = idle_sockets(transport.port, 7)
    wait_until(lambda: len(transport.connections.open) == 7, "the strangers to be accepted")
    # Hold the server's loop, so that the owner and the flood behind it queue up and are
    # accepted in one batch, before the loop reads the owner's request.
    blocked, gate = threading.Event(), threading.Event()
    transport.call_soon(lambda: (blocked.set(), gate.wait(30)))
    assert blocked.wait(10)
    owner = socket.create_connection(("127.0.0.1", transport.port), timeout=10)
    flood: list[socket.socket] = []
    try:
        body = json.dumps(initialize_message(1)).encode()
        owner.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
            + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
            + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body
        )
        flood = idle_sockets(transport.port, 20)
        gate.set()
        status, _, reply = read_response(owner)
        assert status == 200 and reply["id"] == 1 and "result" in reply
        assert all(closed_by_server(s) for s in strangers)  # shed for the flood
        assert len(transport.connections.open) <= 8
    finally:
        gate.set()
        for sock in [owner, *strangers, *flood]:
            sock.close()


# -- bodies of requests that will be refused are not read -------------------------------
ANNOUNCED = 4 * 1024 * 1024  # the most a body may be: tornado would read it whole


def start_big_post(port: int, headers: str, path: str = "/mcp") -> socket.socket:
    """A POST announcing a 4 MiB body, of which 1 MiB is sent; the rest is held back."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        f"POST {path} HTTP/1.1\r\n{headers}Content-Type: application/json\r\n"
        f"Content-Length: {ANNOUNCED}\r\n\r\n"
    )
    sock.sendall(head.encode() + b"x" * (1024 * 1024))
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    """The whole response, up to the server closing the connection (a timeout fails)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, json.loads(body)


@pytest.mark.parametrize(
    ("headers", "path", "status", "message"),
    [
        ("Host: 127.0.0.1\r\n", "/mcp", 401, "Unauthorized: Missing bearer token"),
        ("Host: 127.0.0.1\r\nAuthorization: Bearer nope\r\n", "/mcp", 401, "Unauthorized"),
        (f"Host: evil.example\r\nAuthorization: Bearer {TOKEN}\r\n", "/mcp", 403, "Forbidden"),
        ("Host: 127.0.0.1\r\n", "/elsewhere", 404, "Not Found"),
    ],
)
def test_a_refused_request_is_answered_before_its_body_is_sent(
    serve: Callable[..., HttpTransport], headers: str, path: str, status: int, message: str
) -> None:
    transport = serve()
    sock = start_big_post(transport.port, headers, path)
    try:
        got, response_headers, body = read_response(sock)  # the other 3 MiB never sent
        assert got == status
        assert body["error"]["message"].startswith(message)
        assert response_headers["Content-Type"] == "application/json"
        assert ("WWW-Authenticate" in response_headers) == (status == 401)
    finally:
        sock.close()
    owner = Client(transport.port)
    try:
        assert owner.initialize()[0] == 200
    finally:
        owner.close()


# -- accepting without file descriptors --------------------------------------------------
class NoFilesLeft:
    """A listening socket whose accept() always fails with EMFILE, as at the fd limit."""

    def __init__(self) -> None:
        self.real = socket.create_server(("127.0.0.1", 0))
        self.accepts = 0

    def fileno(self) -> int:
        return self.real.fileno()

    def setblocking(self, flag: bool) -> None:
        self.real.setblocking(flag)

    def accept(self) -> tuple[socket.socket, Any]:
        self.accepts += 1
        raise OSError(errno.EMFILE, "Too many open files")

    def close(self) -> None:
        self.real.close()


async def test_out_of_fds_with_nothing_to_shed_pauses_accepting_instead_of_spinning() -> None:
    served: list[Any] = []
    limiter = ConnectionLimiter(Limits(), lambda *args: served.append(args), lambda *_: None)
    listening = NoFilesLeft()
    limiter.listen([listening], asyncio.get_running_loop())  # type: ignore[list-item]
    client = socket.create_connection(listening.real.getsockname())  # readable from now on
    try:
        for _ in range(200):  # turns of the loop: a readable socket would be seen each time
            await asyncio.sleep(0)
        assert listening.accepts == 1 and not served  # tried once, then paused
        # ... and tries again after the pause
        await until(lambda: listening.accepts >= 2, "accepting to resume", timeout=20)
    finally:
        limiter.close()
        client.close()
