"""The official MCP Python SDK client against the sans-IO server, in memory (tests/memory.py).

The scenarios of tests/kernel/test_sdk_client.py and test_context.py that need no kernel,
in both connection modes: "legacy" (the initialize handshake, 2025-11-25) and "auto"
(2026-07-28: discover, ``_meta`` on every request, input requests in results). No sockets,
no kernel: the whole module runs in about a second.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import InlineExecutor, Server
from tests.memory import MemoryTransport
from tests.schema import validate
from tests.sdk_scenarios import (
    SAMPLING_AND_ROOTS,
    LogLines,
    Progress,
    check_add_and_echo,
    check_logging_only_when_asked,
    check_sampling_and_roots,
    check_template_missing_resource_and_prompt,
    check_tool_errors,
    check_undeclared_sampling,
    dump,
)
from tests.waiting import until

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28"}

app = NotebookMCP()
started = asyncio.Event()  # set by the tool that waits to be cancelled


@app.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b


@app.tool
async def slow_echo(text: str) -> str:
    await asyncio.sleep(0)
    return text.upper()


@app.tool
def explode(reason: str) -> str:
    raise ValueError(f"cannot do that: {reason}")


@app.tool
async def count_up(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        ctx.report_progress(i, total=steps, message=f"step {i}")
        await asyncio.sleep(0)
    return "counted"


@app.tool
def chatty(ctx: Context) -> str:
    for level in ("debug", "info", "warning", "error"):
        ctx.log(level, f"a {level} line", logger="chatty")
    return "logged"


@app.tool
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit(
        "What is your name?",
        {
            "type": "object",
            "properties": {"name": {"type": "string", "default": "Ada"}},
            "required": ["name"],
        },
    )
    return f"{answer.action}:{(answer.content or {}).get('name')}"


@app.tool
async def ask_model(question: str, ctx: Context) -> str:
    result = await ctx.sample(question, max_tokens=50)
    return str(result["content"]["text"])


@app.tool
async def roots(ctx: Context) -> list[str]:
    return [r["uri"] for r in await ctx.list_roots()]


@app.tool
async def sleepy() -> str:
    started.set()
    await asyncio.Event().wait()  # until cancelled
    return "woke"


app.resource("north,120\nsouth,80\n", uri="memo://sales", name="sales", mime_type="text/csv")


@app.resource_template("notes://{day}", complete={"day": ["monday", "tuesday", "friday"]})
def notes(day: str) -> str:
    return f"notes for {day}"


def colors(prefix: str) -> list[str]:
    return [c for c in ("red", "green", "grey") if c.startswith(prefix)]


app.prompt(
    "summarize",
    "Summarize {topic} in {n} bullet points.",
    defaults={"n": "3"},
    complete={"topic": colors},
)


@pytest.fixture
def server() -> Iterator[Server]:
    """A server over the app's registry that hears of its changes, as a running app does."""
    served = Server(app.registry, executor=InlineExecutor())

    def announce(kind: str, detail: str | None) -> None:
        if kind == "updated":
            served.resource_updated(detail or "")
        else:
            served.list_changed(kind)

    stop = app.registry.subscribe(announce)
    yield served
    stop()


@asynccontextmanager
async def connect(server: Server, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with Client(MemoryTransport(server), mode=mode, **options) as client:
        yield client


@MODES
async def test_lists_what_was_registered(server, mode):
    async with connect(server, mode) as client:
        assert client.protocol_version == VERSION[mode]
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        assert names[:3] == ["add", "slow_echo", "explode"]
        first = tools.tools[0]
        assert first.description == "Add two numbers."
        assert first.input_schema["properties"]["a"] == {
            "type": "integer",
            "description": "first addend",
        }
        assert first.input_schema["required"] == ["a"]
        validate(dump(tools), "ListToolsResult")
        resources = await client.list_resources()
        assert [(r.uri, r.mime_type) for r in resources.resources] == [("memo://sales", "text/csv")]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["notes://{day}"]
        prompts = await client.list_prompts()
        assert [(a.name, a.required) for a in prompts.prompts[0].arguments] == [
            ("topic", True),
            ("n", False),
        ]


@MODES
async def test_calls_sync_and_async_tools(server, mode):
    async with connect(server, mode) as client:
        await check_add_and_echo(client)


@MODES
async def test_tool_errors_are_results_not_crashes(server, mode):
    async with connect(server, mode) as client:
        await check_tool_errors(client, MCPError)
    assert "ValueError" in server.calls[-2].traceback  # the traceback stays in the notebook


@MODES
async def test_reads_resources_gets_prompts_and_completes(server, mode):
    async with connect(server, mode) as client:
        read = await client.read_resource("memo://sales")
        assert read.contents[0].text.splitlines() == ["north,120", "south,80"]
        await check_template_missing_resource_and_prompt(client, mode, "memo://nothing", MCPError)
        days = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="notes://{day}"),
            {"name": "day", "value": "m"},
        )
        assert days.completion.values == ["monday"]
        topics = await client.complete(
            types.PromptReference(type="ref/prompt", name="summarize"),
            {"name": "topic", "value": "gr"},
        )
        assert topics.completion.values == ["green", "grey"]
        validate(dump(topics), "CompleteResult")


