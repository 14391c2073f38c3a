"""The 2026-07-28 Tasks extension in the sans-IO core (protocol/taskcalls.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, modern
from mcp_notebook.protocol.jsonrpc import RpcError
from tests.schema import validate, validate_task_message
from tests.waiting import until, until_async

MODERN = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"elicitation": {}, "extensions": {EXT: {}}}


def request(method: str, params: dict | None = None, caps: dict = WITH_TASKS) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


async def call(server: Server, method: str, params: dict | None = None, **kw: Any) -> dict:
    message = request(method, params, **kw)
    reply = await server.handle(message, modern.open_request(message))
    assert reply is not None
    return reply


def make() -> tuple[Server, NotebookMCP, dict[str, Any]]:
    app = NotebookMCP()
    gate: dict[str, Any] = {"ran": []}

    @app.tool(task="forbidden")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @app.tool
    async def slow(seconds: float) -> str:
        gate["ran"].append("slow")
        await asyncio.sleep(seconds)
        return "slept"

    @app.tool(task="required")
    def quick() -> str:
        gate["ran"].append("quick")
        return "done"

    @app.tool(task="required")
    def broken() -> str:
        raise RpcError(-32603, "exploded")

    @app.tool(task="required")
    async def confirm_delete(filename: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Delete {filename}?", key="confirm")
        return f"deleted {filename}" if answer.accepted else "kept"

    @app.tool
    async def ask_then_work(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", key="user_name")
        await asyncio.sleep(0.3)
        return f"Hello {answer.content['name']}"

    server = Server(app.registry, name="t", version="1", tasks=app.tasks)
    app.tasks.after = 0.1
    return server, app, gate


async def until_status(server: Server, task_id: str, *statuses: str) -> dict:
    """Polls tasks/get (as a client would) until the task's status is one of ``statuses``."""

    async def got() -> dict | None:
        task = (await call(server, "tasks/get", {"taskId": task_id}))["result"]
        return task if task["status"] in statuses else None

    return await until_async(got, f"the task to become {' or '.join(statuses)}")


async def until_terminal(server: Server, task_id: str) -> dict:
    return await until_status(server, task_id, "completed", "failed", "cancelled")


async def test_discover_advertises_the_extension():
    server, _, _ = make()
    reply = await call(server, "server/discover")
    assert reply["result"]["capabilities"]["extensions"][EXT] == {}  # beside MCP Apps
    assert "tasks" not in reply["result"]["capabilities"]


async def test_a_long_optional_call_becomes_a_task_whose_result_is_inlined_once_done():
    server, app, _ = make()
    reply = await call(server, "tools/call", {"name": "slow", "arguments": {"seconds": 0.5}})
    created = validate_task_message("tools/call", reply["result"])
    assert created["resultType"] == "task" and "requestState" not in created
    got = await call(server, "tasks/get", {"taskId": created["taskId"]})  # stored already
    validate_task_message("tasks/get", got["result"])
    assert got["result"]["status"] == "working"
    done = await until_terminal(server, created["taskId"])
    assert done["result"]["content"][0]["text"] == "slept"
    assert done["resultType"] == "complete"
    assert app.tasks.get(created["taskId"]).status == "completed"


async def test_fast_optional_calls_and_calls_without_the_extension_stay_plain():
    server, _, _ = make()
    fast = await call(server, "tools/call", {"name": "slow", "arguments": {"seconds": 0}})
    assert fast["result"]["resultType"] == "complete"
    plain = await call(
        server, "tools/call", {"name": "slow", "arguments": {"seconds": 0.3}}, caps={}
    )
    assert plain["result"]["content"][0]["text"] == "slept"
    legacy = await call(
        server, "tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 1}}
    )
    assert legacy["result"]["content"][0]["text"] == "Hello, x!"


async def test_a_required_task_tool_refuses_a_client_without_the_extension_before_running():
    server, _, gate = make()
    reply = await call(server, "tools/call", {"name": "quick"}, caps={})
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    assert gate["ran"] == []
    made = await call(server, "tools/call", {"name": "quick"})
    assert made["result"]["resultType"] == "task"
    done = await until_terminal(server, made["result"]["taskId"])
    assert done["result"]["content"][0]["text"] == "done"


