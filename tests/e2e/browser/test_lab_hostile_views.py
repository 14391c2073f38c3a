"""End to end, in JupyterLab and in Notebook 7, in Chromium: an MCP client that calls a
widget view's ``<name>.set`` cannot script the notebook through it, and script in the page
cannot answer a confirmation card.

The client sets markup on the view's ``HTML`` widget (refused: -32602) and on its ``Text``
(allowed: the page shows it as the input's text, no element is made of it). Then a pending
``confirm=True`` call's Approve gets the clicks a script can make (``button.click()``,
dispatched events): the call still waits, and a person's click on Deny decides it.
Screenshots: test-artifacts/lab-hostile-view.png, notebook-hostile-view.png."""

from __future__ import annotations

import asyncio

import pytest
from mcp.shared.exceptions import MCPError
from playwright.async_api import async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, run_all_cells
from tests.kernel.test_apps_notebook import model_id, ui_host

# What the client sends: were it markup, it would click the page's Approve.
HOSTILE = (
    '<img src=x onerror="window.pwned = 1; '
    "document.querySelector('.mcp-confirm button').click()\">"
)
VIEW = '''\
import ipywidgets as widgets

note = widgets.Text(description="note")
shown = widgets.HTML("<b id='shown'>safe</b>")
panel = widgets.VBox([note, shown])
mcp.app("panel", panel, title="Panel")
dropped = []

@mcp.tool(confirm=True)
def drop_table(name: str) -> str:
    """Drop a table."""
    dropped.append(name)
    return f"dropped {name}"

panel
'''
# What script in the page can do to a button: none of it is a person's click.
SCRIPTED_CLICKS = """() => {
    const card = document.querySelector('.mcp-confirm');
    const buttons = [...card.querySelectorAll('button')];
    const approve = buttons.find(b => b.textContent.includes('Approve'));
    approve.click();
    for (const type of ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click']) {
        approve.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true }));
    }
    approve.focus();
    approve.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    return true;
}"""


async def test_a_clients_markup_stays_text_and_scripted_clicks_answer_no_card(
    front_end: Lab, chromium: str
):
    lab, shot = front_end, f"{front_end.app}-hostile-view.png"
    cells = ["%load_ext mcp_notebook", VIEW, "%mcp confirm --timeout 120", "%mcp start --port 0"]
    notebook = lab.write_notebook("hostile_views", [*cells, "%mcp monitor"])
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1100})
            await page.goto(lab.notebook_url(notebook, workspace="hostile-views"))
            # This checkout's extension is the one JupyterLab loaded.
            root = page.locator("html")
            await expect(root).to_have_attribute(
                "data-mcp-notebook-trusted-answers", "on", timeout=WAIT_MS
            )
            await run_all_cells(page, lab)
            monitor = page.locator(".mcp-monitor").first
            await monitor.wait_for(timeout=WAIT_MS)
            await page.locator("#shown").wait_for(timeout=WAIT_MS)
            served = await lab.discovered("hostile_views")

            async with ui_host(served) as host:
                (contents,) = (await host.read_resource("ui://notebook/panel")).contents
                text = model_id(contents.text, "TextModel", description="note")
                html = model_id(contents.text, "HTMLModel")
                with pytest.raises(MCPError) as refused:
                    await host.call_tool(
                        "panel.set", {"model_id": html, "state": {"value": HOSTILE}}
                    )
                assert refused.value.code == -32602
                assert str(refused.value).startswith("HTML.value: not settable")
                answer = await host.call_tool(
                    "panel.set", {"model_id": text, "state": {"value": HOSTILE}}
                )
                assert not answer.is_error, answer.content

            # The notebook's copy of the Text shows the client's value, as text.
            output = page.locator(".jp-OutputArea-output", has=page.locator("#shown"))
            box = output.locator(".widget-text input")
            await expect(box).to_have_value(HOSTILE, timeout=WAIT_MS)
            assert await page.locator("img[src='x']").count() == 0  # no element made of it
            await expect(page.locator("#shown")).to_have_text("safe")
            await page.screenshot(path=str(ARTIFACTS / shot))

            async with connect(served, "legacy") as agent:
                call = asyncio.ensure_future(agent.call_tool("drop_table", {"name": "orders"}))
                card = monitor.locator(".mcp-confirm")
                await card.wait_for(timeout=WAIT_MS)
                assert await page.evaluate(SCRIPTED_CLICKS)
                await card.screenshot(path=str(ARTIFACTS / f"{lab.app}-card-scripted.png"))
                # Had a scripted click reached the kernel, it came first on this page's
                # kernel connection: the Deny below would be too late and the tool ran.
                await card.locator("button.jupyter-button", has_text="Deny").click()
                result = await asyncio.wait_for(call, 60)
                assert result.is_error
                assert "declined" in result.content[0].text
            assert await page.evaluate("window.pwned === undefined")
        finally:
            await browser.close()
