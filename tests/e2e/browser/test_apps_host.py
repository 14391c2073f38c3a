"""End to end: a notebook's ipywidgets view in a real MCP Apps host, in Chromium.

The host page (tests/e2e/browser/apps_host/host.js) is built on the official pieces: the
TypeScript SDK client connects to the notebook's HTTP endpoint (relayed by the page's own
server, which holds the token, as a host's backend would) and ext-apps' AppBridge drives
the view through a sandbox proxy on a second loopback origin. The host calls the app
tool, renders the view (a Styler's shows a hostile result as text), and the test moves
the slider inside it: the view calls the app-only ``squares.set`` through the host, the
kernel runs the widget's observer, and the view shows the new value the kernel computed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from playwright.async_api import async_playwright, expect
from tornado import httpclient, httputil, web
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop
from tornado.netutil import bind_sockets

from tests.conftest import Served, start_server
from tests.e2e.browser.apps_host.build import HERE, host_bundle
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS
from tests.kernel.test_apps_notebook import model_id, ui_host

WAIT_MS = 60_000

NOTEBOOK = """
import ipywidgets as widgets

slider = widgets.IntSlider(value=3, min=0, max=20, description="n")
square = widgets.HTML(value="<b id='square'>9</b>")

def show_square(change):
    square.value = f"<b id='square'>{change['new'] ** 2}</b>"

slider.observe(show_square, "value")
note = widgets.Text(description="note")
mcp.app("squares", widgets.VBox([slider, square, note]), title="Squares")

from IPython.display import HTML

def power(base: int = 2, exponent: int = 10):
    '''A power, shown in its view.'''
    return HTML(f"<p id='power'>{base}^{exponent} = {base ** exponent}</p>")

mcp.app("power", power)

import pandas as pd

@mcp.tool(app=lambda note: pd.DataFrame({"note": [note]}).style)
def echo(note: str) -> str:
    '''A note, shown in a styled table (the README's pattern).'''
    return note

import anywidget
import traitlets

class Counter(anywidget.AnyWidget):
    # anywidget's front-end contract: render({model, el}); set + save_changes sync a
    # trait, send passes a custom message.
    _esm = '''
    function render({ model, el }) {
      const add = Object.assign(document.createElement("button"), { id: "add" });
      const reset = Object.assign(document.createElement("button"), { id: "reset" });
      const said = Object.assign(document.createElement("span"), { id: "said" });
      reset.textContent = "reset";
      const show = () => {
        add.textContent = `count is ${model.get("count")}`;
        said.textContent = model.get("said");
      };
      add.addEventListener("click", () => {
        model.set("count", model.get("count") + 1);
        model.save_changes();
      });
      reset.addEventListener("click", () => model.send({ kind: "reset" }));
      model.on("change:count", show);
      model.on("change:said", show);
      show();
      el.append(add, reset, said);
    }
    export default { render };
    '''
    _css = "#add { font-weight: bold; }"
    count = traitlets.Int(0).tag(sync=True)
    said = traitlets.Unicode("").tag(sync=True)

counter = Counter()

def answer(change):
    counter.said = f"the kernel saw {change['new']}"

def on_message(widget, content, buffers):
    if content.get("kind") == "reset":
        widget.count = 0

counter.observe(answer, "count")
counter.on_msg(on_message)
mcp.app("counter", counter, title="Counter")
"""

HOST_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>test host</title></head>
<body><div id="views"></div><pre id="log"></pre>
<script type="module" src="/host.js"></script></body></html>"""


