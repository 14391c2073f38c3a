"""Structured fuzzing of the newest methods in the sans-IO core: tasks (both eras), the
dispatcher's two tools and 2026-07-28 input responses. Every request gets one reply with
its id; a bad one is a client error, never an internal error (-32603: a bug of ours)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import Server, Session, modern

EXT = "io.modelcontextprotocol/tasks"
CLIENT_ERRORS = {-32600, -32601, -32602, -32000, -32002, -32020, -32021}

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


REAL_TASK = "<a real task id>"  # replaced, when a case runs, by a task the session made


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[asyncio.AbstractEventLoop, Server, Session, str]]:
    app = NotebookMCP()

    @app.tool
    def add(a: int, b: int = 0) -> int:
        return a + b

    @app.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", key="name")
        return str(answer.action)

    @app.tool(task="required")
    def must() -> str:
        return "done"

    @app.tool(visibility=["app"])
    def only_for_views() -> str:
        return "secret"

    server = Server(app.registry, name="f", version="1", tasks=app.tasks, dispatcher=True)
    session = server.open_session(Session())
    loop = asyncio.new_event_loop()

    def outbound(message: dict[str, Any], related: Any) -> bool:
        # A client answers the questions a dispatched `ask` sends (declines them): a case
        # must not wait for an answer no client would withhold.
        if message.get("method") == "elicitation/create" and "id" in message:
            decline = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}}
            loop.call_soon(lambda: loop.create_task(server.handle(decline, session)))
        return True

    session.outbound = outbound
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "fuzz"},
    }
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    loop.run_until_complete(server.handle(initialize, session))
    call = {"name": "add", "arguments": {"a": 1}, "task": {}}
    created = loop.run_until_complete(
        server.handle({"jsonrpc": "2.0", "id": -1, "method": "tools/call", "params": call}, session)
    )
    assert created is not None
    yield loop, server, session, created["result"]["task"]["taskId"]
    server.continuations.close()
    app.tasks.close()
    loop.run_until_complete(_cancel_the_rest())
    loop.close()


async def _cancel_the_rest() -> None:
    """Cancel what the cases left waiting (questions nobody answers), on its own loop."""
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


def _real(value: Any, task_id: str) -> Any:
    if isinstance(value, dict):
        return {k: _real(v, task_id) for k, v in value.items()}
    return task_id if value == REAL_TASK else value


tool_names = st.sampled_from(
    ["add", "ask", "must", "only_for_views", "call_notebook_tool", "list_notebook_tools", "nope"]
) | st.text(max_size=8)
task_ids = st.just(REAL_TASK) | values
handshake_params = st.one_of(
    st.tuples(
        st.sampled_from(["tasks/get", "tasks/result", "tasks/cancel", "tasks/list"]),
        st.fixed_dictionaries({}, optional={"taskId": task_ids, "cursor": values}),
    ),
    st.tuples(
        st.just("tools/call"),
        st.fixed_dictionaries(
            {"name": st.sampled_from(["call_notebook_tool", "list_notebook_tools"])},
            optional={
                "arguments": st.fixed_dictionaries(
                    {},
                    optional={
                        "name": tool_names,
                        "arguments": values
                        | st.fixed_dictionaries({}, optional={"a": values, "b": values}),
                        "query": values,
                    },
                )
                | values,
                "task": values,
            },
        ),
    ),
)
modern_params = st.tuples(
    st.sampled_from(["tasks/get", "tasks/update", "tasks/cancel", "tools/call"]),
    st.fixed_dictionaries(
        {},
        optional={
            "taskId": task_ids,
            "name": tool_names,
            "arguments": values,
            "inputResponses": values
            | st.dictionaries(st.sampled_from(["name", "x"]), values, max_size=2),
            "requestState": values,
        },
    ),
    st.booleans(),  # with the Tasks extension declared
)


def _check(reply: dict[str, Any] | None, request_id: Any) -> None:
    assert reply is not None and reply.get("id") == request_id, reply
    if "error" in reply:
        assert reply["error"]["code"] in CLIENT_ERRORS, reply
    else:
        assert isinstance(reply["result"], dict), reply


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=handshake_params, number=st.integers(min_value=1, max_value=2**31))
def test_handshake_tasks_and_the_dispatcher_answer_each_request_once_without_a_bug(
    world, case, number
):
    loop, server, session, task_id = world
    method, params = case
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": _real(params, task_id)}
    reply = loop.run_until_complete(asyncio.wait_for(server.handle(message, session), 30))
    _check(reply, number)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=modern_params, number=st.integers(min_value=1, max_value=2**31))
def test_2026_tasks_and_input_responses_answer_each_request_once_without_a_bug(world, case, number):
    loop, server, _, task_id = world
    method, params, with_tasks = case
    params = _real(params, task_id)
    capabilities: dict[str, Any] = {"elicitation": {}}
    if with_tasks:
        capabilities["extensions"] = {EXT: {}}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    message = {
        "jsonrpc": "2.0",
        "id": number,
        "method": method,
        "params": {**params, "_meta": meta},
    }
    try:
        session = modern.open_request(message)
    except Exception as refused:  # a malformed _meta is the transport's -32602
        assert getattr(refused, "code", None) in CLIENT_ERRORS
        return
    reply = loop.run_until_complete(asyncio.wait_for(server.handle(message, session), 30))
    _check(reply, number)
