"""A call waiting behind a running cell says so (protocol/queueing.py), sans-IO.

A "kernel" thread runs its own loop, as the kernel's main thread does; a "cell" is a
callback that holds that loop until the test releases it, with the CellWatch saying which
cell runs, as the kernel's IPython events do. The server runs on the test's loop.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session, queueing
from mcp_notebook.protocol.executor import LoopExecutor
from mcp_notebook.protocol.progress import ProgressLine
from mcp_notebook.protocol.queueing import Cell, CellWatch, Waiting, waiting_message
from mcp_notebook.protocol.request import RequestContext
from tests.schema import validate_notification
from tests.unit.protocol.test_early_reply import (
    RecordingEarly,
    call,
    kernel_thread_done,
    session_of,
)

app = NotebookMCP()


@app.tool
def add(a: int, b: int) -> int:
    return a + b


@app.tool
def steps(ctx: Context) -> str:
    ctx.report_progress(1, message="working")
    return "stepped"


@app.tool
def counts(ctx: Context) -> str:
    for n in range(3):  # from 0: no more than what the wait's first notice said
        ctx.report_progress(n, total=2)
    return "counted"


class BlockingCell:
    """Holds the kernel loop, as a running cell does, until released."""

    def __init__(self, loop: asyncio.AbstractEventLoop, watch: CellWatch, number: int | None):
        self.loop, self.watch, self.number = loop, watch, number
        self.running, self.release = threading.Event(), threading.Event()

    def __enter__(self) -> BlockingCell:
        self.loop.call_soon_threadsafe(self._run)
        assert self.running.wait(10)
        return self

    def _run(self) -> None:
        self.watch.started()
        self.watch.numbered(self.number)
        self.running.set()
        self.release.wait(30)
        self.watch.ended()

    def __exit__(self, *exc: Any) -> None:
        self.release.set()


@pytest.fixture
def watch() -> CellWatch:
    return CellWatch()


@pytest.fixture
def server(kernel_loop: asyncio.AbstractEventLoop, watch: CellWatch) -> Server:
    return Server(app.registry, executor=LoopExecutor(kernel_loop, watch))


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Notices every 20 ms: repeats are seen without a long test (the default is 5 s)."""
    monkeypatch.setattr(queueing, "GRACE", 0.01)
    monkeypatch.setattr(queueing, "INTERVAL", 0.02)
    yield


def outbox(session: Session) -> list[tuple[dict[str, Any], Any]]:
    sent: list[tuple[dict[str, Any], Any]] = []
    session.outbound = lambda message, related: sent.append((message, related)) or True
    return sent


def progress_of(sent: list[tuple[dict[str, Any], Any]]) -> list[dict[str, Any]]:
    return [m["params"] for m, _ in sent if m.get("method") == "notifications/progress"]


def live_timers(loop: asyncio.AbstractEventLoop) -> list[Any]:
    """Timers of waiting calls still armed on ``loop``."""
    scheduled = getattr(loop, "_scheduled", [])
    return [
        h
        for h in scheduled
        if not h.cancelled() and isinstance(getattr(h._callback, "__self__", None), Waiting)
    ]


def with_token(message: dict[str, Any], token: Any) -> dict[str, Any]:
    message["params"]["_meta"] = {"progressToken": token}
    return message


async def test_a_queued_call_with_a_token_reports_its_wait_until_it_runs(
    server, watch, kernel_loop, quick
):
    session = await session_of(server)
    sent = outbox(session)
    early = RecordingEarly(server)
    with BlockingCell(kernel_loop, watch, 7):
        task = asyncio.ensure_future(
            server.handle(with_token(call("add", 5, a=2, b=3), "tok"), session, early)
        )
        notices = await _until(lambda: len(progress_of(sent)) >= 3, "three notices")
        assert not task.done()
        record = server.calls[-1]
        assert (record.status, record.behind) == ("queued", "cell [7]")
    reply = await task
    assert reply["result"]["content"][0]["text"] == "5"
    notices = progress_of(sent)
    for params in notices:
        assert params["progressToken"] == "tok"
        assert params["message"] == "waiting for the running cell [7]"
    values = [p["progress"] for p in notices]
    assert values == sorted(set(values))  # progress increases
    assert all(related == 5 for m, related in sent)  # on the call's own stream
    validate_notification(sent[0][0])
    # The wait is told on the request's stream, so its reply does not leave early.
    assert early.armed_on == [] and early.sent == []
    assert live_timers(asyncio.get_running_loop()) == []
    count = len(notices)
    await kernel_thread_done(kernel_loop)
    await asyncio.sleep(0)
    assert len(progress_of(sent)) == count  # nothing after it ran