class _Relay(web.RequestHandler):
    """/mcp of the host's origin, passed on to the notebook with its token, streamed."""

    def initialize(self, served: Served) -> None:
        self.served = served

    async def _relay(self) -> None:
        keep = ("content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id")
        headers = {k: v for k, v in self.request.headers.get_all() if k.lower() in keep}
        headers.update(self.served.headers)
        started: list[bool] = []

        def header(line: str) -> None:
            if not started:
                started.append(True)
                self.set_status(httputil.parse_response_start_line(line.strip()).code)
            elif ":" in line:
                name, value = line.split(":", 1)
                if name.strip().lower() in ("content-type", "mcp-session-id"):
                    self.set_header(name.strip(), value.strip())

        def chunk(data: bytes) -> None:
            self.write(data)
            self.flush()

        request = httpclient.HTTPRequest(
            self.served.url,
            method=self.request.method,
            headers=headers,
            body=self.request.body if self.request.method == "POST" else None,
            header_callback=header,
            streaming_callback=chunk,
            request_timeout=600,
            allow_nonstandard_methods=True,
        )
        try:
            await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        except Exception:  # the page went away mid-stream
            return
        self.finish()

    post = get = delete = _relay


class _Static(web.RequestHandler):
    def initialize(self, body: bytes, mime: str) -> None:
        self.body, self.mime = body, mime

    def get(self) -> None:
        self.set_header("Content-Type", self.mime)
        self.write(self.body)


@dataclass
class Host:
    url: str
    sandbox_url: str


@pytest.fixture(scope="module")
def served(kernel) -> Served:
    return start_server(kernel, NOTEBOOK)


@pytest.fixture(scope="module")
def host(served: Served) -> Iterator[Host]:
    """The host page and the sandbox proxy, each on its own loopback port (origin)."""
    bundle = host_bundle().read_bytes()
    sandbox = (HERE / "sandbox.html").read_bytes()
    ready = threading.Event()
    state: dict[str, object] = {}

    def serve() -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        loop = IOLoop.current()
        host_app = web.Application(
            [
                (r"/", _Static, {"body": HOST_PAGE.encode(), "mime": "text/html"}),
                (r"/host.js", _Static, {"body": bundle, "mime": "text/javascript"}),
                (r"/mcp", _Relay, {"served": served}),
            ]
        )
        sandbox_app = web.Application(
            [(r"/sandbox.html", _Static, {"body": sandbox, "mime": "text/html"})]
        )
        ports = []
        for app in (host_app, sandbox_app):
            sockets = bind_sockets(0, "127.0.0.1")
            HTTPServer(app).add_sockets(sockets)
            ports.append(sockets[0].getsockname()[1])
        state["loop"], state["ports"] = loop, ports
        ready.set()
        loop.start()

    thread = threading.Thread(target=serve, name="apps-host", daemon=True)
    thread.start()
    assert ready.wait(30)
    host_port, sandbox_port = state["ports"]  # type: ignore[misc]
    yield Host(f"http://127.0.0.1:{host_port}/", f"http://127.0.0.1:{sandbox_port}/sandbox.html")
    loop = state["loop"]
    loop.add_callback(loop.stop)  # type: ignore[attr-defined]
    thread.join(10)


@dataclass
class HostedView:
    page: Any  # the host page
    view: Any  # a frame locator for the view, inside the sandbox proxy's frame
    errors: list[str] = field(default_factory=list)  # the page's uncaught errors


@asynccontextmanager
async def hosted_view(
    served: Served, host: Host, chromium: str, tool: str, args: dict[str, Any], height: int
) -> AsyncIterator[HostedView]:
    """Chromium on the host page, which calls ``tool`` and renders its view.

    On a failure, prints the host's log, the page's console and the kernel's calls.
    """
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 900, "height": height})
            errors: list[str] = []
            console: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda message: console.append(message.text))
            await page.goto(host.url)
            await page.wait_for_function("typeof window.startHost === 'function'")
            await page.evaluate(
                "options => { window.started = window.startHost(options) }",
                {"tool": tool, "args": args, "sandboxUrl": host.sandbox_url},
            )
            view = page.frame_locator("#sandbox").frame_locator("iframe")
            try:
                yield HostedView(page, view, errors)
            except BaseException:
                log = await page.locator("#log").text_content()
                print("host log:", log, "console:", *console, sep="\n")
                print(
                    served.kernel.eval(
                        "[(c.target, c.arguments, c.status, repr(c.error)) for c in mcp.calls]"
                    )
                )
                raise
        finally:
            await browser.close()


