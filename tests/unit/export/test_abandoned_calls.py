"""Calls nobody can receive do not starve live clients; the queue of calls is bounded.

The export's ASGI app is called directly, as an ASGI server would call it, with its
worker threads (export/runtime.py): a client that disconnects before its handshake-era
call got a worker has nobody to receive the reply (the app keeps no stream to resume),
so the call is dropped and never runs. The kernel's side (a real kernel, the tornado
transport, the monitor) is tests/kernel/test_abandoned_calls.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from mcp_notebook.export.runtime import DEFAULT_WORKERS, exported_app, server_of
from mcp_notebook.protocol import CallRecord
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.protocol.jsonrpc import SERVER_ERROR, RpcError
from mcp_notebook.transports.asgi import McpAsgiApp
from tests.export.messages import INITIALIZE
from tests.unit.export.test_export_asgi_hostile import post_scope
from tests.waiting import until

TOKEN = "abandoned-test-token"
DROPPED = "dropped: client gone"
ABANDONED = 30


class Client:
    """One ASGI request: its body at once, then connected until :meth:`hang_up`."""

    def __init__(self, app: McpAsgiApp, message: dict[str, Any], session: str | None) -> None:
        self.gone = asyncio.Event()
        extra = [(b"mcp-session-id", session.encode())] if session else []
        scope = post_scope(extra, token=TOKEN)
        self.sent: list[dict[str, Any]] = []
        self._body = [json.dumps(message).encode()]
        self.done = asyncio.ensure_future(app(scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if self._body:
            return {"type": "http.request", "body": self._body.pop(), "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def hang_up(self) -> None:
        self.gone.set()

    async def reply(self) -> tuple[dict[str, Any], dict[str, Any]]:
        await asyncio.wait_for(self.done, 30)
        (start,) = [m for m in self.sent if m["type"] == "http.response.start"]
        body = b"".join(m.get("body", b"") for m in self.sent if m["type"] != "http.response.start")
        return start, json.loads(body.removeprefix(b"event: message\ndata: "))


def call(name: str, request_id: int, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def test_export_calls_whose_clients_left_before_a_worker_was_free_never_run() -> None:
    app = exported_app("abandoned", {})
    release = threading.Event()
    ran: list[int] = []

    @app.tool
    def hold() -> str:
        release.wait(30)
        return "held"

    @app.tool
    def note(n: int) -> int:
        ran.append(n)
        return n

    asgi = McpAsgiApp(server_of(app), token=TOKEN)
    start, _ = await Client(asgi, INITIALIZE, None).reply()
    session = dict(start["headers"])[b"mcp-session-id"].decode()
    calls = app.calls
    try:
        holders = [Client(asgi, call("hold", 10 + n), session) for n in range(DEFAULT_WORKERS)]
        await until(
            lambda: sum(c.status == "running" for c in calls) == DEFAULT_WORKERS,
            "every worker holds a call",
        )
        gone = [Client(asgi, call("note", 100 + n, n=n), session) for n in range(ABANDONED)]
        await until(
            lambda: sum(c.status == "queued" for c in calls) == ABANDONED,
            "the calls wait for a worker",
        )
        for client in gone:
            client.hang_up()
        await until(
            lambda: sum(c.status == DROPPED for c in calls) == ABANDONED,
            "the calls nobody can receive are dropped",
        )
        live = Client(asgi, call("note", 999, n=999), session)
    finally:
        release.set()
    _, reply = await live.reply()
    assert reply["result"]["content"][0]["text"] == "999"
    assert ran == [999]
    for holder in holders:
        _, held = await holder.reply()
        assert held["result"]["content"][0]["text"] == "held"  # started calls ran on


async def test_a_hang_up_drops_only_its_own_call_not_anothers_with_the_same_id() -> None:
    """Two clients of one session may send the same id; the one that hangs up drops its own
    call only (the id named the other's call too, which then got no reply: a lost reply)."""
    app = exported_app("same_ids", {})
    release = threading.Event()

    @app.tool
    def hold() -> str:
        release.wait(30)
        return "held"

    @app.tool
    def note(n: int) -> int:
        return n

    asgi = McpAsgiApp(server_of(app), token=TOKEN)
    start, _ = await Client(asgi, INITIALIZE, None).reply()
    session = dict(start["headers"])[b"mcp-session-id"].decode()
    calls = app.calls
    try:
        holders = [Client(asgi, call("hold", 10 + n), session) for n in range(DEFAULT_WORKERS)]
        await until(
            lambda: sum(c.status == "running" for c in calls) == DEFAULT_WORKERS,
            "every worker holds a call",
        )
        first = Client(asgi, call("note", 500, n=1), session)
        second = Client(asgi, call("note", 500, n=2), session)
        await until(lambda: sum(c.status == "queued" for c in calls) == 2, "both calls wait")
        first.hang_up()
        await until(first.done.done, "the first client's exchange ended")
    finally:
        release.set()
    _, reply = await second.reply()
    assert reply["id"] == 500 and reply["result"]["content"][0]["text"] == "2"
    for holder in holders:
        await holder.reply()


async def test_the_kernel_takes_a_bounded_number_of_calls_at_once(kernel_loop) -> None:
    """Past ``max_waiting`` calls handed to the kernel's loop, a call is refused at once
    (-32000); a slot is free again as soon as a waiting call ends or is cancelled."""
    executor = LoopExecutor(kernel_loop, max_waiting=3)
    release = threading.Event()
    kernel_loop.call_soon_threadsafe(release.wait, 30)  # the "cell" holding the kernel
    waiting = [
        asyncio.ensure_future(executor.run(lambda: "ran", CallRecord("tools/call", "t", {}, "c")))
        for _ in range(3)
    ]
    await until(lambda: executor.handed == 3, "three calls are handed over")
    with pytest.raises(RpcError) as refused:
        await executor.run(lambda: "never", CallRecord("tools/call", "t", {}, "c"))
    assert refused.value.code == SERVER_ERROR
    assert "Too many calls (3)" in refused.value.message
    waiting[0].cancel()
    await until(lambda: executor.handed == 2, "the cancelled call gives its slot back")
    fourth = asyncio.ensure_future(executor.run(lambda: "fourth", None))
    release.set()
    assert await asyncio.gather(*waiting[1:], fourth) == ["ran", "ran", "fourth"]
    assert executor.handed == 0


def test_the_monitor_says_why_a_call_was_dropped() -> None:
    from mcp_notebook.ui.render import detail, row

    record = CallRecord("tools/call", "note", {"n": 1}, "raw 1")
    assert record.drop() is True
    assert record.status == DROPPED and record.drop() is False
    assert row(record).replace("\xa0", " ").endswith(DROPPED)
    assert "its client hung up, and nothing could receive the reply" in detail(record)
    started = CallRecord("tools/call", "note", {"n": 2}, "raw 1")
    assert started.set_status("running") is True
    assert started.drop() is False and started.status == "running"  # it runs on
