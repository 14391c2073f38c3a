"""notebooks/apps.ipynb, executed in a real kernel and served: its three views as an MCP
Apps host sees them through the official SDK client (which declares the extension), and
what a client without MCP Apps sees. The browser half (a real host rendering a view and a
slider moved in it) is tests/e2e/browser/test_apps_host.py."""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import nbformat
import pytest
from mcp.client import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import Served, connect
from tests.unit.apps.test_apps import apps_valid
from tests.waiting import OPEN_GET_STREAMS, until

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "apps.ipynb"
UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
VIEW_KEY = "mcp-notebook/view"
STATE = re.compile(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>')


@pytest.fixture(scope="module")
def served(kernel) -> Served:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            kernel.run(cell.source.replace("%mcp start", "%mcp start --port 0"))
    return Served(kernel, kernel.eval("mcp.url"), kernel.eval("mcp.token"))


@asynccontextmanager
async def ui_host(served: Served, **options):
    async with (
        httpx2.AsyncClient(headers=served.headers, timeout=30) as http,
        Client(
            streamable_http_client(served.url, http_client=http),
            mode="legacy",
            extensions=[advertise(UI, {"mimeTypes": [MIME]})],
            **options,
        ) as client,
    ):
        yield client


def models(page: str) -> dict[str, dict]:
    """The embedded widget models of a view document, by model id."""
    (state,) = STATE.findall(page)
    return json.loads(state.replace("<\\/", "</"))["state"]


def model_id(page: str, name: str, **traits) -> str:
    for key, model in models(page).items():
        fits = all(model["state"].get(k) == v for k, v in traits.items())
        if model["model_name"] == name and fits:
            return key
    raise AssertionError(f"no {name} {traits} in the view")


async def read_view(client: Client, uri: str) -> str:
    (contents,) = (await client.read_resource(uri)).contents
    assert contents.mime_type == MIME
    return contents.text


async def test_the_notebooks_three_views_are_listed_with_their_app_only_tools(served):
    async with ui_host(served) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("sales_plot", "explorer", "dashboard"):
            ui = tools[name].meta["ui"]
            assert ui == {"resourceUri": f"ui://notebook/{name}"}
            apps_valid(ui, "McpUiToolMeta")
        for name in ("explorer.set", "dashboard.set"):
            # The view's helper: app-only, and no view of its own for hosts to offer.
            assert tools[name].meta["ui"] == {"visibility": ["app"]}
        listed = {r.uri for r in (await client.list_resources()).resources}
        assert {"ui://notebook/sales_plot", "ui://notebook/explorer"} <= listed
        page = await read_view(client, "ui://notebook/dashboard")
        assert page.startswith("<!DOCTYPE html>") and "Total: 25.00" in page


async def test_the_plot_view_is_drawn_for_each_call(served):
    async with ui_host(served) as client:
        result = await client.call_tool("sales_plot", {"region": "north"})
        assert not result.is_error
        assert "ui://notebook/sales_plot" in result.content[0].text  # text for the model
        html = result.meta[VIEW_KEY]["html"]
        assert re.search(r'<img [^>]*src="data:image/png;base64,', html)
        page = await read_view(client, "ui://notebook/sales_plot")  # the latest call's plot
        assert html in page


async def test_the_explorer_filters_in_the_kernel_when_a_control_moves(served):
    async with ui_host(served) as client:
        shown = await client.call_tool("explorer", {})
        assert "region: 'all'" in shown.content[0].text
        page = await read_view(client, "ui://notebook/explorer")
        dropdown = model_id(page, "DropdownModel", description="region")
        answer = await client.call_tool(
            "explorer.set", {"model_id": dropdown, "state": {"index": 1}}
        )
        assert not answer.is_error, answer.content
        state = answer.meta[VIEW_KEY]["widgets"]["state"]
        values = [m["state"].get("value") for m in state.values()]
        tables = [v for v in values if isinstance(v, str) and "<table" in v]
        assert len(tables) == 1 and "north" not in tables[0] and "east" in tables[0]
    assert served.kernel.eval("region.value") == "east"
    assert served.kernel.eval("mcp.calls[-1].view") == "ui://notebook/explorer"


async def test_the_dashboards_button_runs_its_on_click_in_the_kernel(served):
    async with ui_host(served) as client:
        page = await read_view(client, "ui://notebook/dashboard")
        quantity = model_id(page, "IntSliderModel", description="quantity")
        moved = await client.call_tool(
            "dashboard.set", {"model_id": quantity, "state": {"value": 40}}
        )
        assert "quantity: 40" in moved.content[0].text
        button = model_id(page, "ButtonModel", description="Reset")
        clicked = await client.call_tool(
            "dashboard.set", {"model_id": button, "message": {"event": "click"}}
        )
        assert "quantity: 10" in clicked.content[0].text
        with pytest.raises(MCPError) as refused:
            await client.call_tool(
                "dashboard.set", {"model_id": quantity, "state": {"_model_name": "x"}}
            )
        assert refused.value.code == -32602
        assert str(refused.value).startswith("IntSlider._model_name: not settable")
        total = model_id(page, "HTMLModel")
        with pytest.raises(MCPError, match=r"HTML\.value: not settable"):
            await client.call_tool(
                "dashboard.set", {"model_id": total, "state": {"value": "<img src=x>"}}
            )
    assert served.kernel.eval("quantity.value") == 10


async def test_the_anywidget_view_brings_its_module_and_votes_reach_the_kernel(served):
    async with ui_host(served) as client:
        page = await read_view(client, "ui://notebook/votes")
        votes = model_id(page, "AnyModel", votes=0)
        assert "export default { render }" in models(page)[votes]["state"]["_esm"]
        for count in (1, 2, 3):
            answer = await client.call_tool(
                "votes.set", {"model_id": votes, "state": {"votes": count}}
            )
            assert not answer.is_error, answer.content
        state = answer.meta[VIEW_KEY]["widgets"]["state"][votes]["state"]
        assert (state["votes"], state["verdict"]) == (3, "a hit")  # the kernel's observer
        assert "Votes.verdict: 'a hit'" in answer.content[0].text
    assert served.kernel.eval("(poll.votes, poll.verdict)") == (3, "a hit")


async def test_a_client_without_mcp_apps_gets_the_same_tools_as_plain_text(served):
    async with connect(served, "legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"sales_plot", "explorer", "dashboard"} <= set(tools)
        assert not [n for n in tools if n.endswith(".set")]
        assert all(not (t.meta or {}).get("ui") for t in tools.values())
        result = await client.call_tool("dashboard", {})
        assert "price: 2.5" in result.content[0].text  # the controls, as text
        assert "Total: 25.00" in result.content[0].text


async def test_re_running_a_views_cell_updates_it_for_subscribed_hosts(served):
    updated = asyncio.Event()
    uris: list[str] = []

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            uris.append(message.params.uri)
            updated.set()

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    (cell,) = [c.source for c in notebook.cells if 'mcp.app("dashboard"' in c.source]
    edited = cell.replace("value=10, min=1", "value=20, min=1")
    assert edited != cell
    async with ui_host(served, message_handler=on_message) as client:
        await client.subscribe_resource("ui://notebook/dashboard")
        await until(lambda: served.kernel.eval(OPEN_GET_STREAMS) >= 1, "the client's GET stream")
        served.kernel.run(edited)  # the cell, run again with another default
        await asyncio.wait_for(updated.wait(), 30)
        assert "ui://notebook/dashboard" in uris
        page = await read_view(client, "ui://notebook/dashboard")
        assert "Total: 50.00" in page
