"""MCP Apps (``io.modelcontextprotocol/ui``): views registered from cells, as hosts see them.

Tool and resource metadata are validated against the extension's own JSON schema
(tests/spec/ext-apps.schema.json) and every reply against the MCP schema of its era.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import jsonschema
import matplotlib
import pandas as pd
import pytest
from referencing import Registry, Resource

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session, modern
from mcp_notebook.protocol.jsonrpc import RpcError
from tests.schema import SPEC, validate, validate_reply

matplotlib.use("Agg")
import matplotlib.pyplot as plt

UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
UI_CAPS = {"extensions": {UI: {"mimeTypes": [MIME]}}}
MODERN = "2026-07-28"
APPS_SCHEMA = SPEC / "ext-apps.schema.json"


@cache
def _apps_validator(definition: str) -> jsonschema.Draft202012Validator:
    root = json.loads(APPS_SCHEMA.read_text())
    registry = Registry().with_resource("urn:apps", Resource.from_contents(root))
    return jsonschema.Draft202012Validator(
        {"$ref": f"urn:apps#/$defs/{definition}"}, registry=registry
    )


def apps_valid(instance: Any, definition: str) -> Any:
    _apps_validator(definition).validate(instance)
    return instance


_ids = iter(range(1, 10**6))


async def ask(server: Server, session: Session, method: str, params: dict | None = None) -> dict:
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    answer = await server.handle(message, session)
    validate_reply(method, answer)
    return answer


async def handshake(server: Server, capabilities: dict) -> tuple[Session, dict]:
    session = Session()
    answer = await ask(
        server,
        session,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "1"},
        },
    )
    return session, answer["result"]


def modern_request(method: str, params: dict | None, caps: dict) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    return {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def notebook() -> NotebookMCP:
    mcp = NotebookMCP()
    sales = pd.DataFrame({"region": ["north", "south"], "units": [3, 5]})
    mcp.app("sales_table", sales, title="Sales")

    @mcp.tool(app=lambda total: pd.DataFrame({"total": [total]}))
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @mcp.tool(visibility=["app"], app="ui://notebook/sales_table")
    def refresh() -> str:
        """Reload the sales table."""
        return "reloaded"

    @mcp.tool
    def plain() -> str:
        """No view."""
        return "plain"

    return mcp


# -- registration --------------------------------------------------------------------------


async def test_a_ui_host_sees_each_app_tool_with_its_view_and_the_extension_declared():
    server = Server(notebook().registry)
    session, init = await handshake(server, UI_CAPS)
    assert init["capabilities"]["extensions"] == {UI: {}}
    tools = {t["name"]: t for t in (await ask(server, session, "tools/list"))["result"]["tools"]}
    assert tools["sales_table"]["_meta"]["ui"] == {"resourceUri": "ui://notebook/sales_table"}
    assert tools["add"]["_meta"]["ui"] == {"resourceUri": "ui://notebook/add"}
    assert tools["refresh"]["_meta"]["ui"] == {
        "resourceUri": "ui://notebook/sales_table",
        "visibility": ["app"],
    }
    assert "_meta" not in tools["plain"]
    for name in ("sales_table", "add", "refresh"):
        apps_valid(tools[name]["_meta"]["ui"], "McpUiToolMeta")
    resources = (await ask(server, session, "resources/list"))["result"]["resources"]
    views = {r["uri"]: r for r in resources if r["uri"].startswith("ui://")}
    assert set(views) == {"ui://notebook/sales_table", "ui://notebook/add"}
    assert {r["mimeType"] for r in views.values()} == {MIME}


async def test_a_client_without_the_extension_gets_plain_tools_and_no_app_only_tool():
    server = Server(notebook().registry)
    session, init = await handshake(server, {})
    assert UI in init["capabilities"]["extensions"]  # the server still says it can
    tools = {t["name"]: t for t in (await ask(server, session, "tools/list"))["result"]["tools"]}
    assert set(tools) == {"sales_table", "add", "plain"}
    assert all("_meta" not in t for t in tools.values())
    resources = (await ask(server, session, "resources/list"))["result"]["resources"]
    assert not [r for r in resources if r["uri"].startswith("ui://")]
    # Nor can it call the app-only tool it was never shown; the rest work as plain tools.
    refused = await ask(server, session, "tools/call", {"name": "refresh", "arguments": {}})
    assert refused["error"]["code"] == -32602
    added = await ask(server, session, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert added["result"]["content"][0] == {"type": "text", "text": "5"}
    # A client declaring the extension without the MCP App mime type is no UI host either.
    other, _ = await handshake(server, {"extensions": {UI: {"mimeTypes": ["text/uri-list"]}}})
    listed = (await ask(server, other, "tools/list"))["result"]["tools"]
    assert "refresh" not in {t["name"] for t in listed}


async def test_the_modern_era_declares_the_extension_and_reads_it_per_request():
    server = Server(notebook().registry)
    discover = modern_request("server/discover", None, {})
    found = await server.handle(discover, modern.open_request(discover))
    assert found["result"]["capabilities"]["extensions"][UI] == {}
    validate(found["result"], "DiscoverResult", MODERN)
    for caps, expected in ((UI_CAPS, True), ({}, False)):
        message = modern_request("tools/list", None, caps)
        answer = await server.handle(message, modern.open_request(message))
        validate(answer["result"], "ListToolsResult", MODERN)
        names = {t["name"] for t in answer["result"]["tools"]}
        assert ("refresh" in names) is expected
        add = next(t for t in answer["result"]["tools"] if t["name"] == "add")
        assert ("_meta" in add) is expected


async def test_the_view_resource_is_one_self_contained_html_document():
    server = Server(notebook().registry)
    session, _ = await handshake(server, UI_CAPS)
    read = await ask(server, session, "resources/read", {"uri": "ui://notebook/sales_table"})
    (contents,) = read["result"]["contents"]
    assert contents["mimeType"] == MIME
    page = contents["text"]
    assert page.startswith("<!DOCTYPE html>")
    assert "<td>north</td>" in page  # the DataFrame's own HTML
    # Nothing is loaded from elsewhere, so nothing is declared: the host's default CSP holds.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?:", page)
    assert "csp" not in (contents.get("_meta") or {}).get("ui", {})


def test_each_app_tool_returns_text_and_a_per_call_view_its_rendering():
    mcp = notebook()
    add = mcp.registry.tools["add"]
    result = add.result(add.invoke({"a": 2, "b": 5}, {}))
    validate(result, "CallToolResult")
    assert result["content"] == [{"type": "text", "text": "7"}]
    view = result["_meta"]["mcp-notebook/view"]
    assert "<td>7</td>" in view["html"]
    # Read outside any session's call, the resource shows the view's default: which
    # session sees which call is tests/unit/apps/test_apps_hostile.py's.
    page = mcp.registry.resources["ui://notebook/add"].read()["contents"][0]["text"]
    assert "waiting for a result" in page and "<td>7</td>" not in page
    table = mcp.registry.tools["sales_table"]
    shown = table.result(table.invoke({}, {}))
    assert "| north |" in shown["content"][0]["text"]  # the model reads the table as text


def test_a_figure_view_is_an_inline_image_and_the_tool_still_says_something():
    mcp = NotebookMCP()
    figure, axes = plt.subplots()
    axes.plot([1, 3, 2])
    mcp.app("chart", figure, title="A chart")
    page = mcp.registry.resources["ui://notebook/chart"].read()["contents"][0]["text"]
    assert re.search(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', page)
    tool = mcp.registry.tools["chart"]
    result = tool.result(tool.invoke({}, {}))
    texts = [b["text"] for b in result["content"] if b["type"] == "text"]
    assert texts and "ui://notebook/chart" in texts[0]
    plt.close(figure)


def test_a_view_that_loads_from_elsewhere_declares_exactly_those_origins():
    from IPython.display import HTML

    mcp = NotebookMCP()
    page = HTML(
        '<script src="https://cdn.example.com/lib.js"></script>'
        '<link rel="stylesheet" href="//fonts.example.org/a.css">'
        '<img src="data:image/png;base64,AAAA"><iframe src="https://player.example.net/v"></iframe>'
        '<style>@import "https://css.example.com/x.css";</style><a href="https://not.loaded.com">x</a>'
    )
    mcp.app("embed", page, csp={"connectDomains": ["https://api.example.com"]})
    contents = mcp.registry.resources["ui://notebook/embed"].read()["contents"][0]
    csp = contents["_meta"]["ui"]["csp"]
    assert csp == {
        "resourceDomains": [
            "https://cdn.example.com",
            "https://css.example.com",
            "https://fonts.example.org",
        ],
        "frameDomains": ["https://player.example.net"],
        "connectDomains": ["https://api.example.com"],
    }
    apps_valid(contents["_meta"]["ui"], "McpUiResourceMeta")
    # The listing says the same: the author's markup is known when the view is registered.
    listed = mcp.registry.resources["ui://notebook/embed"].definition
    assert listed["_meta"]["ui"]["csp"] == csp


def test_a_function_view_of_the_tools_own_arguments():
    mcp = NotebookMCP()

    def scaled(factor: float = 2.0):
        """A scaled series."""
        return pd.DataFrame({"x": [1 * factor, 2 * factor]})

    mcp.app("scaled", scaled)
    tool = mcp.registry.tools["scaled"]
    assert tool.input_schema["properties"]["factor"]["type"] == "number"
    waiting = mcp.registry.resources["ui://notebook/scaled"].read()["contents"][0]["text"]
    assert "waiting for a result" in waiting
    result = tool.result(tool.invoke({"factor": 10}, {}))
    assert "<td>20.0</td>" in result["_meta"]["mcp-notebook/view"]["html"]
    assert "| 20.0 |" in result["content"][0]["text"]


def test_bad_app_options_are_clear_errors_at_registration():
    mcp = NotebookMCP()
    with pytest.raises(ValueError, match="visibility"):
        mcp.tool(name="t", visibility=["agent"])(lambda: 1)
    with pytest.raises(TypeError, match="list"):
        mcp.tool(name="t", visibility="app")(lambda: 1)
    with pytest.raises(ValueError, match="csp= takes"):
        mcp.app("x", "text", csp={"scriptDomains": ["https://a.com"]})
    assert not mcp.registry.tools


def test_re_registering_a_view_announces_its_resource_updated_and_remove_takes_it_away():
    mcp = NotebookMCP()
    heard: list[tuple[str, str | None]] = []
    mcp.registry.subscribe(lambda kind, detail: heard.append((kind, detail)))
    mcp.app("board", pd.DataFrame({"a": [1]}))
    heard.clear()
    mcp.app("board", pd.DataFrame({"a": [2]}))  # the cell ran again
    assert ("updated", "ui://notebook/board") in heard
    assert (
        "<td>2</td>" in mcp.registry.resources["ui://notebook/board"].read()["contents"][0]["text"]
    )
    mcp.remove("board")
    assert "ui://notebook/board" not in mcp.registry.resources
    assert "board" not in mcp.registry.tools


def test_a_plotly_figure_brings_plotly_js_inline_and_declares_no_origin():
    import plotly.graph_objects as go

    mcp = NotebookMCP()
    mcp.app("bars", go.Figure(go.Bar(x=["a", "b"], y=[3, 5])))
    contents = mcp.registry.resources["ui://notebook/bars"].read()["contents"][0]
    page = contents["text"]
    assert "Plotly.newPlot" in page and '"y":[3,5]' in page.replace(" ", "")
    assert not re.search(r"<script[^>]+src=", page)  # plotly.js itself is inline
    assert "csp" not in (contents.get("_meta") or {}).get("ui", {})


def test_widget_views_embed_their_state_and_set_only_their_own_traits():
    import ipywidgets as widgets

    mcp = NotebookMCP()
    slider = widgets.IntSlider(value=2, description="n")
    doubled = widgets.Label(value="4")
    slider.observe(lambda change: setattr(doubled, "value", str(2 * change["new"])), "value")
    mcp.app("double", widgets.VBox([slider, doubled]))
    page = mcp.registry.resources["ui://notebook/double"].read()["contents"][0]["text"]
    assert 'type="application/vnd.jupyter.widget-state+json"' in page
    assert '"setTool": "double.set"' in page
    tool = mcp.registry.tools["double.set"]
    assert tool.app_only and tool.definition["_meta"]["ui"]["visibility"] == ["app"]
    result = tool.result(tool.invoke({"model_id": slider.model_id, "state": {"value": 5}}, {}))
    assert doubled.value == "10"  # the observer ran
    state = result["_meta"]["mcp-notebook/view"]["widgets"]["state"]
    assert state[doubled.model_id]["state"]["value"] == "10"
    assert "n: 5" in result["content"][0]["text"]
    other = widgets.IntSlider()
    with pytest.raises(RpcError, match="no widget"):
        tool.invoke({"model_id": other.model_id, "state": {"value": 1}}, {})
    with pytest.raises(RpcError, match=r"IntSlider\._view_module: not settable"):
        tool.invoke({"model_id": slider.model_id, "state": {"_view_module": "evil"}}, {})


async def test_calls_from_a_view_are_marked_in_the_history_and_the_monitor():
    from mcp_notebook.ui.render import detail, row

    mcp = notebook()
    server = Server(mcp.registry, calls=mcp.calls)
    session, _ = await handshake(server, UI_CAPS)
    await ask(server, session, "tools/call", {"name": "refresh", "arguments": {}})
    said = {"mcp-notebook/view": {"from": "ui://notebook/add"}}
    params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": said}
    await ask(server, session, "tools/call", params)
    await ask(server, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    refresh, from_view, from_model = list(mcp.calls)[-3:]
    assert refresh.view == "ui://notebook/sales_table"  # app-only: only a view calls it
    assert from_view.view == "ui://notebook/add"
    assert from_model.view is None
    assert "view:refresh" in row(refresh) and "view:" not in row(from_model)
    assert "from the app view ui://notebook/sales_table" in detail(refresh)


def test_a_styled_frame_is_its_styler_html():
    mcp = NotebookMCP()
    styled = pd.DataFrame({"units": [3, 12]}).style.highlight_max(color="yellow")
    view = mcp.app("styled", styled)
    assert repr(view) == "<AppView ui://notebook/styled (Styler)>"
    page = mcp.registry.resources["ui://notebook/styled"].read()["contents"][0]["text"]
    assert "background-color: yellow" in page and ">12</td>" in page


async def test_the_dispatcher_never_offers_the_model_an_app_only_tool():
    server = Server(notebook().registry, dispatcher=True)
    session, _ = await handshake(server, UI_CAPS)
    listed = await ask(
        server, session, "tools/call", {"name": "list_notebook_tools", "arguments": {}}
    )
    names = {t["name"] for t in listed["result"]["structuredContent"]["tools"]}
    assert "add" in names and "refresh" not in names
    dispatched = await ask(
        server,
        session,
        "tools/call",
        {"name": "call_notebook_tool", "arguments": {"name": "refresh", "arguments": {}}},
    )
    assert "error" in dispatched or dispatched["result"]["isError"]


def test_an_anywidget_view_embeds_its_module_and_whole_state_and_sets_its_traits():
    import anywidget
    import traitlets

    class Counter(anywidget.AnyWidget):
        _esm = "export default { render({ model, el }) { el.textContent = model.get('count'); } };"
        _css = ".counter { color: red; }"
        count = traitlets.Int(0).tag(sync=True)
        said = traitlets.Unicode("").tag(sync=True)

    counter = Counter()
    counter.observe(lambda change: setattr(counter, "said", f"saw {change['new']}"), "count")
    messages: list[dict] = []
    counter.on_msg(lambda widget, content, buffers: messages.append(content))
    mcp = NotebookMCP()
    mcp.app("counter", counter)
    (contents,) = mcp.registry.resources["ui://notebook/counter"].read()["contents"]
    page = contents["text"]
    state_tag = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', page, re.S
    )
    assert state_tag is not None
    models = json.loads(state_tag.group(1))["state"]
    model = models[counter.model_id]
    assert (model["model_module"], model["model_name"]) == ("anywidget", "AnyModel")
    # Its front end knows none of its traits: the module and every default go along.
    assert model["state"]["_esm"] == Counter._esm
    assert model["state"]["_css"] == Counter._css
    assert model["state"]["count"] == 0 and model["state"]["said"] == ""
    # The bundle that brings module "anywidget" to life, and nothing to fetch: no origin.
    assert "mcpNotebookAnywidget" in page and "AnyModel" in page
    assert "csp" not in (contents.get("_meta") or {}).get("ui", {})
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?:", page)

    tool = mcp.registry.tools["counter.set"]
    result = tool.result(tool.invoke({"model_id": counter.model_id, "state": {"count": 3}}, {}))
    assert counter.said == "saw 3"  # the kernel's observer ran
    state = result["_meta"]["mcp-notebook/view"]["widgets"]["state"][counter.model_id]["state"]
    assert (state["count"], state["said"]) == (3, "saw 3")
    assert "Counter.count: 3" in result["content"][0]["text"]
    tool.invoke({"model_id": counter.model_id, "message": {"kind": "reset"}}, {})
    assert messages == [{"kind": "reset"}]  # model.send reaches on_msg
    # Back at its default, the count still goes along (the view must show the 0).
    result = tool.result(tool.invoke({"model_id": counter.model_id, "state": {"count": 0}}, {}))
    state = result["_meta"]["mcp-notebook/view"]["widgets"]["state"][counter.model_id]["state"]
    assert state["count"] == 0


def test_re_running_an_unchanged_views_cell_updates_it_without_list_changed():
    mcp = NotebookMCP()
    heard: list[tuple[str, str | None]] = []
    mcp.registry.subscribe(lambda kind, detail: heard.append((kind, detail)))
    mcp.app("board", pd.DataFrame({"a": [1]}), title="Board")
    assert ("tools", None) in heard and ("resources", None) in heard
    heard.clear()
    mcp.app("board", pd.DataFrame({"a": [2]}), title="Board")  # same listing, new rows
    assert heard == [("updated", "ui://notebook/board")]
    heard.clear()
    mcp.app("board", pd.DataFrame({"a": [3]}), title="Scores")  # its listing changed
    assert ("tools", None) in heard and ("resources", None) in heard
    assert ("updated", "ui://notebook/board") in heard


def test_re_running_an_unchanged_widget_views_cell_keeps_its_set_tool_quiet():
    import ipywidgets as widgets

    mcp = NotebookMCP()
    mcp.app("knob", widgets.IntSlider(value=1))
    heard: list[tuple[str, str | None]] = []
    mcp.registry.subscribe(lambda kind, detail: heard.append((kind, detail)))
    slider = widgets.IntSlider(value=2)
    mcp.app("knob", slider)  # new widgets, same tools and resource listing
    assert heard == [("updated", "ui://notebook/knob")]
    tool = mcp.registry.tools["knob.set"]
    tool.invoke({"model_id": slider.model_id, "state": {"value": 7}}, {})
    assert slider.value == 7  # the new tool, bound to the new tree, is the one served