async def test_without_a_token_only_the_record_says_it(server, watch, kernel_loop, quick):
    session = await session_of(server)
    sent = outbox(session)
    early = RecordingEarly(server)
    with BlockingCell(kernel_loop, watch, 3):
        task = asyncio.ensure_future(server.handle(call("add", 6, a=1, b=1), session, early))
        await _until(lambda: server.calls and server.calls[-1].behind, "the record marked")
        # A call with a token queued after it: its notices come after the first one's
        # timer fired, which would have sent something by then.
        second = asyncio.ensure_future(
            server.handle(with_token(call("add", 7, a=1, b=2), "t2"), session)
        )
        await _until(lambda: len(progress_of(sent)) >= 2, "the second call's notices")
    assert (await task)["result"]["content"][0]["text"] == "2"
    await second
    assert {p["progressToken"] for p in progress_of(sent)} == {"t2"}
    assert server.calls[-2].behind == "cell [3]"
    assert early.armed_on == ["MainThread"] and len(early.sent) == 1  # the fast path stays


async def test_a_call_that_does_not_wait_says_nothing_and_arms_no_timer(server, kernel_loop):
    session = await session_of(server)
    sent = outbox(session)
    reply = await server.handle(with_token(call("add", 8, a=1, b=1), "t"), session)
    assert reply["result"]["content"][0]["text"] == "2"
    assert progress_of(sent) == [] and server.calls[-1].behind is None
    assert live_timers(asyncio.get_running_loop()) == []


async def test_a_context_tool_hears_the_wait_then_its_own_progress(
    server, watch, kernel_loop, quick
):
    session = await session_of(server)
    sent = outbox(session)
    with BlockingCell(kernel_loop, watch, None):
        task = asyncio.ensure_future(server.handle(with_token(call("steps", 9), 1), session))
        await _until(lambda: progress_of(sent), "a notice")
    assert (await task)["result"]["content"][0]["text"] == "stepped"
    await _until(lambda: progress_of(sent)[-1]["message"] == "working", "the tool's progress")
    messages = [p["message"] for p in progress_of(sent)]
    assert set(messages[:-1]) == {"waiting for the running cell"}  # a cell with no number
    assert server.calls[-1].behind == "a cell"


async def test_the_waits_notices_and_the_tools_own_progress_increase_together(
    server, watch, kernel_loop, quick
):
    session = await session_of(server)
    sent = outbox(session)
    with BlockingCell(kernel_loop, watch, 3):
        task = asyncio.ensure_future(server.handle(with_token(call("counts", 4), "c"), session))
        await _until(lambda: len(progress_of(sent)) >= 2, "two notices")
    assert (await task)["result"]["content"][0]["text"] == "counted"
    await _until(lambda: progress_of(sent)[-1].get("total") is not None, "the tool's progress")
    notices = progress_of(sent)
    values = [p["progress"] for p in notices]
    assert all(a < b for a, b in itertools.pairwise(values)), values
    own = [p for p in notices if "total" in p]
    assert len(own) == 3 and [p["progress"] / p["total"] for p in own] == pytest.approx(
        [0, 0.5, 1], abs=1e-3
    )
    for message, _ in sent:
        validate_notification(message)


