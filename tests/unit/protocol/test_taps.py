"""The server's message taps (``Server.add_tap``) and the trace view built on them, sans-IO.

A tap sees every message the server receives and sends: requests in, the replies
``handle`` returns (also one that already left early from the kernel thread),
notifications and requests sessions send. It only watches: a failing tap changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session, modern
from mcp_notebook.ui.trace import Trace
from tests.messages import initialize_message

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "stateless-client", "version": "3"},
    "io.modelcontextprotocol/logLevel": "info",
}

app = NotebookMCP()


@app.tool
def add(a: int, b: int) -> int:
    return a + b


@app.tool
def chatty(ctx: Context) -> str:
    ctx.info("working on it")
    return "done"


class Seen:
    """A tap that keeps (direction, what) of each message: a method, or the reply's id."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Any]] = []

    def __call__(self, direction: str, session: Session, message: Any) -> None:
        self.messages.append((direction, message.get("method", ("reply", message.get("id")))))


class Early:
    """A ReplyChannel that takes the reply the kernel thread would write."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def arm(self) -> bool:
        return True

    def send(self, reply: dict[str, Any]) -> bool:
        self.sent.append(reply)
        return True


def call(name: str, request_id: Any, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def opened(server: Server, sent: list[Any]) -> Session:
    session = Session(outbound=lambda message, related: sent.append(message) or True)
    server.open_session(session)
    await server.handle(initialize_message(0), session)
    await server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


async def test_a_tap_sees_requests_replies_and_what_sessions_send():
    server, seen, sent = Server(app.registry), Seen(), []
    server.add_tap(seen)
    session = await opened(server, sent)
    reply = await server.handle(call("add", 1, a=20, b=22), session)
    server.list_changed("tools")
    assert seen.messages == [
        ("in", "initialize"),
        ("out", ("reply", 0)),
        ("in", "notifications/initialized"),
        ("in", "tools/call"),
        ("out", ("reply", 1)),
        ("out", "notifications/tools/list_changed"),
    ]
    assert reply is not None and reply["result"]["content"][0]["text"] == "42"
    assert sent == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    server.remove_tap(seen)
    await server.handle(call("add", 2, a=1, b=1), session)
    server.list_changed("tools")
    assert len(seen.messages) == 6  # removed: it sees nothing more


async def test_a_tap_sees_a_reply_that_left_early():
    server, seen, early = Server(app.registry), Seen(), Early()
    server.add_tap(seen)
    session = await opened(server, [])
    reply = await server.handle(call("add", 5, a=2, b=3), session, early)
    assert early.sent == [reply]  # the early path was taken
    assert seen.messages[-2:] == [("in", "tools/call"), ("out", ("reply", 5))]


async def test_a_tap_sees_what_a_2026_request_sends_on_its_own_stream():
    server, seen, sent = Server(app.registry), Seen(), []
    server.add_tap(seen)
    message = call("chatty", 9)
    message["params"]["_meta"] = MODERN_META
    session = modern.open_request(message)
    session.outbound = lambda outgoing, related: sent.append(outgoing) or True
    reply = await server.handle(message, session)
    assert reply is not None and reply["result"]["content"][0]["text"] == "done"
    assert [m["method"] for m in sent] == ["notifications/message"]
    assert seen.messages == [
        ("in", "tools/call"),
        ("out", "notifications/message"),
        ("out", ("reply", 9)),
    ]


async def test_a_failing_tap_changes_nothing(caplog: pytest.LogCaptureFixture):
    def broken(direction: str, session: Session, message: Any) -> None:
        raise RuntimeError("a bug in an observer")

    server, seen, sent = Server(app.registry), Seen(), []
    server.add_tap(broken)
    server.add_tap(seen)
    with caplog.at_level(logging.ERROR):
        session = await opened(server, sent)
        reply = await server.handle(call("add", 3, a=1, b=2), session)
        server.list_changed("tools")
    assert reply is not None and reply["result"]["content"][0]["text"] == "3"
    assert len(sent) == 1 and len(seen.messages) == 6  # the others still see everything
    # Logged in full once, not at the rate of the traffic (it failed six times).
    assert caplog.text.count("a message tap failed") == 1


async def test_the_trace_records_traffic_while_enabled_and_stateless_clients_always():
    server, changes = Server(app.registry), []
    trace = Trace(lambda: changes.append(1))
    trace.attach(server)
    session = await opened(server, [])
    await server.handle(call("add", 1, a=1, b=1), session)
    assert trace.snapshot() == [] and changes == []  # off: nothing recorded

    trace.enabled = True
    await server.handle(call("add", 2, a=20, b=22), session)
    server.list_changed("tools")
    entries = [(arrow, who, text) for _, arrow, who, text in trace.snapshot()]
    assert [(arrow, who) for arrow, who, _ in entries] == [("→", "raw-http-test 1")] + [
        ("←", "raw-http-test 1")
    ] * 2
    assert '"method": "tools/call"' in entries[0][2]
    assert '"text": "42"' in entries[1][2]
    assert "notifications/tools/list_changed" in entries[2][2]
    assert len(changes) == 3

    trace.enabled = False
    message = call("add", 3, a=1, b=1)
    message["params"]["_meta"] = MODERN_META
    await server.handle(message, modern.open_request(message))
    assert len(trace.snapshot()) == 3
    (client,) = trace.stateless_clients()
    assert client.client_info["name"] == "stateless-client"

    trace.enabled = True
    server.remove_tap(trace.tap)  # another bound-method object than the one added
    await server.handle(call("add", 4, a=1, b=1), session)
    assert len(trace.snapshot()) == 3


async def test_a_trace_that_is_off_leaves_the_server_untapped():
    # The notebook attaches a trace to every server it starts; off (the default), its
    # requests must take the untapped path, and it still remembers stateless clients.
    server = Server(app.registry)
    trace = Trace(lambda: None)
    trace.attach(server)
    assert server.taps == []
    message = call("add", 5, a=1, b=1)
    message["params"]["_meta"] = MODERN_META
    await server.handle(message, modern.open_request(message))
    assert [c.client_info["name"] for c in trace.stateless_clients()] == ["stateless-client"]
    trace.enabled = True
    assert server.taps == [trace.tap]
    trace.enabled = False
    assert server.taps == []
