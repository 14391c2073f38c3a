"""2025-11-25 experimental tasks in the sans-IO core, as a raw client sends them."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session
from mcp_notebook.protocol.jsonrpc import RpcError
from tests.schema import validate, validate_reply
from tests.waiting import until

V = "2025-11-25"
_ids = itertools.count(1)


def make() -> tuple[Server, NotebookMCP, list[str]]:
    app = NotebookMCP()
    ran: list[str] = []

    @app.tool
    async def slow(seconds: float) -> str:
        ran.append("slow")
        await asyncio.sleep(seconds)
        return "slept"

    @app.tool(task="required")
    def must() -> str:
        ran.append("must")
        return "done"

    @app.tool(task="forbidden")
    def never() -> str:
        return "plain"

    @app.tool(task="required")
    def broken() -> str:
        raise RpcError(-32603, "exploded")

    return Server(app.registry, name="t", version="1", tasks=app.tasks), app, ran


async def send(server: Server, session: Session, method: str, params: Any = None) -> dict:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
    if params is not None:
        message["params"] = params
    reply = await server.handle(message, session)
    assert reply is not None
    return reply


async def opened(server: Server, version: str = V) -> tuple[Session, list[dict], dict]:
    session = server.open_session(Session())
    heard: list[dict] = []
    session.outbound = lambda m, related: heard.append(m) or True
    init = await send(
        server,
        session,
        "initialize",
        {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw"}},
    )
    return session, heard, init["result"]


async def test_the_capability_and_each_tool_s_task_support_are_declared():
    server, _, _ = make()
    session, _, init = await opened(server)
    assert init["capabilities"]["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    listing = validate_reply("tools/list", await send(server, session, "tools/list"), V)
    support = {t["name"]: t["execution"]["taskSupport"] for t in listing["result"]["tools"]}
    assert support == {
        "slow": "optional",
        "must": "required",
        "never": "forbidden",
        "broken": "required",
    }
    older, _, init = await opened(server, "2025-06-18")
    assert "tasks" not in init["capabilities"]
    old = await send(server, older, "tools/list")
    assert all("execution" not in t for t in old["result"]["tools"])


async def test_a_task_augmented_call_answers_at_once_and_tasks_result_gives_the_result():
    server, _, _ = make()
    session, heard, _ = await opened(server)
    reply = await send(
        server,
        session,
        "tools/call",
        {"name": "slow", "arguments": {"seconds": 0.2}, "task": {"ttl": 5000}},
    )
    created = validate(reply["result"], "CreateTaskResult", V)
    task = created["task"]
    assert task["status"] == "working" and task["ttl"] == 5000
    got = await send(server, session, "tasks/get", {"taskId": task["taskId"]})
    validate(got["result"], "GetTaskResult", V)
    result = await send(server, session, "tasks/result", {"taskId": task["taskId"]})  # waits
    assert result["result"]["content"][0]["text"] == "slept"
    assert result["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {
        "taskId": task["taskId"]
    }
    done = await send(server, session, "tasks/get", {"taskId": task["taskId"]})
    assert done["result"]["status"] == "completed"
    statuses = [m["params"]["status"] for m in heard if m["method"] == "notifications/tasks/status"]
    assert statuses[-1] == "completed"
    for message in heard:
        if message["method"] == "notifications/tasks/status":
            validate(message, "TaskStatusNotification", V)


async def test_task_support_is_enforced_with_method_not_found():
    server, _, ran = make()
    session, _, _ = await opened(server)
    required = await send(server, session, "tools/call", {"name": "must"})
    assert required["error"]["code"] == -32601
    forbidden = await send(server, session, "tools/call", {"name": "never", "task": {}})
    assert forbidden["error"]["code"] == -32601
    assert ran == []
    plain = await send(server, session, "tools/call", {"name": "never"})
    assert plain["result"]["content"][0]["text"] == "plain"


async def test_the_dispatcher_s_tools_say_their_task_support_so_a_required_task_tool_is_reachable():
    _, app, ran = make()
    server = Server(app.registry, name="t", version="1", tasks=app.tasks, dispatcher=True)
    session, _, _ = await opened(server)
    listing = validate_reply("tools/list", await send(server, session, "tools/list"), V)
    support = {t["name"]: t["execution"]["taskSupport"] for t in listing["result"]["tools"]}
    # Absent means "forbidden": a client would never ask call_notebook_tool for a task.
    assert support["list_notebook_tools"] == "forbidden"
    assert support["call_notebook_tool"] == "optional"  # what the named tool allows
    reply = await send(
        server,
        session,
        "tools/call",
        {"name": "call_notebook_tool", "arguments": {"name": "must"}, "task": {}},
    )
    task_id = validate(reply["result"], "CreateTaskResult", V)["task"]["taskId"]
    result = await send(server, session, "tasks/result", {"taskId": task_id})
    assert result["result"]["content"][0]["text"] == "done" and ran == ["must"]
    listed = await send(server, session, "tools/call", {"name": "list_notebook_tools", "task": {}})
    assert listed["error"]["code"] == -32601  # as for any tool whose support is "forbidden"


async def test_a_failed_task_s_result_is_the_json_rpc_error():
    server, _, _ = make()
    session, _, _ = await opened(server)
    created = await send(server, session, "tools/call", {"name": "broken", "task": {}})
    task_id = created["result"]["task"]["taskId"]
    result = await send(server, session, "tasks/result", {"taskId": task_id})
    assert result["error"]["code"] == -32603 and "exploded" in result["error"]["message"]
    got = await send(server, session, "tasks/get", {"taskId": task_id})
    assert got["result"]["status"] == "failed"


async def test_cancel_then_list_and_the_errors_of_the_spec():
    server, _, _ = make()
    session, _, _ = await opened(server)
    created = await send(
        server, session, "tools/call", {"name": "slow", "arguments": {"seconds": 60}, "task": {}}
    )
    task_id = created["result"]["task"]["taskId"]
    cancelled = await send(server, session, "tasks/cancel", {"taskId": task_id})
    validate(cancelled["result"], "CancelTaskResult", V)
    assert cancelled["result"]["status"] == "cancelled"
    again = await send(server, session, "tasks/cancel", {"taskId": task_id})
    assert again["error"]["code"] == -32602 and "terminal" in again["error"]["message"]
    listed = await send(server, session, "tasks/list", {})
    validate(listed["result"], "ListTasksResult", V)
    assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]
    unknown = await send(server, session, "tasks/get", {"taskId": "nope"})
    assert unknown["error"]["code"] == -32602
    assert (await send(server, session, "tasks/list", {"cursor": "bad"}))["error"]["code"] == -32602
    # Another session neither sees nor reaches this session's task.
    other, _, _ = await opened(server)
    assert (await send(server, other, "tasks/list", {}))["result"]["tasks"] == []
    assert (await send(server, other, "tasks/get", {"taskId": task_id}))["error"]["code"] == -32602


async def test_a_task_s_question_to_the_client_names_the_task_and_makes_it_input_required():
    server, app, _ = make()

    @app.tool
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Name?")
        return f"Hi {answer.content['name']}"

    session, heard, _ = await opened(server)
    session.client_capabilities = {"elicitation": {}}
    created = await send(server, session, "tools/call", {"name": "ask_name", "task": {}})
    task_id = created["result"]["task"]["taskId"]
    (question,) = await until(
        lambda: [m for m in heard if m.get("method") == "elicitation/create"], "the question"
    )
    validate(question, "ElicitRequest", V)
    assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
        "taskId": task_id
    }
    got = await send(server, session, "tasks/get", {"taskId": task_id})
    assert got["result"]["status"] == "input_required"
    answer = {"action": "accept", "content": {"name": "Ada"}}
    await server.handle({"jsonrpc": "2.0", "id": question["id"], "result": answer}, session)
    result = await send(server, session, "tasks/result", {"taskId": task_id})
    assert result["result"]["content"][0]["text"] == "Hi Ada"


async def test_headless_a_confirm_task_asks_the_client_names_the_task_and_says_who_is_asked():
    from mcp_notebook.protocol.confirmation import Confirmer

    server, app, _ = make()
    ran: list[str] = []

    @app.tool(confirm=True)
    def drop(table: str) -> str:
        ran.append(table)
        return f"dropped {table}"

    app.confirm_headless = "elicit"  # as `serve --confirm elicit`
    server.confirm = Confirmer(app).confirm  # app.ui is None: no notebook front end
    session, heard, _ = await opened(server)
    session.client_capabilities = {"elicitation": {}}
    call = {"name": "drop", "arguments": {"table": "t"}, "task": {}}
    created = await send(server, session, "tools/call", call)
    task_id = validate(created["result"], "CreateTaskResult", V)["task"]["taskId"]
    (question,) = await until(
        lambda: [m for m in heard if m.get("method") == "elicitation/create"], "the question"
    )
    validate(question, "ElicitRequest", V)
    assert "drop" in question["params"]["message"]
    assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {
        "taskId": task_id
    }
    got = validate(
        (await send(server, session, "tasks/get", {"taskId": task_id}))["result"],
        "GetTaskResult",
        V,
    )
    assert got["status"] == "input_required"
    assert "client's user" in got["statusMessage"] and "notebook" not in got["statusMessage"]
    assert ran == []
    answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept"}}
    await server.handle(answer, session)
    result = await send(server, session, "tasks/result", {"taskId": task_id})
    assert result["result"]["content"][0]["text"] == "dropped t" and ran == ["t"]
    told = [m for m in heard if m.get("method") == "notifications/tasks/status"]
    for message in told:
        validate(message, "TaskStatusNotification", V)
    assert [m["params"]["status"] for m in told][-3:] == ["input_required", "working", "completed"]
