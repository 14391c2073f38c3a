"""`mcp-notebook serve --dispatcher`, over HTTP and stdio: every client gets the two tools.

Under serve, the option is pinned (``mcp.serve_headless``): the notebook's own
``%mcp start`` serves with it too.
"""

from __future__ import annotations

from pathlib import Path

from mcp.client import Client

from mcp_notebook.protocol.dispatcher_tools import CALL_TOOL, LIST_TOOL
from tests.conftest import Served, connect
from tests.serving import ServeProcess
from tests.stdio import module_params

QUICKSTART = str(Path(__file__).resolve().parents[3] / "notebooks" / "quickstart.ipynb")


async def use_the_dispatcher(client: Client) -> None:
    assert [t.name for t in (await client.list_tools()).tools] == [LIST_TOOL, CALL_TOOL, "add"]
    listed = await client.call_tool(LIST_TOOL, {})
    assert [t["name"] for t in listed.structured_content["tools"]] == ["add"]
    added = await client.call_tool(CALL_TOOL, {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert added.content[0].text == "3"


async def test_serve_stdio_with_the_dispatcher():
    params = module_params("serve", QUICKSTART, "--transport", "stdio", "--dispatcher")
    async with Client(params, mode="auto") as client:
        await use_the_dispatcher(client)


async def test_serve_http_with_the_dispatcher():
    serving = ServeProcess(QUICKSTART, "--port", "0", "--token", "s3cret", "--dispatcher")
    try:
        served = Served(kernel=None, url=serving.wait_for_url(), token="s3cret")
        async with connect(served, "legacy") as client:
            await use_the_dispatcher(client)
    finally:
        serving.stop()
