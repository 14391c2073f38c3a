"""Replies sent from the thread where user code ran (protocol/request.py), sans-IO.

A "kernel" thread runs its own loop, as the kernel's main thread does; the server runs on
the test's loop and hands user code to the kernel loop. An offered ReplyChannel must get the
exact reply ``handle`` returns, from the kernel thread, once; and only when nothing else
can be said on the request's stream.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session
from mcp_notebook.protocol.executor import LoopExecutor
from tests.messages import initialize_message
from tests.schema import validate_reply
from tests.waiting import until


class RecordingEarly:
    """A ReplyChannel that remembers where and what it was asked."""

    def __init__(self, server: Server, accept: bool = True) -> None:
        self.server, self.accept = server, accept
        self.armed_on: list[str] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []  # thread, reply

    def arm(self) -> bool:
        self.armed_on.append(threading.current_thread().name)
        return self.accept

    def send(self, reply: dict[str, Any]) -> bool:
        self.sent.append((threading.current_thread().name, reply))
        return True


mcp_under_test = NotebookMCP()


@mcp_under_test.tool
def add(a: int, b: int) -> int:
    return a + b


@mcp_under_test.tool
async def later(a: int) -> int:
    await asyncio.sleep(0)
    return a * 2


@mcp_under_test.tool
def broken() -> int:
    raise RuntimeError("no luck")


@mcp_under_test.tool
def chatty(ctx: Context) -> str:
    return "said nothing"


@pytest.fixture
def server(kernel_loop: asyncio.AbstractEventLoop) -> Server:
    return Server(mcp_under_test.registry, executor=LoopExecutor(kernel_loop))


async def session_of(server: Server) -> Session:
    session = Session()
    init = initialize_message(0)
    await server.handle(init, session)
    await server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


async def kernel_thread_done(kernel_loop: asyncio.AbstractEventLoop) -> None:
    """A barrier: the kernel thread has finished what was queued on it before this call.

    The call runs (or was dropped) on that thread and an early reply is sent from it, so
    once a callback queued after it has run, a wrong early reply would be in ``sent``.
    """
    done = threading.Event()
    kernel_loop.call_soon_threadsafe(done.set)
    assert await asyncio.to_thread(done.wait, 10)


def call(name: str, request_id: int = 1, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    ("tool", "arguments", "text"),
    [("add", {"a": 2, "b": 3}, "5"), ("later", {"a": 21}, "42"), ("broken", {}, "no luck")],
)
async def test_the_reply_leaves_from_the_kernel_thread_once(
    server: Server, tool: str, arguments: dict[str, Any], text: str
) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    reply = await server.handle(call(tool, **arguments), session, early)
    validate_reply("tools/call", reply)
    assert text in reply["result"]["content"][0]["text"]
    assert early.armed_on == [threading.current_thread().name]  # armed on the server's loop
    assert early.sent == [("kernel-main", reply)]
    # The call's record is final by the time the server is done with the request.
    assert server.calls[-1].status == ("error" if tool == "broken" else "done")


async def test_tools_that_may_stream_are_answered_the_usual_way(server: Server) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    reply = await server.handle(call("chatty"), session, early)
    assert reply["result"]["content"][0]["text"] == "said nothing"
    assert early.armed_on == [] and early.sent == []


async def test_requests_without_user_code_never_arm(server: Server) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    bad = await server.handle(call("add", a="two", b=3), session, early)
    assert bad["result"]["isError"] is True
    unknown = await server.handle(call("missing"), session, early)
    assert unknown["error"]["code"] == -32602
    for method in ("ping", "tools/list"):
        await server.handle({"jsonrpc": "2.0", "id": 9, "method": method}, session, early)
    assert early.armed_on == [] and early.sent == []


async def test_a_transport_that_declines_keeps_the_reply(server: Server) -> None:
    session = await session_of(server)
    early = RecordingEarly(server, accept=False)
    reply = await server.handle(call("add", a=1, b=1), session, early)
    assert reply["result"]["content"][0]["text"] == "2"
    assert len(early.armed_on) == 1 and early.sent == []


async def test_a_call_cancelled_before_it_runs_sends_nothing(
    server: Server, kernel_loop: asyncio.AbstractEventLoop
) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    release = threading.Event()
    kernel_loop.call_soon_threadsafe(release.wait, 10)  # a "cell" holds the kernel thread
    pending = asyncio.ensure_future(server.handle(call("add", 5, a=1, b=2), session, early))
    await until(lambda: early.armed_on, "the early reply to be armed")
    cancel = {"method": "notifications/cancelled", "params": {"requestId": 5}}
    await server.handle({"jsonrpc": "2.0", **cancel}, session)
    assert await asyncio.wait_for(pending, 5) is None  # no response is due
    release.set()
    await kernel_thread_done(kernel_loop)
    assert early.sent == []
    assert server.calls[-1].status == "cancelled"


hold = threading.Event()
started = threading.Event()


@mcp_under_test.tool
def held() -> str:
    started.set()
    hold.wait(10)  # runs on, on the kernel thread, after the client has cancelled
    return "too late"


async def test_a_call_cancelled_while_it_runs_sends_nothing(
    server: Server, kernel_loop: asyncio.AbstractEventLoop
) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    hold.clear()
    started.clear()
    pending = asyncio.ensure_future(server.handle(call("held", 6), session, early))
    assert await asyncio.to_thread(started.wait, 10)
    cancel = {"method": "notifications/cancelled", "params": {"requestId": 6}}
    await server.handle({"jsonrpc": "2.0", **cancel}, session)
    assert await asyncio.wait_for(pending, 5) is None
    hold.set()  # the tool now returns: its answer must not go out
    await kernel_thread_done(kernel_loop)
    assert early.armed_on and early.sent == []
    assert server.calls[-1].status == "cancelled"


async def test_a_cancel_stops_the_reply_before_the_server_loop_turns(
    server: Server, kernel_loop: asyncio.AbstractEventLoop
) -> None:
    """The cancel notification closes the request's reply at once, on the server's thread:
    a tool that ends right after it, before the server's loop delivers the cancellation
    to the waiting task, must not answer from the kernel thread."""
    session = await session_of(server)
    early = RecordingEarly(server)
    hold.clear()
    started.clear()
    pending = asyncio.ensure_future(server.handle(call("held", 7), session, early))
    assert await asyncio.to_thread(started.wait, 10)
    cancel = {"method": "notifications/cancelled", "params": {"requestId": 7}}
    await server.handle({"jsonrpc": "2.0", **cancel}, session)  # does not yield
    # Still without yielding to this loop: the tool ends and the kernel thread finishes it.
    finished = threading.Event()
    hold.set()
    kernel_loop.call_soon_threadsafe(finished.set)  # runs after the tool's callback
    assert finished.wait(10)
    assert early.sent == []
    assert await asyncio.wait_for(pending, 5) is None
    assert server.calls[-1].status == "cancelled"


def test_a_request_is_replied_to_once_whoever_races() -> None:
    """reply() from two threads at once: exactly one reaches the channel."""
    from mcp_notebook.protocol import RequestContext

    for _ in range(200):
        early = RecordingEarly(None)  # type: ignore[arg-type]
        request = RequestContext(Session(), early)
        request.method = "tools/call"
        assert request.offer_channel()
        go = threading.Barrier(2)

        def answer(n: int, request: RequestContext = request, go: threading.Barrier = go) -> None:
            go.wait()
            request.reply({"jsonrpc": "2.0", "id": 1, "result": {"n": n}})

        threads = [threading.Thread(target=answer, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(early.sent) == 1
        assert request.reply({"jsonrpc": "2.0", "id": 1, "result": {}}) is False
        assert len(early.sent) == 1


def test_no_reply_leaves_after_a_cancel() -> None:
    from mcp_notebook.protocol import RequestContext

    early = RecordingEarly(None)  # type: ignore[arg-type]
    request = RequestContext(Session(), early)
    request.method = "tools/call"
    assert request.offer_channel()
    request.cancel(by_client=True)
    assert request.reply({"jsonrpc": "2.0", "id": 1, "result": {}}) is False
    assert early.sent == [] and request.cancelled and request.by_client


def test_methods_without_user_code_are_not_offered_the_channel() -> None:
    from mcp_notebook.protocol import RequestContext

    for method in ("completion/complete", "ping", "tools/list", "initialize"):
        early = RecordingEarly(None)  # type: ignore[arg-type]
        request = RequestContext(Session(), early)
        request.method = method
        assert not request.offer_channel() and early.armed_on == []


@mcp_under_test.resource(uri="memo://note")
def note() -> str:
    return "a note"


@mcp_under_test.resource(uri="memo://broken")
def broken_note() -> str:
    raise RuntimeError("unreadable")


@mcp_under_test.resource(uri="memo://later")
async def later_note() -> str:
    await asyncio.sleep(0)
    return "later"


@mcp_under_test.prompt
def greet(name: str) -> str:
    return f"Hello {name}"


@mcp_under_test.prompt
def greet_chatty(name: str, ctx: Context) -> str:
    return f"Hi {name}"


def read(uri: str, request_id: int = 1) -> dict[str, Any]:
    params = {"uri": uri}
    return {"jsonrpc": "2.0", "id": request_id, "method": "resources/read", "params": params}


def get_prompt(prompt: str, request_id: int = 1, **arguments: str) -> dict[str, Any]:
    params = {"name": prompt, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "prompts/get", "params": params}


@pytest.mark.parametrize(
    ("message", "status"),
    [
        (read("memo://note"), "done"),
        (read("memo://later"), "done"),
        (read("memo://broken"), "error"),
        (get_prompt("greet", name="Ada"), "done"),
    ],
    ids=["resource", "async resource", "failing resource", "prompt"],
)
async def test_reads_and_prompts_leave_from_the_kernel_thread_once(
    server: Server, message: dict[str, Any], status: str
) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    reply = await server.handle(message, session, early)
    validate_reply(message["method"], reply)
    assert early.sent == [("kernel-main", reply)]
    assert server.calls[-1].status == status
    if status == "error":
        assert reply["error"]["code"] == -32603 and "unreadable" in reply["error"]["message"]
        assert isinstance(server.calls[-1].error, RuntimeError)  # the original, for %debug


async def test_a_prompt_that_may_stream_is_answered_the_usual_way(server: Server) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    reply = await server.handle(get_prompt("greet_chatty", name="Ada"), session, early)
    assert "Hi Ada" in str(reply["result"])
    assert early.armed_on == [] and early.sent == []


async def test_unknown_resources_and_bad_prompt_arguments_never_arm(server: Server) -> None:
    session = await session_of(server)
    early = RecordingEarly(server)
    missing = await server.handle(read("nothing://none"), session, early)
    assert missing["error"]["code"] == -32002
    unnamed = await server.handle(get_prompt("greet"), session, early)
    assert unnamed["error"]["code"] == -32602
    assert early.armed_on == [] and early.sent == []


@mcp_under_test.resource_template("memo://{day}")
async def memo_of(day: str) -> str:
    await asyncio.sleep(0)
    return f"memo of {day}"


@pytest.mark.parametrize(
    ("uri", "text"), [("memo://later", "later"), ("memo://mon", "memo of mon")]
)
async def test_async_readers_are_awaited(server: Server, uri: str, text: str) -> None:
    session = await session_of(server)
    reply = await server.handle(read(uri), session)
    assert reply["result"]["contents"][0]["text"] == text
