"""The dispatcher (protocol/dispatcher_tools.py), in memory with the official SDK client.

Two stable tools for clients that ignore ``list_changed``: one lists the notebook's tools
as they are now, one calls any of them by name. A call through it must be what a direct
``tools/call`` is: same result, same errors, same confirmation, a record marked ``via``.
Both connection modes: "legacy" (2025-11-25) and "auto" (2026-07-28).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcp_notebook import Context, NotebookMCP
from mcp_notebook.protocol import InlineExecutor, Server, Session
from mcp_notebook.protocol.confirmation import Confirmer
from mcp_notebook.protocol.dispatcher_tools import CALL_TOOL, CAPABILITY, LIST_TOOL, asking
from tests.memory import MemoryTransport
from tests.schema import validate, validate_reply

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28"}

app = NotebookMCP()


@app.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@app.tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot do that: {reason}")


@app.tool(confirm=True)
def delete_rows(table: str) -> str:
    """Delete the rows of a table."""
    return f"deleted {table}"


@app.tool
async def ask_name(ctx: Context) -> str:
    """Asks the user for a name."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    return f"{answer.action}:{(answer.content or {}).get('name')}"


@app.tool
async def count_up(steps: int, ctx: Context) -> str:
    """Reports progress."""
    for i in range(1, steps + 1):
        ctx.report_progress(i, total=steps)
        await asyncio.sleep(0)
    return "counted"


ORIGINAL = tuple(app.registry.tools)  # what the module registered


def serving(dispatcher: bool = True, page_size: int = 100) -> Server:
    server = Server(
        app.registry, executor=InlineExecutor(), dispatcher=dispatcher, page_size=page_size
    )
    # confirm=True tools ask the client, as under `mcp-notebook serve` (nobody at a notebook).
    server.confirm = Confirmer(
        SimpleNamespace(
            confirm_policy="marked", confirm_timeout=5, ui=None, confirm_headless="elicit"
        )
    ).confirm
    return server


@pytest.fixture
def server() -> Iterator[Server]:
    served = serving()

    def announce(kind: str, detail: str | None) -> None:
        if kind != "updated":
            served.list_changed(kind)

    stop = app.registry.subscribe(announce)
    yield served
    stop()
    for name in list(app.registry.tools):
        if name not in ORIGINAL:
            app.registry.remove(name)


