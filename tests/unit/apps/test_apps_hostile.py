"""App views and what a client sends: it stays text, it declares no origin, it reaches
only the session that sent it.

pandas' ``Styler`` writes values into its HTML unescaped, so the README's pattern
``@mcp.tool(app=lambda total: pd.DataFrame({"total": [total]}).style)`` turned a result
holding ``<img src=x onerror=...>`` into live markup; ``_meta.ui.csp`` was scanned from
that markup (a ``<script src="https://evil.example/x.js">`` in a result declared
``https://evil.example``); and ``resources/read`` of a per-call view showed the latest
call's rendering, whoever made it, to every session. Through the sans-IO server, both
eras; the browser side is tests/e2e/browser/test_apps_host.py.
"""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.display import HTML

from mcp_notebook import NotebookMCP
from mcp_notebook.apps import view as app_view
from mcp_notebook.protocol import Server, modern
from tests.unit.apps.test_apps import UI_CAPS, ask, handshake, modern_request

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = '<script src="https://evil.example/x.js"></script>'


class Wrapper:
    """An author's object whose HTML is a Styler's."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return "<h3>Notes</h3>" + pd.DataFrame({"note": [self.text]}).style.to_html()


def notebook() -> NotebookMCP:
    mcp = NotebookMCP()

    @mcp.tool(app=lambda total: pd.DataFrame({"total": [total]}).style)
    def echo(text: str) -> str:
        """The README's pattern: the result in a styled table."""
        return text

    @mcp.tool(app=lambda label: pd.DataFrame({label: [1]}, index=[label]).style)
    def labels(label: str) -> str:
        """A client's text as the column and row labels."""
        return label

    @mcp.tool(app=lambda words: pd.DataFrame({"w": [words]}).style)
    def listed(words: list[str]) -> list[str]:
        """A client's list in one cell."""
        return words

    @mcp.tool(app=lambda text: pd.DataFrame({"t": [text]}).style.format("<b class='mine'>{}</b>"))
    def bold(text: str) -> str:
        """The author's formatter adds markup around the client's text."""
        return text

    @mcp.tool(app=lambda text: pd.DataFrame({"t": [text]}).style.format(escape="html"))
    def pre_escaped(text: str) -> str:
        """pandas' own escaping asked for: not escaped twice."""
        return text

    @mcp.tool(app=lambda text: Wrapper(text))
    def wrapped(text: str) -> str:
        """A Styler inside an author's _repr_html_."""
        return text

    @mcp.tool(
        app=lambda text: pd.DataFrame({"t": [1]}).style.set_tooltips(pd.DataFrame({"t": [text]}))
    )
    def tooltip(text: str) -> str:
        """A client's text as a tooltip (a CSS string in a <style>)."""
        return text

    def noted(text: str):
        """A function view: its parameters are the tool's."""
        return pd.DataFrame({"note": [text]}).style

    mcp.app("noted", noted)

    @mcp.tool(app=lambda page: HTML(page), name="raw")
    def raw(page: str) -> str:
        """The author shows a call's text as HTML: the markup is the call's, not the author's."""
        return page

    return mcp


async def _call(server: Server, session, tool: str, arguments: dict) -> dict:
    answer = await ask(server, session, "tools/call", {"name": tool, "arguments": arguments})
    return answer["result"]


def _html(result: dict) -> str:
    return result["_meta"]["mcp-notebook/view"]["html"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("echo", {"text": IMG}),
        ("labels", {"label": IMG}),
        ("listed", {"words": ["ok", IMG]}),
        ("wrapped", {"text": IMG}),
        ("noted", {"text": IMG}),
    ],
)
async def test_a_clients_markup_in_a_styler_view_stays_text(tool, arguments):
    server = Server(notebook().registry)
    session, _ = await handshake(server, UI_CAPS)
    shown = _html(await _call(server, session, tool, arguments))
    assert "<img" not in shown
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown
    # And the caller's own read of the view shows it as text too.
    read = await ask(server, session, "resources/read", {"uri": f"ui://notebook/{tool}"})
    page = read["result"]["contents"][0]["text"]
    assert "<img" not in page and "&lt;img src=x" in page


async def test_the_authors_formatter_keeps_its_markup_and_pandas_escaping_is_not_doubled():
    server = Server(notebook().registry)
    session, _ = await handshake(server, UI_CAPS)
    bold = _html(await _call(server, session, "bold", {"text": IMG}))
    assert "<b class='mine'>&lt;img src=x onerror=alert(1)&gt;</b>" in bold
    once = _html(await _call(server, session, "pre_escaped", {"text": "a < b & c"}))
    assert ">a &lt; b &amp; c</td>" in once