async def test_a_per_call_view_shows_the_result_the_host_sends_it(
    served: Served, host: Host, chromium: str
):
    args = {"base": 3, "exponent": 4}
    async with hosted_view(served, host, chromium, "power", args, height=500) as hosted:
        page, view = hosted.page, hosted.view
        root = view.locator("html")
        await expect(root).to_have_attribute("data-mcp-notebook-results", "1", timeout=WAIT_MS)
        # Read before the call, the document said "waiting"; the result's own rendering
        # replaced it.
        await expect(view.locator("#power")).to_have_text("3^4 = 81", timeout=WAIT_MS)
        await expect(view.get_by_text("waiting for a result")).to_have_count(0)
        log = await page.locator("#log").text_content()
        assert "read ui://notebook/power" in (log or "")


async def test_a_styler_view_shows_a_hostile_result_as_text(
    served: Served, host: Host, chromium: str
):
    ARTIFACTS.mkdir(exist_ok=True)
    hostile = "<img id='pwned' src=x onerror=\"document.body.dataset.pwned='yes'\">"
    async with hosted_view(served, host, chromium, "echo", {"note": hostile}, height=400) as hosted:
        page, view = hosted.page, hosted.view
        root = view.locator("html")
        await expect(root).to_have_attribute("data-mcp-notebook-results", "1", timeout=WAIT_MS)
        cell = view.locator("td", has_text="onerror")
        await expect(cell).to_have_text(hostile, timeout=WAIT_MS)  # the client's text, as text
        await expect(view.locator("#pwned")).to_have_count(0)
        assert await view.locator("body").get_attribute("data-pwned") is None
        await page.screenshot(path=str(ARTIFACTS / "apps-host-styler-hostile.png"))
        assert not hosted.errors, hosted.errors


async def test_a_widget_view_in_a_real_host_calls_the_kernel_and_shows_its_answer(
    served: Served, host: Host, chromium: str
):
    ARTIFACTS.mkdir(exist_ok=True)
    kernel = served.kernel
    async with hosted_view(served, host, chromium, "squares", {}, height=700) as hosted:
        page, view = hosted.page, hosted.view
        # The view spoke the protocol: initialized, got the result, applied the theme.
        await page.wait_for_function("window.hostState && window.hostState.result", timeout=WAIT_MS)
        root = view.locator("html")
        await expect(root).to_have_attribute("data-mcp-notebook", "connected", timeout=WAIT_MS)
        await expect(root).to_have_attribute("data-mcp-notebook-results", "1", timeout=WAIT_MS)
        await expect(root).to_have_attribute("data-mcp-notebook-widgets", "rendered")
        await expect(root).to_have_attribute("data-theme", "dark")
        text_color = await root.evaluate(
            "el => getComputedStyle(el).getPropertyValue('--color-text-primary').trim()"
        )
        assert text_color == "rgb(250, 250, 250)"
        await page.wait_for_function("window.hostState.sizes.length > 0", timeout=WAIT_MS)
        result = await page.evaluate("window.hostState.result")
        assert "n: 3" in result["content"][0]["text"]  # the text a model would read

        # The widgets, alive in the host: move the slider with the keyboard.
        await expect(view.locator("#square")).to_have_text("9", timeout=WAIT_MS)
        handle = view.locator(".noUi-handle")
        await handle.focus()
        for _ in range(4):
            await handle.press("ArrowRight")
        await expect(view.locator("#square")).to_have_text("49", timeout=WAIT_MS)
        await page.screenshot(path=str(ARTIFACTS / "apps-host-widgets.png"))
        assert not hosted.errors, hosted.errors

    # The app-only tool ran in the kernel, recorded like any call, marked as from the view.
    assert kernel.eval("slider.value") == 7
    calls = kernel.eval(
        "[(c.arguments, c.status, c.view) for c in mcp.calls if c.target == 'squares.set']"
    )
    assert calls, "the view's call never reached the kernel"
    arguments, status, origin = calls[-1]
    assert (arguments["state"], status, origin) == ({"value": 7}, "done", "ui://notebook/squares")