async def test_a_json_rpc_error_fails_the_task_with_the_error():
    server, _, _ = make()
    made = await call(server, "tools/call", {"name": "broken"})
    done = await until_terminal(server, made["result"]["taskId"])
    validate_task_message("tasks/get", done)
    assert done["status"] == "failed" and done["error"]["code"] == -32603
    assert "result" not in done


async def test_task_input_is_asked_in_tasks_get_and_answered_with_tasks_update():
    server, _, _ = make()
    made = await call(
        server, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a"}}
    )
    task_id = made["result"]["taskId"]
    got = await until_status(server, task_id, "input_required")
    validate_task_message("tasks/get", got)
    assert got["inputRequests"]["confirm"]["method"] == "elicitation/create"
    ack = await call(
        server,
        "tasks/update",
        {"taskId": task_id, "inputResponses": {"confirm": {"action": "accept"}, "x": {}}},
    )
    assert ack["result"] == {"resultType": "complete"}
    done = await until_terminal(server, task_id)
    assert done["result"]["content"][0]["text"] == "deleted a"


async def test_an_answer_racing_a_cancel_from_the_monitor_is_acknowledged():
    server, app, _ = make()
    made = await call(
        server, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a"}}
    )
    task_id = made["result"]["taskId"]
    await until_status(server, task_id, "input_required")
    task = app.tasks.get(task_id)
    asked = task.input_requests
    assert asked is not None

    def cancelled_meanwhile() -> dict[str, Any]:
        # The notebook's Cancel (the kernel's thread) lands while tasks/update reads.
        click = threading.Thread(target=app.tasks.cancel, args=(task, "from the notebook"))
        click.start()
        click.join()
        return asked()

    task.input_requests = cancelled_meanwhile
    ack = await call(
        server,
        "tasks/update",
        {"taskId": task_id, "inputResponses": {"confirm": {"action": "accept"}}},
    )
    assert ack.get("result") == {"resultType": "complete"}, ack
    assert (await until_terminal(server, task_id))["status"] == "cancelled"


async def test_input_asked_before_the_task_exists_is_a_multi_round_trip_then_a_task():
    server, _, _ = make()
    first = (await call(server, "tools/call", {"name": "ask_then_work"}))["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    second = await call(
        server,
        "tools/call",
        {
            "name": "ask_then_work",
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": first["requestState"],
        },
    )
    created = second["result"]
    assert created["resultType"] == "task" and "requestState" not in created
    done = await until_terminal(server, created["taskId"])
    assert done["result"]["content"][0]["text"] == "Hello Alice"


async def test_cancel_acks_empty_ends_a_running_task_cancelled_and_is_idempotent():
    server, _, _ = make()
    made = await call(server, "tools/call", {"name": "slow", "arguments": {"seconds": 60}})
    task_id = made["result"]["taskId"]
    ack = await call(server, "tasks/cancel", {"taskId": task_id})
    validate_task_message("tasks/cancel", ack["result"])
    assert ack["result"] == {"resultType": "complete"}
    assert (await until_terminal(server, task_id))["status"] == "cancelled"
    again = await call(server, "tasks/cancel", {"taskId": task_id})
    assert again["result"] == {"resultType": "complete"}


async def test_the_task_methods_need_the_extension_and_a_known_id():
    server, _, _ = make()
    for method, params in (
        ("tasks/get", {"taskId": "x"}),
        ("tasks/update", {"taskId": "x", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "x"}),
    ):
        refused = await call(server, method, params, caps={})
        assert refused["error"]["code"] == -32021, method
        unknown = await call(server, method, params)
        validate(unknown, "JSONRPCErrorResponse", MODERN)
        assert unknown["error"]["code"] == -32602, method
    for removed in ("tasks/result", "tasks/list"):
        assert (await call(server, removed, {"taskId": "x"}))["error"]["code"] == -32601


