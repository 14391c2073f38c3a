"""The widget monitor, as a person at a notebook without the front-end extension sees it
(the extension disabled, as in VS Code or Colab): status by colour, filters that narrow the
table, a waiting confirmation pinned under the cell that started the server, and in a dark
theme too. In JupyterLab and Notebook 7, in Chromium; screenshots under test-artifacts/."""

from __future__ import annotations

import asyncio
import json
import re

from playwright.async_api import Page, async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, run_all_cells

CELLS = [
    "%load_ext mcp_notebook",
    "@mcp.tool\n"
    "def add(a: int, b: int) -> int:\n"
    "    return a + b\n\n"
    "@mcp.tool\n"
    "def divide(a: int, b: int) -> float:\n"
    "    return a / b\n\n"
    "@mcp.tool(confirm=True)\n"
    "def drop(table: str) -> str:\n"
    "    return f'dropped {table}'",
    "%mcp start --port 0 --name table_demo",
    "%mcp monitor",
]


# The visible headers whose text does not fit their column (cut, or drawn over the next).
CUT_HEADERS = """table => [...table.querySelectorAll('th')]
    .filter(th => th.offsetParent !== null && th.scrollWidth > th.clientWidth)
    .map(th => th.textContent)"""


async def colour(page: Page, cell) -> str:
    return await cell.evaluate("node => getComputedStyle(node).color")


async def test_the_widget_table_reads_at_a_glance(front_end: Lab, chromium: str):
    lab, shot = front_end, f"{front_end.app}-" if front_end.app != "lab" else ""
    ARTIFACTS.mkdir(exist_ok=True)
    page_config = lab.root.parent / "config" / "labconfig" / "page_config.json"
    page_config.parent.mkdir(exist_ok=True)
    page_config.write_text(json.dumps({"disabledExtensions": {"mcp-notebook": True}}))
    notebook = lab.write_notebook("table_demo", CELLS)
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1400, "height": 1200})
                await page.goto(lab.notebook_url(notebook, workspace="table-demo"))
                await run_all_cells(page, lab)
                monitor = page.locator(".mcp-monitor").first
                await monitor.wait_for(timeout=WAIT_MS)
                served = await lab.discovered("table_demo")
                async with connect(served, "legacy") as client:
                    assert (await client.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
                    assert (await client.call_tool("divide", {"a": 1, "b": 0})).is_error
                    asking = asyncio.ensure_future(client.call_tool("drop", {"table": "orders"}))
                    # Pinned under the cell that started the server, as in the monitor.
                    start_cell = page.locator(".jp-Cell", has_text="%mcp start")
                    card = start_cell.locator(".mcp-confirm")
                    await card.wait_for(timeout=WAIT_MS)
                    await expect(monitor.locator(".mcp-confirm")).to_be_visible()
                    await card.locator("button", has_text="Deny").click()
                    assert (await asyncio.wait_for(asking, 60)).is_error

                table = monitor.locator("table.mcp-table")
                done = table.locator("td.mcp-st-done")
                error = table.locator("td.mcp-st-error")
                denied = table.locator("td.mcp-st-denied")
                for cell in (done, error, denied):
                    await cell.first.wait_for(timeout=WAIT_MS)
                await expect(error.first).to_contain_text("error")
                colours = {await colour(page, c.first) for c in (done, error, denied)}
                assert len(colours) == 3, colours  # told apart at a glance
                await monitor.screenshot(path=str(ARTIFACTS / f"{shot}monitor-table.png"))

                # Filters narrow the table: failed calls only, then a search.
                status = monitor.locator(".widget-dropdown", has_text="Status").locator("select")
                await status.select_option(label="failed (any)")
                await expect(table.locator("tr[data-call]")).to_have_count(2, timeout=WAIT_MS)
                await expect(done).to_have_count(0)
                search = monitor.locator(".mcp-search input")
                await search.fill("divide")
                await search.press("Enter")
                await expect(table.locator("tr[data-call]")).to_have_count(1, timeout=WAIT_MS)
                await expect(table.locator("tr[data-call]")).to_contain_text(re.compile("divide"))

                # In a narrow output area (a side-by-side layout) the columns a person can
                # do without go; at every width the headers left read whole, none over
                # another, and the tool's name fits. (JupyterLab's side bar takes a part of
                # the window; Notebook 7 gives the cell almost all of it.)
                widths = (1150, 1000, 900, 820, 760) if lab.app == "lab" else (900, 760, 640, 520)
                for width in widths:
                    await page.set_viewport_size({"width": width, "height": 1200})
                    cut = await table.evaluate(CUT_HEADERS)
                    assert cut == [], (width, cut)
                    target = table.locator("tr[data-call] td.mcp-c-target").first
                    assert await target.evaluate("td => td.scrollWidth <= td.clientWidth"), width
                for gone in ("client", "arguments"):
                    await expect(table.locator(f"th.mcp-c-{gone}")).to_be_hidden()
                    await expect(table.locator(f"td.mcp-c-{gone}").first).to_be_hidden()
                box = await monitor.evaluate("m => m.getBoundingClientRect().right")
                search_box = await search.evaluate("s => s.getBoundingClientRect().right")
                assert search_box <= box  # the filters wrap, the search box is not cut
                await monitor.screenshot(path=str(ARTIFACTS / f"{shot}monitor-table-narrow.png"))
                await page.set_viewport_size({"width": 1400, "height": 1200})
                await expect(table.locator("th.mcp-c-arguments")).to_be_visible()

                if lab.app == "lab":  # Notebook 7 shares JupyterLab's themes; one run is enough
                    dark = page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Settings$"))
                    await dark.click()
                    await page.locator(".lm-Menu-item", has_text=re.compile(r"^Theme$")).hover()
                    await page.get_by_role("menuitem", name="JupyterLab Dark", exact=True).click()
                    await page.wait_for_function(
                        "document.body.dataset.jpThemeName === 'JupyterLab Dark'", timeout=WAIT_MS
                    )
                    await status.select_option(label="every status")
                    await search.fill("")
                    await search.press("Enter")
                    await expect(table.locator("tr[data-call]")).to_have_count(3, timeout=WAIT_MS)
                    dark_error = await colour(page, error.first)
                    assert dark_error not in (await colour(page, done.first), "rgb(0, 0, 0)")
                    await monitor.screenshot(path=str(ARTIFACTS / "monitor-table-dark.png"))
            finally:
                await browser.close()
    finally:
        page_config.unlink()