def test_a_notice_between_a_tools_steps_shifts_the_steps_after_it():
    line = ProgressLine()
    assert line.own(5, 10) == (5, 10)  # nothing said before it: as the tool said it
    paused = line.notice()  # "paused at a breakpoint" in the middle
    assert paused > 5
    later = line.own(5.0001, 10)
    assert later[0] > paused and later[0] / later[1] == pytest.approx(0.5, abs=1e-3)
    done, total = line.own(10, 10)
    assert done == total  # still ends at 100 %


async def test_a_call_during_an_awaiting_cell_runs_at_once_unmarked(
    server, watch, kernel_loop, monkeypatch
):
    # A cell that awaits leaves the kernel's loop free: the watch says it runs, yet the
    # call starts at once. Within the grace nothing is told and the record is not marked.
    monkeypatch.setattr(queueing, "GRACE", 30.0)
    session = await session_of(server)
    sent = outbox(session)
    watch.started()
    watch.numbered(9)
    try:
        reply = await server.handle(with_token(call("add", 11, a=2, b=2), "g"), session)
    finally:
        watch.ended()
    assert reply["result"]["content"][0]["text"] == "4"
    assert progress_of(sent) == [] and server.calls[-1].behind is None
    assert live_timers(asyncio.get_running_loop()) == []


async def test_cancelling_a_queued_call_stops_its_notices(server, watch, kernel_loop, quick):
    session = await session_of(server)
    sent = outbox(session)
    with BlockingCell(kernel_loop, watch, 4):
        task = asyncio.ensure_future(
            server.handle(with_token(call("add", 10, a=1, b=1), "c"), session)
        )
        await _until(lambda: progress_of(sent), "a notice")
        cancel = {"requestId": 10, "reason": "gave up"}
        await server.handle(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}, session
        )
        assert await task is None  # a cancelled request gets no reply
        assert live_timers(asyncio.get_running_loop()) == []
        count = len(progress_of(sent))
        assert server.calls[-1].status == "cancelled"
    await kernel_thread_done(kernel_loop)
    assert len(progress_of(sent)) == count


async def test_many_queued_then_run_calls_leave_no_timers_behind(server, watch, kernel_loop, quick):
    session = await session_of(server)
    sent = outbox(session)
    loop = asyncio.get_running_loop()
    with BlockingCell(kernel_loop, watch, 12):
        tasks = [
            asyncio.ensure_future(
                server.handle(with_token(call("add", 100 + i, a=i, b=0), f"k{i}"), session)
            )
            for i in range(200)
        ]
        await _until(lambda: len(live_timers(loop)) == 200, "200 waiting calls, one timer each")
        await _until(
            lambda: len({p["progressToken"] for p in progress_of(sent)}) == 200, "all told"
        )
    replies = await asyncio.gather(*tasks)
    assert [r["result"]["content"][0]["text"] for r in replies] == [str(i) for i in range(200)]
    assert live_timers(loop) == []
    gc.collect()
    assert [o for o in gc.get_objects() if isinstance(o, Waiting)] == []


def test_the_watch_follows_nested_and_empty_cells():
    watch = CellWatch()
    watch.ended()  # an empty cell ends without starting
    assert watch.now is None
    watch.started()
    watch.numbered(5)
    watch.started()  # the cell runs another one (%run)
    watch.numbered(None)
    assert watch.now == Cell(5)
    watch.ended()
    assert watch.now == Cell(5)
    watch.ended()
    assert watch.now is None
    assert waiting_message(Cell(5)) == "waiting for the running cell [5]"
    assert waiting_message(None) == "waiting for the kernel"


async def _until(condition, what: str, timeout: float = 30) -> Any:
    from tests.waiting import until

    return await until(condition, what, timeout)


@pytest.mark.parametrize(("sent", "first"), [(3, 3.001), (2.5, 2.501), ("3", 0.0), (True, 0.0)])
def test_the_line_starts_above_what_the_bridge_says_it_sent(sent, first):
    request = RequestContext(Session())
    request.params = {"_meta": {"progressToken": "t", "mcp-notebook/progressSent": sent}}
    assert request.progress_line.notice() == first