@asynccontextmanager
async def connect(server: Server, mode: str, **options: Any) -> AsyncIterator[Client]:
    async with Client(MemoryTransport(server), mode=mode, **options) as client:
        yield client


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def dispatch(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    given: dict[str, Any] = {"name": name}
    if arguments is not None:
        given["arguments"] = arguments
    return given


@MODES
async def test_a_tool_defined_after_the_client_listed_is_called_through_the_dispatcher(
    server, mode
):
    async with connect(server, mode) as client:
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        assert names == [LIST_TOOL, CALL_TOOL, *ORIGINAL]  # the stable two come first
        validate(dump(listed), "ListToolsResult", VERSION[mode])

        @app.tool
        def shout(text: str) -> dict[str, str]:
            """Upper-case a text."""
            return {"loud": text.upper()}

        # The client never re-lists: the dispatcher finds the new tool and calls it.
        found = await client.call_tool(LIST_TOOL, {"query": "upper"})
        assert not found.is_error
        assert [t["name"] for t in found.structured_content["tools"]] == ["shout"]
        assert found.structured_content["tools"][0]["inputSchema"]["required"] == ["text"]
        validate(dump(found), "CallToolResult", VERSION[mode])
        called = await client.call_tool(CALL_TOOL, dispatch("shout", {"text": "hi"}))
        direct = await client.call_tool("shout", {"text": "hi"})
    assert dump(called) == dump(direct)
    assert called.structured_content == {"loud": "HI"}
    validate(dump(called), "CallToolResult", VERSION[mode])
    via, plain = server.calls[-2], server.calls[-1]
    assert (via.target, via.via, via.status, via.arguments) == (
        "shout",
        CALL_TOOL,
        "done",
        {"text": "hi"},
    )
    assert (plain.target, plain.via) == ("shout", None)
    assert "via call_notebook_tool" in repr(via)


@MODES
async def test_the_listing_filters_and_never_lists_the_dispatcher(server, mode):
    async with connect(server, mode) as client:
        everything = await client.call_tool(LIST_TOOL, {})
        assert [t["name"] for t in everything.structured_content["tools"]] == list(ORIGINAL)
        assert everything.structured_content["total"] == len(ORIGINAL)
        one = await client.call_tool(LIST_TOOL, {"name": "add"})
        assert one.structured_content["tools"] == [app.registry.tools["add"].definition]
        words = await client.call_tool(LIST_TOOL, {"query": "TWO numbers"})
        assert [t["name"] for t in words.structured_content["tools"]] == ["add"]
        none = await client.call_tool(LIST_TOOL, {"query": "add fails"})
        assert none.structured_content == {"tools": [], "total": 0}
        for result in (everything, one, words, none):
            validate(dump(result), "CallToolResult", VERSION[mode])
    # The listing is a call like others: the monitor shows it.
    assert server.calls[-1].target == LIST_TOOL and server.calls[-1].status == "done"


@MODES
async def test_an_overlong_query_is_an_invalid_argument_not_minutes_of_the_servers_loop(
    server, mode
):
    async with connect(server, mode) as client:
        # Searched word by word on the server's loop: 4 MB of words held it for minutes.
        flood = await client.call_tool(LIST_TOOL, {"query": "number " * 200_000})
        assert flood.is_error and "Invalid argument 'query'" in flood.content[0].text
        longest = await client.call_tool(LIST_TOOL, {"query": ("two " * 250)[:1000]})
        assert [t["name"] for t in longest.structured_content["tools"]] == ["add"]


@MODES
async def test_errors_through_the_dispatcher_are_those_of_a_direct_call(server, mode):
    async with connect(server, mode) as client:
        await client.list_tools()
        invalid = await client.call_tool(CALL_TOOL, dispatch("add", {"a": "seven"}))
        direct_invalid = await client.call_tool("add", {"a": "seven"})
        assert invalid.is_error and "Invalid argument 'a' for tool 'add'" in invalid.content[0].text
        assert dump(invalid) == dump(direct_invalid)
        raised = await client.call_tool(CALL_TOOL, dispatch("explode", {"reason": "no"}))
        assert dump(raised) == dump(await client.call_tool("explode", {"reason": "no"}))
        assert "cannot do that: no" in raised.content[0].text
        with pytest.raises(MCPError) as unknown:
            await client.call_tool(CALL_TOOL, dispatch("nope", {}))
        with pytest.raises(MCPError) as direct_unknown:
            await client.call_tool("nope", {})
        assert unknown.value.code == direct_unknown.value.code == types.INVALID_PARAMS
        assert unknown.value.error.message == direct_unknown.value.error.message
        # The dispatcher's own arguments are checked as any tool's.
        nameless = await client.call_tool(CALL_TOOL, {"arguments": {}})
        assert nameless.is_error
        assert "Invalid arguments for tool 'call_notebook_tool'" in nameless.content[0].text
        assert "'name' is a required property" in nameless.content[0].text
        bad_query = await client.call_tool(LIST_TOOL, {"query": 3})
        assert bad_query.is_error and "Invalid argument 'query'" in bad_query.content[0].text
        # It cannot call itself.
        for itself in (LIST_TOOL, CALL_TOOL):
            with pytest.raises(MCPError) as loop:
                await client.call_tool(CALL_TOOL, dispatch(itself, {}))
            assert loop.value.code == types.INVALID_PARAMS
            assert f"call {itself} directly" in loop.value.error.message
    failed = [c for c in server.calls if c.via == CALL_TOOL and c.target == "add"][-1]
    assert failed.status == "error" and "Invalid argument 'a'" in str(failed.error)


@MODES
async def test_a_tool_that_asks_first_still_asks_through_the_dispatcher(server, mode):
    asked: list[str] = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async with connect(server, mode, elicitation_callback=on_elicit) as client:
        await client.list_tools()
        through = await client.call_tool(CALL_TOOL, dispatch("delete_rows", {"table": "t"}))
        direct = await client.call_tool("delete_rows", {"table": "t"})
    assert dump(through) == dump(direct)
    record = [c for c in server.calls if c.via == CALL_TOOL][-1]
    if mode == "legacy":  # the client's user was asked, about the real tool, and approved
        assert len(asked) == 2 and "'delete_rows'" in asked[0]
        assert through.content[0].text == "deleted t" and record.status == "done"
    else:  # 2026-07-28 cannot ask before a tool starts: the same denial as a direct call
        assert through.is_error and "needs the user's confirmation" in through.content[0].text
        assert record.status == "denied"


@MODES
async def test_elicitation_and_progress_of_a_dispatched_call_reach_the_client(server, mode):
    progress: list[float] = []

    async def on_elicit(context, params):
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async def on_progress(value, total, message):
        progress.append(value)

    async with connect(server, mode, elicitation_callback=on_elicit) as client:
        await client.list_tools()
        # On 2026-07-28 this is an input-required result, and the client's retry of
        # call_notebook_tool resumes the paused tool.
        named = await asyncio.wait_for(client.call_tool(CALL_TOOL, dispatch("ask_name")), 10)
        assert named.content[0].text == "accept:Grace"
        counted = await client.call_tool(
            CALL_TOOL, dispatch("count_up", {"steps": 2}), progress_callback=on_progress
        )
        assert counted.content[0].text == "counted"
        await client.list_tools()  # a barrier: progress callbacks run in tasks of their own
    assert progress == [1, 2]


@MODES
async def test_off_by_default_and_pagination_keeps_every_tool_once(mode):
    async with connect(serving(dispatcher=False), mode) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert LIST_TOOL not in names and CALL_TOOL not in names
        with pytest.raises(MCPError) as unknown:
            await client.call_tool(CALL_TOOL, dispatch("add", {"a": 1}))
        assert unknown.value.code == types.INVALID_PARAMS
    async with connect(serving(page_size=2), mode) as client:
        seen: list[str] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            seen += [t.name for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        assert seen == [LIST_TOOL, CALL_TOOL, *ORIGINAL]


def test_a_client_asks_for_the_dispatcher_with_an_experimental_capability():
    server = serving(dispatcher=False)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    asked = asking(initialize)
    assert initialize["params"]["capabilities"] == {"roots": {}}  # the client's stays
    assert asked["params"]["capabilities"] == {"roots": {}, "experimental": {CAPABILITY: {}}}

    async def names(message: dict[str, Any]) -> list[str]:
        session = Session()
        await server.handle(message, session)
        listed = await server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)
        validate_reply("tools/list", listed)
        return [t["name"] for t in listed["result"]["tools"]]

    assert asyncio.run(names(initialize))[:2] == ["add", "explode"]
    assert asyncio.run(names(asked))[:2] == [LIST_TOOL, CALL_TOOL]

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"experimental": {"x": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    modern = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}
    capabilities = asking(modern)["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert capabilities == {"experimental": {"x": {}, CAPABILITY: {}}}
    ping = {"jsonrpc": "2.0", "id": 4, "method": "ping"}
    assert asking(ping) is ping  # nothing to say there
