"""The dispatcher against a live notebook: a client connected before a cell defines a tool
calls it through ``call_notebook_tool``, without re-listing or reconnecting.

The official SDK client, both modes ("legacy": 2025-11-25, "auto": 2026-07-28, whose
``Mcp-Name`` header names the dispatcher's tool), over HTTP and through ``mcp-notebook
bridge --dispatcher`` (which asks for it while the notebook's server offers it to nobody
else). Results are checked against the official schema of the version in use.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_notebook.protocol.dispatcher_tools import CALL_TOOL, CAPABILITY, LIST_TOOL
from tests.conftest import MODES, connect, start_server
from tests.schema import validate, validate_reply
from tests.sources import ADD
from tests.stdio import module_params

NAME = "dispatching"
VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28"}
SETUP = (
    """
ran = []

"""
    + ADD
    + '''
@mcp.tool(confirm=True)
def delete_rows(table: str) -> str:
    """Delete the rows of a table."""
    ran.append(table)
    return f"deleted {table}"
'''
)


def new_tool(name: str) -> str:
    """A cell that defines a tool the client has never listed; it prints, to be captured."""
    return (
        f"@mcp.tool\ndef {name}(who: str) -> dict:\n"
        f'    """Greets someone by name."""\n'
        f"    print('greeting', who)\n"
        f"    return {{'greeting': 'Hello, ' + who + '!'}}\n"
    )


@pytest.fixture(scope="module")
def served(kernel, frontend):
    # The notebook's server offers the dispatcher to nobody: only clients that ask get it.
    return start_server(kernel, SETUP, f"%mcp start --port 0 --name {NAME}")


def dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def last_call(served) -> dict:
    return served.kernel.eval(
        "(lambda c: {'target': c.target, 'via': c.via, 'status': c.status, "
        "'output': ''.join(o.get('text', '') for o in c.output)})(mcp.calls[-1])"
    )


async def call_the_new_tool(served, client: Client, mode: str, tool: str) -> None:
    """Define ``tool`` in a cell after ``client`` listed, and reach it through the dispatcher."""
    listed = await client.list_tools()
    names = [t.name for t in listed.tools]
    assert names[:2] == [LIST_TOOL, CALL_TOOL] and tool not in names
    validate(dump(listed), "ListToolsResult", VERSION[mode])
    served.kernel.run(new_tool(tool))
    found = await client.call_tool(LIST_TOOL, {"query": "greets"})
    assert [t["name"] for t in found.structured_content["tools"]] == [tool]
    assert found.structured_content["tools"][0]["inputSchema"]["required"] == ["who"]
    validate(dump(found), "CallToolResult", VERSION[mode])
    result = await client.call_tool(CALL_TOOL, {"name": tool, "arguments": {"who": "Ada"}})
    assert not result.is_error
    assert result.structured_content == {"greeting": "Hello, Ada!"}
    validate(dump(result), "CallToolResult", VERSION[mode])
    # The record is the real tool's, marked as dispatched, with the output it printed.
    assert last_call(served) == {
        "target": tool,
        "via": CALL_TOOL,
        "status": "done",
        "output": "greeting Ada\n",
    }
    invalid = await client.call_tool(CALL_TOOL, {"name": tool, "arguments": {"who": 7}})
    assert invalid.is_error
    assert f"Invalid argument 'who' for tool '{tool}'" in invalid.content[0].text
    validate(dump(invalid), "CallToolResult", VERSION[mode])
    with pytest.raises(MCPError) as unknown:
        await client.call_tool(CALL_TOOL, {"name": "no_such_tool", "arguments": {}})
    assert unknown.value.code == types.INVALID_PARAMS
    assert unknown.value.error.message == "Unknown tool: no_such_tool"


@MODES
async def test_the_bridge_asks_for_the_dispatcher_and_reaches_a_tool_defined_later(
    served, mode, afterwards
):
    tool = f"greet_bridged_{mode}"
    afterwards(served.kernel, f"mcp.remove({tool!r})")
    async with Client(module_params("bridge", NAME, "--dispatcher"), mode=mode) as client:
        await call_the_new_tool(served, client, mode, tool)
        # Only the bridge's client asked: a direct client of the same server does not see it.
        async with connect(served, mode) as other:
            names = [t.name for t in (await other.list_tools()).tools]
            assert LIST_TOOL not in names and tool in names


@MODES
async def test_start_dispatcher_offers_it_to_every_client(served, mode, afterwards):
    tool = f"greet_direct_{mode}"
    afterwards(served.kernel, f"mcp.remove({tool!r})")
    afterwards(served.kernel, "%mcp start")  # the same port, without the dispatcher
    _, printed = served.kernel.run("%mcp start --dispatcher")
    assert f"Dispatcher on: every client also gets {LIST_TOOL} and {CALL_TOOL}." in printed
    assert served.kernel.eval("mcp.url") == served.url  # a restart keeps the port
    async with connect(served, mode) as client:
        await call_the_new_tool(served, client, mode, tool)


async def test_a_tool_that_asks_first_still_asks_at_the_notebook(served, frontend, afterwards):
    afterwards(served.kernel, "%mcp start")
    served.kernel.run("%mcp start --dispatcher")
    async with connect(served, "legacy") as client:
        await client.list_tools()
        call = asyncio.ensure_future(
            client.call_tool(CALL_TOOL, {"name": "delete_rows", "arguments": {"table": "t"}})
        )
        panels = await frontend.until(frontend.pending_panels)
        panel = frontend.panel(panels[-1])
        assert "delete_rows" in frontend.state(panel["title"])["value"]  # the real tool
        assert served.kernel.eval("ran") == []  # it waits for the person
        assert served.kernel.eval("(mcp.calls[-1].via, mcp.calls[-1].status)") == (
            CALL_TOOL,
            "awaiting confirmation",
        )
        frontend.click(panel["approve"])
        result = await asyncio.wait_for(call, 30)
    assert result.content[0].text == "deleted t"
    assert served.kernel.eval("ran") == ["t"]
    assert served.kernel.eval("mcp.calls[-1].status") == "done"


def printed_json(output: str) -> dict:
    """The JSON object after the "Merge into ..." line of ``%mcp config``."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Merge into "))
    return json.loads("\n".join(lines[start + 1 :]))


