"""``call.to_cell()``: a recorded call becomes a new cell below, through the execute reply's
``set_next_input`` payload (what JupyterLab honours), and running that cell gives the
recorded result: the arguments are the ones the tool received, not the client's JSON."""

from __future__ import annotations

import ast
import html

import pytest
from mcp.types import Implementation

from tests.conftest import connect, start_server

SETUP = '''
import datetime
import pandas as pd

@mcp.tool
def since_day(sales: pd.DataFrame, since: datetime.date, region: str = "all") -> dict:
    """Units sold since a day."""
    kept = sales[sales["units"] > 0]
    return {
        "units": int(kept["units"].sum()),
        "since": since.isoformat(),
        "types": [type(sales).__name__, type(since).__name__],
        "region": region,
    }

from pydantic import BaseModel

class Point(BaseModel):
    x: int
    y: int

@mcp.tool
def norm(p: Point) -> int:
    """Squared length."""
    return p.x * p.x + p.y * p.y

@mcp.tool(name="renamed")
async def hidden_name(n: int) -> int:
    """An async tool whose function is not its name."""
    return n + 1

pwned = []  # what a generated cell that ran a client's text as code would append to

@mcp.tool
def options(**given) -> dict:
    """Takes any keys: the client chooses their names."""
    return given

from mcp_notebook.registry import Tool

def _read(uri: str) -> str:
    return uri

# A name the @mcp.tool check would refuse, registered past it.
mcp.registry.add_tool(Tool(_read, "read\\npwned.append('tool name')"))
'''


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP)


def next_input(reply: dict) -> str:
    (payload,) = [p for p in reply["content"]["payload"] if p["source"] == "set_next_input"]
    assert payload["replace"] is False  # a new cell below, the current one stays
    return payload["text"]


async def test_a_call_becomes_a_cell_that_reproduces_it(served):
    arguments = {
        "sales": [{"day": "2024-05-01", "units": 3}, {"day": "2024-06-01", "units": 4}],
        "since": "2024-05-15",
    }
    async with connect(served, "legacy") as agent:
        result = await agent.call_tool("since_day", arguments)
    recorded = result.structured_content
    assert recorded["types"] == ["DataFrame", "date"]
    kernel = served.kernel
    reply, _ = kernel.run("mcp.calls[-1].to_cell()")
    code = next_input(reply)
    # What the tool received, written as Python: a DataFrame from its records, a date.
    assert "pd.DataFrame.from_records([{'day': '2024-05-01', 'units': 3}" in code
    assert "since=datetime.date(2024, 5, 15)," in code
    assert code.splitlines()[-1] == ")" and "since_day(\n" in code
    kernel.run(code)
    assert kernel.eval("_") == recorded  # the cell's result is the call's


async def test_an_async_tool_becomes_an_awaited_call(served):
    async with connect(served, "legacy") as agent:
        result = await agent.call_tool("renamed", {"n": 41})
    assert result.content[0].text == "42"
    reply, _ = served.kernel.run("mcp.calls[-1].to_cell()")
    code = next_input(reply)
    assert "await hidden_name(\n    n=41,\n)" in code  # the function, by its own name
    served.kernel.run(code)
    assert served.kernel.eval("_") == 42
    served.kernel.run("_hidden = hidden_name\ndel hidden_name")
    try:  # no longer in the globals: reached through the registry
        code = next_input(served.kernel.run("mcp.calls[-1].to_cell()")[0])
        assert "await mcp.registry.tools['renamed'].fn(" in code
        served.kernel.run(code)
        assert served.kernel.eval("_") == 42
    finally:
        served.kernel.run("hidden_name = _hidden")


async def test_a_value_without_a_literal_is_converted_in_the_cell_as_the_server_did(served):
    async with connect(served, "legacy") as agent:
        result = await agent.call_tool("norm", {"p": {"x": 3, "y": 4}})
    assert result.content[0].text == "25"
    code = next_input(served.kernel.run("mcp.calls[-1].to_cell()")[0])
    assert "p=mcp.registry.tools['norm'].signature.convert({'p': {'x': 3, 'y': 4}})['p']" in code
    served.kernel.run(code)
    assert served.kernel.eval("_") == 25


def test_only_tool_calls_with_whole_arguments_become_cells(served):
    reply, _ = served.kernel.try_run(
        "from mcp_notebook.protocol.calls import CallRecord\n"
        "CallRecord('resources/read', 'df://x', {}, 'me').to_cell()"
    )
    assert reply["content"]["status"] == "error"
    assert "only a tools/call becomes a cell" in reply["content"]["evalue"]


async def test_the_monitors_detail_shows_the_cell_code_to_copy(served):
    # A click on a widget runs in a comm handler: no execute reply carries its
    # set_next_input, so the monitor shows the very code to_cell() would insert.
    async with connect(served, "legacy") as agent:
        await agent.call_tool("renamed", {"n": 1})
    kernel = served.kernel
    kernel.run("from mcp_notebook.ui import render")
    detail = kernel.eval("render.detail(mcp.calls[-1])")
    code = next_input(kernel.run("mcp.calls[-1].to_cell()")[0])
    assert f"<pre class='mcp-mono mcp-cell-code'>{html.escape(code)}</pre>" in detail
    assert "await hidden_name(\n    n=1,\n)" in code
    # A tool gone since: the rest of the details, and no code that would not run.
    kernel.run("_gone = mcp.registry.tools['renamed']; mcp.registry.remove('renamed')")
    try:
        assert "mcp-cell-code" not in kernel.eval("render.detail(mcp.calls[-1])")
    finally:
        kernel.run("mcp.registry.add_tool(_gone)")


# Everything that ends a line for Python, for str.splitlines or for IPython's transforms.
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1e", "\x85"]


async def test_cells_of_hostile_names_keys_and_uris_run_no_client_text(served):
    """A client's name, a tool's name, argument keys and URIs are written as data (repr)
    or on one line of a comment: running each generated cell runs only the call."""
    kernel = served.kernel
    calls = [
        (f"agent{sep}pwned.append({i})  #", "options", {"a": 1})  # clientInfo.name
        for i, sep in enumerate(BREAKS)
    ]
    calls.append(("agent\u202e!touch PWNED", "options", {"b": 2}))  # bidi, shell escape
    keys = [
        "x=1)\npwned.append('key')\nf(y",
        "class",  # a keyword: no keyword argument can say it
        "a b",
        "\ufb01",  # "ﬁ": as a keyword argument Python would read it as "fi"
        "k\u2028pwned.append('key2')",
    ]
    calls.append(("agent", "options", {key: key for key in keys}))
    uri = "notes://x\npwned.append('uri')\u2028#"
    calls.append(("agent", "read\npwned.append('tool name')", {"uri": uri}))
    for name, tool, arguments in calls:
        async with connect(
            served, "legacy", client_info=Implementation(name=name, version="1")
        ) as agent:
            result = await agent.call_tool(tool, arguments)
        assert not result.is_error, result
        code = next_input(kernel.run("mcp.calls[-1].to_cell()")[0])
        kernel.run(code)
        assert kernel.eval("pwned") == [], code
        # One statement (the call): everything else is a comment.
        statements = ast.parse(code).body
        assert len(statements) == 1 and isinstance(statements[0], ast.Expr), code
        expected = arguments if tool == "options" else uri
        assert kernel.eval("_") == expected  # the cell makes the call, with the client's data
