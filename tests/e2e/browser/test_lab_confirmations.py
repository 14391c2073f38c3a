"""End to end: notebooks/confirmations.ipynb in Chromium, in JupyterLab and in Notebook 7;
an agent's call waits for a click on Approve in the page, then the client receives the
result."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from playwright.async_api import Page, async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab

WAIT_MS = 60_000


async def kernel_idle(page: Page, lab: Lab) -> None:
    """The notebook's kernel is connected and idle."""
    if lab.app == "lab":
        # The status bar, not the toolbar: the toolbar says idle before the kernel is ready.
        await page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).wait_for(timeout=WAIT_MS)
        return
    # Notebook 7 has no status bar: its toolbar names the kernel once one is connected.
    toolbar = page.locator(".jp-NotebookPanel-toolbar")
    await toolbar.get_by_text("Python 3 (ipykernel)").wait_for(timeout=WAIT_MS)
    idle = toolbar.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    await idle.wait_for(timeout=WAIT_MS)


async def run_all_cells(page: Page, lab: Lab) -> None:
    await kernel_idle(page, lab)
    await page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    await page.locator(".lm-Menu-item", has_text=re.compile(r"^Run All Cells")).click()


async def test_approve_in_the_page_and_the_client_gets_the_result(front_end: Lab, chromium: str):
    lab, shot = front_end, f"{front_end.app}-" if front_end.app != "lab" else ""
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1100})
            await page.goto(lab.notebook_url("confirmations.ipynb"))
            await run_all_cells(page, lab)
            monitor = page.locator(".mcp-monitor").first
            await monitor.wait_for(timeout=WAIT_MS)
            served = await lab.discovered("confirmations")
            async with connect(served, "legacy") as client:
                arguments = {"table": "orders", "status": "cancelled"}
                call = asyncio.ensure_future(client.call_tool("drop_rows", arguments))
                panel = monitor.locator(".mcp-confirm")
                await panel.wait_for(timeout=WAIT_MS)
                await panel.screenshot(path=str(ARTIFACTS / f"{shot}confirmation.png"))
                assert not call.done()
                await panel.locator("button.jupyter-button", has_text="Approve").click()
                result = await asyncio.wait_for(call, 60)
                assert not result.is_error
                assert result.content[0].text == "6 rows left in orders"
                await panel.wait_for(state="detached", timeout=WAIT_MS)

                # The call, selected in the table: its details and the output it printed.
                table = monitor.locator(".mcp-calls select")
                newest = table.locator("option").first
                await expect(newest).to_have_text(re.compile(r"drop_rows.*done$"), timeout=WAIT_MS)
                await table.select_option(index=0)
                await monitor.locator(".mcp-detail", has_text="6 rows left in orders").wait_for()
                printed = page.get_by_text("dropped 3 rows from orders")
                await printed.wait_for(timeout=WAIT_MS)
                assert await printed.count() == 1  # in the monitor only, under no cell
                clients = monitor.locator("table.mcp-clients", has_text="2025-11-25")
                await clients.wait_for(timeout=WAIT_MS)  # the connected client, by its handshake
                await monitor.screenshot(path=str(ARTIFACTS / f"{shot}monitor.png"))
                await page.screenshot(path=str(ARTIFACTS / f"{shot}notebook.png"))
        finally:
            await browser.close()
    assert Path(ARTIFACTS / f"{shot}monitor.png").stat().st_size > 0