@MODES
async def test_progress_reaches_the_callback_in_order(server, mode):
    progress = Progress()
    async with connect(server, mode) as client:
        result = await client.call_tool("count_up", {"steps": 3}, progress_callback=progress)
        assert result.content[0].text == "counted"
        await client.list_tools()  # a barrier: the callbacks run in tasks of their own
    assert progress.seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_logging_honours_the_session_level(server):
    log = LogLines(check_schema=True)
    async with connect(server, "legacy", logging_callback=log) as client:
        await client.call_tool("chatty", {})
        await client.send_ping()  # a barrier: the client hands each line to a task
        assert [level for level, _ in log.lines] == ["debug", "info", "warning", "error"]
        log.lines.clear()
        await client.set_logging_level("warning")
        await client.call_tool("chatty", {})
        await client.send_ping()
        assert log.lines == [("warning", "a warning line"), ("error", "a error line")]


async def test_logging_on_2026_only_for_requests_that_ask_for_it(server):
    await check_logging_only_when_asked(functools.partial(connect, server, "auto"))


@MODES
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (types.ElicitResult(action="accept", content={"name": "Grace"}), "accept:Grace"),
        (types.ElicitResult(action="decline"), "decline:None"),
    ],
)
async def test_elicitation_is_answered_by_the_clients_callback(server, mode, answer, expected):
    asked: list[dict[str, Any]] = []

    async def on_elicit(context, params):
        asked.append(dump(params))
        # The call waits for this answer: ask the server something meanwhile. A transport
        # that handled requests one at a time would hang here.
        if mode == "legacy":
            await context.session.send_ping()
        return answer

    async with connect(server, mode, elicitation_callback=on_elicit) as client:
        result = await asyncio.wait_for(client.call_tool("ask_name", {}), 10)
    assert result.content[0].text == expected
    assert asked[0]["message"] == "What is your name?"
    assert asked[0]["requestedSchema"]["properties"]["name"]["default"] == "Ada"


@MODES
async def test_sampling_and_roots_go_to_the_client(server, mode):
    async with connect(server, mode, **SAMPLING_AND_ROOTS) as client:
        await check_sampling_and_roots(client)


async def test_undeclared_client_features_are_a_clear_tool_error(server):
    async with connect(server, "legacy") as client:
        await check_undeclared_sampling(client)


@MODES
async def test_cancelling_a_running_call(server, mode):
    started.clear()
    async with connect(server, mode) as client:
        call = asyncio.ensure_future(client.call_tool("sleepy", {}))
        await asyncio.wait_for(started.wait(), 10)
        call.cancel()  # the SDK sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        record = server.calls[-1]
        assert record.target == "sleepy"
        await until(lambda: record.status == "cancelled", "the call was cancelled")
        # The connection carries on.
        assert (await client.call_tool("add", {"a": 1})).content[0].text == "2"


@MODES
async def test_registering_a_tool_mid_session_notifies_the_client(server, mode):
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    def late() -> str:
        return "here now"

    async with connect(server, mode, message_handler=on_message) as client:
        assert "late" not in [t.name for t in (await client.list_tools()).tools]
        try:
            if mode == "legacy":
                app.tool(late)
            else:  # 2026-07-28: changes arrive on a subscriptions/listen stream
                async with client.listen(tools_list_changed=True) as subscription:
                    app.tool(late)
                    await asyncio.wait_for(subscription.__anext__(), 10)
            await asyncio.wait_for(changed.wait(), 10)
            assert "late" in [t.name for t in (await client.list_tools()).tools]
            assert (await client.call_tool("late", {})).content[0].text == "here now"
        finally:
            app.remove("late")


async def test_the_session_knows_its_client(server):
    transport = MemoryTransport(server)
    info = types.Implementation(name="memory-test", version="1.0")
    async with Client(transport, mode="legacy", client_info=info):
        assert server.sessions[transport.session.id] is transport.session
        assert transport.session.client_label == "memory-test 1.0"
    assert transport.session.id not in server.sessions  # closed with the connection
