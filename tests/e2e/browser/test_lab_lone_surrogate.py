"""End to end, in JupyterLab in Chromium: a tool whose result holds a lone surrogate (a
file name read with ``surrogateescape``, say). The agent gets U+FFFD in its place, and the
call monitor still updates and shows the call's result with U+FFFD."""

from __future__ import annotations

import re

from playwright.async_api import async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, kernel_idle, run_all_cells
from tests.unit.export.test_lone_surrogates import ODD_TEXT, ODD_TOOL


async def test_the_monitor_shows_a_result_with_a_lone_surrogate_as_a_replacement(
    lab: Lab, chromium: str
):
    ARTIFACTS.mkdir(exist_ok=True)
    path = lab.write_notebook(
        "odd_result", ["%load_ext mcp_notebook", ODD_TOOL, "%mcp start", "%mcp monitor"]
    )
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            await page.goto(lab.notebook_url(path, workspace="odd_result"))
            await run_all_cells(page, lab)
            monitor = page.locator(".mcp-monitor").first
            await monitor.wait_for(timeout=WAIT_MS)
            served = await lab.discovered("odd_result")
            await kernel_idle(page, lab)
            async with connect(served, "legacy") as agent:
                result = await agent.call_tool("odd", {"text": "report-"})
                assert result.content[0].text == "report-\ufffd"
                assert (await agent.call_tool("odd", {"text": "x"})).content[0].text == ODD_TEXT
            table = monitor.locator(".mcp-calls select")
            await expect(table.locator("option")).to_have_count(2, timeout=WAIT_MS)
            await expect(table.locator("option").first).to_have_text(
                re.compile(r"odd.*done$"), timeout=WAIT_MS
            )
            await table.select_option(index=1)  # the older call: the monitor kept updating
            await expect(monitor).to_contain_text("report-\ufffd", timeout=WAIT_MS)
            await monitor.screenshot(path=str(ARTIFACTS / "monitor-lone-surrogate.png"))
        finally:
            await browser.close()
