"""What SSE streams keep for resumption stays within one budget (transports/sse.py).

Every reply echoes its request's id, and a client picks the id: before there was a
budget, 32 kept streams of a session with 4 MB ids held 123 MiB, per session, for as long
as the session lived. Now all streams of a server keep at most ``REPLAY_CHARACTERS``
together; the streams written to the longest ago lose their oldest events first, and the
event a stream just sent (its reply, maybe) is never dropped.
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.transports.http import HttpTransport
from mcp_notebook.transports.sse import KEEP_EVENTS, ReplayBudget, SseStream
from tests.messages import initialize_message


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str | None, str]] = []
        self.ended = False

    def write_event(self, event_id: str | None, data: str) -> None:
        self.events.append((event_id, data))

    def end_stream(self, retry_ms: int | None = None, last_id: str | None = None) -> None:
        self.ended = True


def reply(request_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {}}


def kept(*streams: SseStream) -> int:
    return sum(len(data) for stream in streams for _, data in stream.events)


def test_streams_together_keep_at_most_the_budget_and_the_oldest_lose_first():
    budget = ReplayBudget(limit=10_000)
    streams = [SseStream(f"p{n}", budget=budget) for n in range(6)]
    for stream in streams:
        stream.send(reply("x" * 3_000))  # each reply is about 3 kB
        stream.finish()
    assert budget.total == kept(*streams) <= 10_000
    assert [bool(stream.events) for stream in streams] == [False, False, False, True, True, True]


def test_the_event_just_sent_stays_even_when_it_alone_is_over_the_budget():
    budget = ReplayBudget(limit=1_000)
    old, new = SseStream("p1", budget=budget), SseStream("p2", budget=budget)
    old.send(reply("a" * 500))
    new.send(reply("b" * 5_000))
    assert not old.events and len(new.events) == 1
    assert budget.total == kept(new) > 1_000
    # A client that lost its connection before the reply still gets it on resuming.
    recorder = Recorder()
    new.finish()
    new.attach(recorder, after=0)
    assert [json.loads(data)["id"] for _, data in recorder.events] == ["b" * 5_000]
    assert recorder.ended


def test_a_stream_keeps_its_last_events_and_the_budget_counts_only_those():
    budget = ReplayBudget()
    stream = SseStream("p1", budget=budget)
    for n in range(KEEP_EVENTS + 10):
        stream.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})
    assert len(stream.events) == KEEP_EVENTS
    assert stream.events[0][0] == 11  # events 1-10 went
    assert budget.total == kept(stream) == stream.kept


def test_a_forgotten_stream_frees_what_it_kept():
    budget = ReplayBudget()
    one, two = SseStream("p1", budget=budget), SseStream("p2", budget=budget)
    one.send(reply("1" * 100))
    two.send(reply("2" * 100))
    budget.forget(one)
    budget.forget(one)  # twice (it had two keys in its session) frees it once
    assert not one.events and budget.total == kept(two)
    budget.forget(two)
    assert budget.total == 0


def test_a_reply_sent_after_its_stream_was_forgotten_is_not_kept():
    # A call whose client hung up before anything streamed: its stream leaves the session
    # table (forgotten) before the reply is sent on it. Before, that reply put the stream
    # back into the budget, where nothing would forget it again.
    budget = ReplayBudget()
    stream = SseStream("p1", budget=budget)
    budget.forget(stream)
    stream.send(reply("late"))
    stream.finish()
    assert budget.total == 0 and not stream.events and budget.kept_streams() == 0


# -- through the notebook's HTTP server --------------------------------------------------
@pytest.fixture
def transport(kernel_loop: asyncio.AbstractEventLoop) -> Iterator[HttpTransport]:
    mcp = NotebookMCP()

    @mcp.tool
    def noted(ctx: Context) -> str:
        """Logs to the client, so its reply goes on a stream that may be resumed."""
        ctx.info("working")
        return "done"

    served = HttpTransport(Server(mcp.registry, executor=LoopExecutor(kernel_loop)))
    served.replay = ReplayBudget(limit=1_000_000)  # the default is 64 Mi characters
    served.start()
    yield served
    served.stop()


def call_with_id(conn: http.client.HTTPConnection, session: str | None, request_id: Any) -> Any:
    message: dict[str, Any]
    if session is None:
        message = initialize_message(request_id)
    else:
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
        message["params"] = {"name": "noted", "arguments": {}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    conn.request("POST", "/mcp", json.dumps(message), headers)
    response = conn.getresponse()
    body = response.read()
    return response.getheader("Mcp-Session-Id"), body


def test_calls_with_huge_ids_in_many_sessions_keep_within_the_budget(transport):
    conn = http.client.HTTPConnection("127.0.0.1", transport.port, timeout=30)
    big = "i" * 200_000  # a body may hold 4 MiB: a client picks its ids
    for session_number in range(3):
        session, _ = call_with_id(conn, None, session_number)
        for call in range(5):
            _, body = call_with_id(conn, session, f"{big}{session_number}.{call}")
            assert b"working" in body and b'"done"' in body  # it streamed, then answered
    conn.close()
    streams = {id(s): s for per in transport.streams.values() for s in per.values()}
    assert transport.replay.total == kept(*streams.values())
    # 15 replies of 200 kB were sent; the budget plus one reply is all that stays.
    assert transport.replay.total <= 1_000_000 + 210_000
