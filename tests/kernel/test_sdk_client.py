"""The official MCP Python SDK client against a live notebook, in both connection modes."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import MODES, connect, start_server
from tests.schema import validate
from tests.sdk_scenarios import (
    check_add_and_echo,
    check_template_missing_resource_and_prompt,
    check_tool_errors,
    dump,
)
from tests.sources import ADD_ONE_BARE
from tests.waiting import OPEN_GET_STREAMS, until

SETUP = '''
import pandas as pd

@mcp.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: first addend
        b: second addend
    """
    return a + b

@mcp.tool
def where_am_i() -> str:
    import threading
    return f"{threading.current_thread().name} {secret}"

@mcp.tool
async def slow_echo(text: str) -> str:
    import asyncio
    await asyncio.sleep(0.05)
    return text.upper()

@mcp.tool
def explode(reason: str) -> str:
    raise ValueError(f"cannot do that: {reason}")

secret = "from-a-cell"
sales = pd.DataFrame({"region": ["north", "south"], "units": [120, 80]})
mcp.resource(sales, name="sales", description="units per region")

@mcp.resource_template("notes://{day}")
def notes(day: str) -> str:
    return f"notes for {day}"

mcp.prompt("summarize", "Summarize {topic} in {n} bullet points.", defaults={"n": "3"})
'''


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP)


@MODES
async def test_lists_what_the_cells_registered(served, mode):
    async with connect(served, mode) as client:
        assert client.protocol_version == {"legacy": "2025-11-25", "auto": "2026-07-28"}[mode]
        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        assert names == ["add", "where_am_i", "slow_echo", "explode"]
        add = tools.tools[0]
        assert add.description == "Add two numbers."
        assert add.input_schema["properties"]["a"] == {
            "type": "integer",
            "description": "first addend",
        }
        assert add.input_schema["required"] == ["a"]
        validate(dump(tools), "ListToolsResult")
        resources = await client.list_resources()
        assert [(r.uri, r.mime_type) for r in resources.resources] == [("df://sales", "text/csv")]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == [
            "df://sales{?offset,limit,columns,format}",
            "df://sales/schema",
            "notes://{day}",
        ]
        prompts = await client.list_prompts()
        assert [(a.name, a.required) for a in prompts.prompts[0].arguments] == [
            ("topic", True),
            ("n", False),
        ]


@MODES
async def test_calls_tools_on_the_kernel_thread(served, mode):
    async with connect(served, mode) as client:
        await check_add_and_echo(client)
        where = await client.call_tool("where_am_i", {})
        assert where.content[0].text == "MainThread from-a-cell"


@MODES
async def test_tool_errors_are_results_not_crashes(served, mode):
    async with connect(served, mode) as client:
        await check_tool_errors(client, Exception)
    # The traceback stays in the notebook, read as IPython shows a cell's: it starts at the
    # user's own frame, the cell named as IPython names it, none of the package's frames.
    text = served.kernel.eval("mcp.calls[-1].traceback")
    frames = [line for line in text.splitlines() if line.startswith(("  Cell In[", '  File "'))]
    assert frames[0].startswith("  Cell In[") and frames[0].endswith(", in explode"), text
    assert "mcp_notebook" not in text and "ipykernel_" not in text
    assert text.rstrip().endswith("ValueError: cannot do that: no")
    # ...while %mcp debug still gets every frame.
    depth = "len(__import__('traceback').extract_tb(mcp.calls[-1].error.__traceback__))"
    assert served.kernel.eval(depth) > len(frames)


@MODES
async def test_reads_resources_and_gets_prompts(served, mode):
    async with connect(served, mode) as client:
        read = await client.read_resource("df://sales")
        assert read.contents[0].text.splitlines() == ["region,units", "north,120", "south,80"]
        await check_template_missing_resource_and_prompt(client, mode, "df://nothing", Exception)


@MODES
async def test_redefining_a_tool_in_a_cell_reaches_the_client(served, mode, afterwards):
    changed = asyncio.Event()
    seen: list[str] = []

    async def on_message(message) -> None:
        method = getattr(message, "method", None)
        if method:
            seen.append(method)
        if method == "notifications/tools/list_changed":
            changed.set()

    redefine = (
        '@mcp.tool(description="Add two numbers, then ten.")\n'
        "def add(a: int, b: int = 1) -> int:\n"
        "    return a + b + 10\n"
    )
    afterwards(served.kernel, ADD_ONE_BARE)
    async with connect(served, mode, message_handler=on_message) as client:
        await client.list_tools()
        if mode == "legacy":
            await until(lambda: served.kernel.eval(OPEN_GET_STREAMS) >= 1, "the GET stream")
            served.kernel.run(redefine)
        else:  # 2026-07-28: changes arrive on a subscriptions/listen stream
            async with client.listen(tools_list_changed=True) as subscription:
                served.kernel.run(redefine)
                await asyncio.wait_for(subscription.__anext__(), 10)
        await asyncio.wait_for(changed.wait(), 10)
        tools = await client.list_tools()
        assert [t.name for t in tools.tools].count("add") == 1
        assert tools.tools[0].name == "add"  # same place in the list
        assert tools.tools[0].description == "Add two numbers, then ten."
        result = await client.call_tool("add", {"a": 1, "b": 1})
        assert result.content[0].text == "12"
    assert "notifications/tools/list_changed" in seen


async def test_removing_a_prompt_notifies_and_hides_it(served, afterwards):
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/prompts/list_changed":
            changed.set()

    afterwards(served.kernel, 'try:\n    mcp.remove("temporary")\nexcept KeyError:\n    pass')
    async with connect(served, "legacy", message_handler=on_message) as client:
        await until(lambda: served.kernel.eval(OPEN_GET_STREAMS) >= 1, "the GET stream")
        served.kernel.run('mcp.prompt("temporary", "just {x}")')
        await asyncio.wait_for(changed.wait(), 10)
        assert "temporary" in [p.name for p in (await client.list_prompts()).prompts]
        changed.clear()
        served.kernel.run('mcp.remove("temporary")')
        await asyncio.wait_for(changed.wait(), 10)
        assert "temporary" not in [p.name for p in (await client.list_prompts()).prompts]
