"""Resource subscriptions as a flooding client makes them: a template matches endless
URIs, and each update is looked up among every subscription, so a session keeps 1,000."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session, modern
from tests.waiting import until

MAX_SUBSCRIPTIONS = 1000  # what a session keeps (protocol/session.py)
_ids = itertools.count(1)


def make() -> Server:
    app = NotebookMCP()

    @app.resource_template("notes://{day}", name="notes")
    def notes(day: str) -> str:
        return day

    return Server(app.registry, name="t", version="1")


async def send(server: Server, session: Session, method: str, params: Any) -> dict:
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    reply = await server.handle(message, session)
    assert reply is not None and reply["id"] == message["id"]
    return reply


async def test_a_session_s_subscriptions_are_bounded():
    server = make()
    session = server.open_session(Session())
    session.outbound = lambda message, related: True
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}}
    await send(server, session, "initialize", params)
    for day in range(MAX_SUBSCRIPTIONS):
        reply = await send(server, session, "resources/subscribe", {"uri": f"notes://{day}"})
        assert reply["result"] == {}
    refused = await send(server, session, "resources/subscribe", {"uri": "notes://one-more"})
    assert refused["error"]["code"] == -32000
    assert "Too many resource subscriptions (1000)" in refused["error"]["message"]
    again = await send(server, session, "resources/subscribe", {"uri": "notes://7"})
    assert again["result"] == {}  # one it keeps already: no new place needed
    await send(server, session, "resources/unsubscribe", {"uri": "notes://7"})
    freed = await send(server, session, "resources/subscribe", {"uri": "notes://one-more"})
    assert freed["result"] == {}
    assert len(session.subscriptions) == MAX_SUBSCRIPTIONS


async def test_a_listen_stream_keeps_the_first_subscriptions_once_each():
    server = make()
    uris = [f"notes://{n % 3000}" for n in range(9000)]  # 3,000 distinct, each thrice
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": meta},
    }
    session = modern.open_request(message)
    heard: list[dict] = []
    session.outbound = lambda m, related: heard.append(m) or True
    listen = asyncio.ensure_future(server.handle(message, session))
    await until(lambda: heard, "the acknowledgement")
    acknowledged = heard[0]["params"]["notifications"]["resourceSubscriptions"]
    assert acknowledged == [f"notes://{n}" for n in range(MAX_SUBSCRIPTIONS)]
    assert len(session.subscriptions) == MAX_SUBSCRIPTIONS
    server.end_listens()
    await asyncio.wait_for(listen, 30)