async def test_an_anywidget_view_runs_its_esm_and_its_clicks_reach_the_kernel(
    served: Served, host: Host, chromium: str
):
    ARTIFACTS.mkdir(exist_ok=True)
    kernel = served.kernel
    async with hosted_view(served, host, chromium, "counter", {}, height=500) as hosted:
        page, view = hosted.page, hosted.view
        root = view.locator("html")
        await expect(root).to_have_attribute("data-mcp-notebook-results", "1", timeout=WAIT_MS)
        # The widget's own ESM rendered it, under the host's restrictive CSP.
        add = view.locator("#add")
        await expect(add).to_have_text("count is 0", timeout=WAIT_MS)
        assert await add.evaluate("el => getComputedStyle(el).fontWeight") == "700"  # _css
        await add.click()
        await expect(view.locator("#said")).to_have_text("the kernel saw 1", timeout=WAIT_MS)
        await add.click()
        await expect(view.locator("#said")).to_have_text("the kernel saw 2", timeout=WAIT_MS)
        await expect(add).to_have_text("count is 2")
        await page.screenshot(path=str(ARTIFACTS / "apps-host-anywidget.png"))
        # A custom message (model.send) reaches the widget's on_msg handler.
        await view.locator("#reset").click()
        await expect(add).to_have_text("count is 0", timeout=WAIT_MS)
        await expect(view.locator("#said")).to_have_text("the kernel saw 0")
        assert not hosted.errors, hosted.errors

    assert kernel.eval("(counter.count, counter.said)") == (0, "the kernel saw 0")
    calls = kernel.eval(
        "[(c.arguments, c.status, c.view) for c in mcp.calls if c.target == 'counter.set']"
    )
    states = [a.get("state") for a, _, _ in calls if a.get("state")]
    assert states == [{"count": 1}, {"count": 2}]
    messages = [a["message"] for a, _, _ in calls if a.get("message")]
    assert messages == [{"kind": "reset"}]
    assert {(status, origin) for _, status, origin in calls} == {("done", "ui://notebook/counter")}


async def test_a_clients_markup_is_refused_on_html_and_stays_text_in_a_text_box(
    served: Served, host: Host, chromium: str
):
    hostile = '<img src=x onerror="window.pwned = 1">'
    async with ui_host(served) as client:
        (contents,) = (await client.read_resource("ui://notebook/squares")).contents
        square = model_id(contents.text, "HTMLModel")
        note = model_id(contents.text, "TextModel", description="note")
        with pytest.raises(MCPError) as refused:
            await client.call_tool("squares.set", {"model_id": square, "state": {"value": hostile}})
        assert refused.value.code == -32602
        assert str(refused.value).startswith("HTML.value: not settable")
        answer = await client.call_tool(
            "squares.set", {"model_id": note, "state": {"value": hostile}}
        )
        assert not answer.is_error, answer.content
    async with hosted_view(served, host, chromium, "squares", {}, height=700) as hosted:
        view = hosted.view
        root = view.locator("html")
        await expect(root).to_have_attribute(
            "data-mcp-notebook-widgets", "rendered", timeout=WAIT_MS
        )
        await expect(view.locator(".widget-text input")).to_have_value(hostile, timeout=WAIT_MS)
        assert await view.locator("img[src='x']").count() == 0  # no element made of it
        assert await root.evaluate("el => el.ownerDocument.defaultView.pwned === undefined")
        await expect(view.locator("#square")).to_be_visible()
        await hosted.page.screenshot(path=str(ARTIFACTS / "apps-host-hostile-text.png"))
        assert not hosted.errors, hosted.errors


def test_a_client_without_the_extension_never_sees_the_widgets_tool(served: Served):
    async def listed() -> set[str]:
        from tests.conftest import connect

        async with connect(served, "legacy") as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    names = asyncio.run(listed())
    assert "squares" in names and "squares.set" not in names