async def test_the_config_snippet_with_dispatcher_turns_it_on_when_pasted(served):
    _, output = served.kernel.run("%mcp config claude-desktop --dispatcher")
    entry = printed_json(output)["mcpServers"][NAME]
    assert entry["args"] == ["-m", "mcp_notebook", "bridge", NAME, "--dispatcher"]
    parameters = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**os.environ, **entry["env"]}
    )
    async with Client(parameters, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools][:2] == [LIST_TOOL, CALL_TOOL]
        added = await client.call_tool(CALL_TOOL, {"name": "add", "arguments": {"a": 40, "b": 2}})
        assert added.content[0].text == "42"
    # The command line's config says the same; claude-code's HTTP line cannot ask for it.
    line = subprocess.run(
        [sys.executable, "-m", "mcp_notebook", "config", "claude-code", NAME, "--dispatcher"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert line.strip().endswith(f"bridge {NAME} --dispatcher")
    assert "--transport http" not in line


def post_modern(served, params: dict, name: str) -> tuple[int, dict]:
    """One 2026-07-28 tools/call over raw HTTP, its ``Mcp-Name`` header set to ``name``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        # Asking for the dispatcher on this request alone: the capability in its _meta.
        "io.modelcontextprotocol/clientCapabilities": {"experimental": {CAPABILITY: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {**params, "_meta": meta},
    }
    parts = urlsplit(served.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(
            "POST",
            parts.path,
            json.dumps(message),
            {
                **served.headers,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": name,
            },
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_on_2026_mcp_name_names_the_dispatchers_tool_not_the_one_it_calls(served):
    params = {"name": CALL_TOOL, "arguments": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    status, reply = post_modern(served, params, CALL_TOOL)
    assert status == 200
    validate_reply("tools/call", reply, "2026-07-28")
    assert reply["result"]["content"][0]["text"] == "3"
    assert reply["result"]["resultType"] == "complete"
    # The header mirrors params.name, as for any call: the called tool's name is refused.
    status, reply = post_modern(served, params, "add")
    assert status == 400 and reply["error"]["code"] == -32020