async def test_a_listen_stream_names_each_task_once_however_often_it_was_asked():
    server, _, _ = make()
    made = await call(server, "tools/call", {"name": "slow", "arguments": {"seconds": 60}})
    task_id = made["result"]["taskId"]
    # Every status change of a task looks it up in each stream's list: keep it short.
    asked = {"taskIds": [task_id] * 10_000 + ["unknown", task_id]}
    message = request("subscriptions/listen", {"notifications": asked})
    session = modern.open_request(message)
    heard: list[dict] = []
    session.outbound = lambda m, related: heard.append(m) or True
    listen = asyncio.ensure_future(server.handle(message, session))
    await until(lambda: heard, "the acknowledgement")
    assert heard[0]["params"]["notifications"]["taskIds"] == [task_id]
    await call(server, "tasks/cancel", {"taskId": task_id})
    server.end_listens()
    await listen


async def test_status_notifications_reach_a_listen_stream_that_asked():
    server, _, _ = make()
    made = await call(server, "tools/call", {"name": "slow", "arguments": {"seconds": 0.3}})
    task_id = made["result"]["taskId"]
    message = request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})
    session = modern.open_request(message)
    heard: list[dict] = []
    session.outbound = lambda m, related: heard.append(m) or True
    listen = asyncio.ensure_future(server.handle(message, session))
    await until_terminal(server, task_id)
    await until(
        lambda: any(m.get("method") == "notifications/tasks" for m in heard), "a task status"
    )
    ack = heard[0]
    assert ack["params"]["notifications"]["taskIds"] == [task_id]
    status = [m for m in heard if m.get("method") == "notifications/tasks"]
    assert status[-1]["params"]["status"] == "completed"
    validate(status[-1], "TaskStatusNotification", "ext-tasks")
    server.end_listens()
    session.ended.set()
    await listen
    refused = request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, caps={})
    reply = await server.handle(refused, modern.open_request(refused))
    assert reply["error"]["code"] == -32021


def headless() -> tuple[Server, list[str]]:
    from mcp_notebook.protocol.confirmation import Confirmer

    app = NotebookMCP()
    ran: list[str] = []

    @app.tool(confirm=True)
    def drop(table: str) -> str:
        ran.append(table)
        return f"dropped {table}"

    server = Server(app.registry, tasks=app.tasks)
    app.confirm_headless = "elicit"  # as `serve --confirm elicit`
    server.confirm = Confirmer(app).confirm  # app.ui is None: nobody at the notebook
    return server, ran


async def test_headless_a_confirmation_is_the_task_s_input_request():
    server, ran = headless()
    made = await call(server, "tools/call", {"name": "drop", "arguments": {"table": "t"}})
    task_id = made["result"]["taskId"]
    asked = await until_status(server, task_id, "input_required")
    ((key, question),) = asked["inputRequests"].items()
    assert question["method"] == "elicitation/create" and "drop" in question["params"]["message"]
    assert ran == []
    await call(
        server, "tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept"}}}
    )
    done = await until_terminal(server, task_id)
    assert done["result"]["content"][0]["text"] == "dropped t" and ran == ["t"]


async def test_headless_a_declined_confirmation_fails_the_task_and_nothing_runs():
    server, ran = headless()
    made = await call(server, "tools/call", {"name": "drop", "arguments": {"table": "u"}})
    task_id = made["result"]["taskId"]
    asked = await until_status(server, task_id, "input_required")
    (key,) = asked["inputRequests"]
    answer = {key: {"action": "decline"}}
    await call(server, "tasks/update", {"taskId": task_id, "inputResponses": answer})
    done = await until_terminal(server, task_id)
    assert done["status"] == "failed" and "declined" in done["error"]["message"]
    assert ran == []
    # Without the extension nothing can ask: denied at once, as before.
    plain = await call(server, "tools/call", {"name": "drop", "arguments": {"table": "v"}}, caps={})
    assert plain["result"]["isError"] and ran == []