async def test_a_tooltip_cannot_end_the_styles_element():
    server = Server(notebook().registry)
    session, _ = await handshake(server, UI_CAPS)
    hostile = '"}</style><img src=x onerror=alert(1)><style>{'
    shown = _html(await _call(server, session, "tooltip", {"text": hostile}))
    assert "<img" not in shown and "</style><img" not in shown
    assert 'content: "\\22 }\\3c /style\\3e \\3c img' in shown


def test_the_notebooks_own_display_of_a_styler_is_unchanged():
    notebook()  # registering views installs the escaping renderer
    styled = pd.DataFrame({"t": ["<b>bold</b>"]}).style
    assert "<b>bold</b>" in styled.to_html()  # escaping holds only while a view is drawn


async def test_a_calls_markup_declares_no_origin():
    server = Server(notebook().registry)
    session, _ = await handshake(server, UI_CAPS)
    for tool, arguments in (("echo", {"text": SCRIPT}), ("raw", {"page": SCRIPT})):
        await _call(server, session, tool, arguments)
        read = await ask(server, session, "resources/read", {"uri": f"ui://notebook/{tool}"})
        (contents,) = read["result"]["contents"]
        assert "evil.example" in contents["text"]  # the caller's call is shown...
        assert "csp" not in (contents.get("_meta") or {}).get("ui", {})  # ...but not trusted


def test_a_per_call_view_declares_what_the_author_gave_with_csp():
    mcp = NotebookMCP()

    def chart(n: int = 1):
        """Loads from a CDN the author names."""
        return HTML(f'<script src="https://cdn.example.com/lib.js"></script><p>{n}</p>')

    mcp.app("chart", chart, csp={"resourceDomains": ["https://cdn.example.com"]})
    tool = mcp.registry.tools["chart"]
    tool.result(tool.invoke({"n": 2}, {}))
    contents = mcp.registry.resources["ui://notebook/chart"].read()["contents"][0]
    assert contents["_meta"]["ui"]["csp"] == {"resourceDomains": ["https://cdn.example.com"]}


async def test_a_per_call_rendering_is_read_by_the_session_that_made_the_call_alone():
    server = Server(notebook().registry)
    caller, _ = await handshake(server, UI_CAPS)
    other, _ = await handshake(server, UI_CAPS)
    await _call(server, caller, "echo", {"text": "caller note-7f3a"})

    async def page(session) -> str:
        read = await ask(server, session, "resources/read", {"uri": "ui://notebook/echo"})
        return read["result"]["contents"][0]["text"]

    assert "caller note-7f3a" in await page(caller)
    assert "note-7f3a" not in await page(other)
    assert "waiting for a result" in await page(other)  # the view's default
    # 2026-07-28 is stateless: a read names no earlier call, so it gets the default; the
    # call's own rendering travels in its result, which the host hands to the view.
    message = modern_request("resources/read", {"uri": "ui://notebook/echo"}, UI_CAPS)
    answer = await server.handle(message, modern.open_request(message))
    assert "note-7f3a" not in answer["result"]["contents"][0]["text"]
    message = modern_request(
        "tools/call", {"name": "echo", "arguments": {"text": "modern note-9c1e"}}, UI_CAPS
    )
    answer = await server.handle(message, modern.open_request(message))
    assert "modern note-9c1e" in _html(answer["result"])
    assert "modern note-9c1e" not in await page(caller) + await page(other)


async def test_the_sessions_a_view_remembers_are_bounded(monkeypatch):
    monkeypatch.setattr(app_view, "MAX_VIEWERS", 3)
    server = Server(notebook().registry)
    sessions = []
    for number in range(5):
        session, _ = await handshake(server, UI_CAPS)
        await _call(server, session, "echo", {"text": f"call {number}"})
        sessions.append(session)
    view = server.registry.resources["ui://notebook/echo"].reader.__self__
    assert len(view._latest) == 3
    read = await ask(server, sessions[0], "resources/read", {"uri": "ui://notebook/echo"})
    assert "waiting for a result" in read["result"]["contents"][0]["text"]  # forgotten
    read = await ask(server, sessions[4], "resources/read", {"uri": "ui://notebook/echo"})
    assert "call 4" in read["result"]["contents"][0]["text"]
