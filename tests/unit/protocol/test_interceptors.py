"""tools/call's chain of interceptors (protocol/interceptors.py, protocol/toolchain.py), sans-IO.

What a user of the server relies on: an interceptor plugged in before the record
(authorization) refuses a call before anything of it runs or is recorded, whichever way
the tool is reached; one plugged in around the run (tracing) sees every recorded call to
its end; a feature switched on or off (the confirmation hook) holds from the next call;
an executor that declares only ``run`` serves calls and tasks (the core asks nothing it
does not declare).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session
from mcp_notebook.protocol.confirmation import Confirmer
from mcp_notebook.protocol.executor import ExecutorBase, settle
from mcp_notebook.protocol.interceptors import Next, ToolCall
from mcp_notebook.protocol.jsonrpc import RpcError
from tests.waiting import until

_ids = itertools.count(1)
FORBIDDEN = -32003  # what the test's authorization answers (a server error of its own)


def notebook(ran: list[str]) -> NotebookMCP:
    mcp = NotebookMCP()

    @mcp.tool
    def add(a: int, b: int) -> int:
        ran.append("add")
        return a + b

    @mcp.tool
    def secret() -> str:
        ran.append("secret")
        return "the secret"

    @mcp.tool
    def broken() -> str:
        raise ValueError("no")

    @mcp.tool(confirm=True)
    def drop(table: str) -> str:
        ran.append("drop")
        return f"dropped {table}"

    @mcp.tool
    async def slow() -> str:
        ran.append("slow")
        await asyncio.sleep(60)
        return "slept"

    return mcp


async def call(server: Server, session: Session, name: str, **params: Any) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": name, **params},
    }
    reply = await server.handle(message, session)
    assert reply is not None
    return reply


def session(version: str = "2025-06-18") -> Session:
    return Session(initialized=True, protocol_version=version)


def refusing(name: str) -> Callable[[ToolCall, Next], Any]:
    def authorize(tool_call: ToolCall, next: Next) -> Any:
        if tool_call.name == name:
            raise RpcError(FORBIDDEN, f"Not allowed: {name}")
        return next(tool_call)

    return authorize


async def test_a_call_refused_before_the_record_never_runs_nor_is_recorded_by_either_way():
    ran: list[str] = []
    server = Server(notebook(ran).registry, dispatcher=True)
    server.intercept(refusing("secret"), before_record=True)
    client = session()

    direct = await call(server, client, "secret")
    through = await call(
        server, client, "call_notebook_tool", arguments={"name": "secret", "arguments": {}}
    )

    for reply in (direct, through):
        assert reply["error"] == {"code": FORBIDDEN, "message": "Not allowed: secret"}
    assert ran == []
    assert [r.target for r in server.calls] == []
    # Another tool is not touched, and a name nobody registered is still unknown (-32602).
    added = await call(server, client, "add", arguments={"a": 2, "b": 3})
    assert added["result"]["structuredContent"] == {"result": 5}
    assert (await call(server, client, "nope"))["error"]["code"] == -32602
    assert ran == ["add"] and [r.target for r in server.calls] == ["add"]


async def test_an_interceptor_around_the_run_sees_every_recorded_call_to_its_end():
    ran: list[str] = []
    server = Server(notebook(ran).registry)
    seen: list[tuple[str, str, bool]] = []

    async def trace(tool_call: ToolCall, next: Next) -> dict[str, Any]:
        assert tool_call.record is not None  # around the run: the call is recorded
        result = await next(tool_call)
        seen.append((tool_call.name, tool_call.record.status, bool(result.get("isError"))))
        return result

    server.intercept(trace)
    client = session()
    await call(server, client, "add", arguments={"a": 1, "b": 2})
    failed = await call(server, client, "broken")
    bad = await call(server, client, "add", arguments={"a": "x"})  # refused by its schema

    assert failed["result"]["isError"] and bad["result"]["isError"]
    # The schema's refusal ends the call before it runs: nothing around the run sees it.
    assert seen == [("add", "done", False), ("broken", "error", True)]


@dataclass
class Policy:
    """What the Confirmer reads of the app: headless, so a marked tool is refused."""

    confirm_policy: Any = "marked"
    confirm_timeout: float = 30.0
    ui: Any = None
    confirm_headless: str = "deny"


async def test_the_confirmation_hook_switched_on_and_off_holds_from_the_next_call():
    ran: list[str] = []
    server = Server(notebook(ran).registry)
    client = session()

    assert (await call(server, client, "drop", arguments={"table": "a"}))["result"]["content"]
    server.confirm = Confirmer(Policy()).confirm
    denied = await call(server, client, "drop", arguments={"table": "b"})
    asked_nobody = await call(server, client, "add", arguments={"a": 1, "b": 1})
    server.confirm = None
    again = await call(server, client, "drop", arguments={"table": "c"})

    assert denied["result"]["isError"] and "confirmation" in denied["result"]["content"][0]["text"]
    assert asked_nobody["result"]["structuredContent"] == {"result": 2}
    assert again["result"]["content"][0]["text"] == "dropped c"
    assert ran == ["drop", "add", "drop"]
    assert [r.status for r in server.calls] == ["done", "denied", "done", "done"]


class RunOnly(ExecutorBase):
    """An executor that declares nothing but ``run``: no cells, no debugger, no interrupt."""

    def __init__(self) -> None:
        self.ran = 0

    async def run(self, work: Callable[[], Any], record: Any = None) -> Any:
        self.ran += 1
        if record is not None:
            record.set_status("running")
        return await settle(work())


async def test_an_executor_that_declares_only_run_serves_calls_and_cancels_tasks():
    ran: list[str] = []
    executor = RunOnly()
    server = Server(notebook(ran).registry, executor=executor)
    client = server.open_session(session("2025-11-25"))
    client.outbound = lambda message, related: True

    added = await call(
        server, client, "add", arguments={"a": 2, "b": 2}, _meta={"progressToken": 1}
    )
    created = await call(server, client, "slow", task={})
    task_id = created["result"]["task"]["taskId"]
    await until(lambda: "slow" in ran, "the task's work started")
    cancel = {"jsonrpc": "2.0", "id": next(_ids), "method": "tasks/cancel"}
    cancelled = await server.handle({**cancel, "params": {"taskId": task_id}}, client)

    assert added["result"]["structuredContent"] == {"result": 4}
    assert cancelled is not None and cancelled["result"]["status"] == "cancelled"
    # Not interruptible where it runs: the task's work is cancelled at its await instead.
    (record,) = [r for r in server.calls if r.target == "slow"]
    await until(lambda: record.status == "cancelled", "the task's call ended cancelled")
    assert executor.ran == 2
