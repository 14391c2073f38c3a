"""End to end in JupyterLab: calls whose clients hung up while a cell held the kernel are
shown in the monitor as dropped, and never run (tests/kernel/test_abandoned_calls.py has
the same without a browser)."""

from __future__ import annotations

import re

from playwright.async_api import async_playwright, expect

from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, run_all_cells
from tests.kernel.test_abandoned_calls import post_and_keep_open
from tests.kernel.test_http_raw import Endpoint

ABANDONED = 3


async def test_the_monitor_shows_calls_dropped_because_their_client_hung_up(
    lab: Lab, chromium: str, tmp_path
):
    release = tmp_path / "release"
    notebook = lab.write_notebook(
        "dropped",
        [
            "%load_ext mcp_notebook",
            "ran = []\n\n@mcp.tool\ndef note(n: int) -> int:\n    ran.append(n)\n    return n",
            "%mcp start --port 0 --name dropped",
            "%mcp monitor",
            f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.05)",
        ],
    )
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            await page.goto(lab.notebook_url(notebook, workspace="dropped"))
            await run_all_cells(page, lab)
            monitor = page.locator(".mcp-monitor").first
            await monitor.wait_for(timeout=WAIT_MS)
            ep = Endpoint(await lab.discovered("dropped"))
            session = ep.open_session()
            table = monitor.locator(".mcp-calls select")
            sockets = [post_and_keep_open(ep, session, 10 + n, n) for n in range(ABANDONED)]
            queued = table.locator("option", has_text=re.compile(r"queued\sbehind\scell"))
            await expect(queued).to_have_count(ABANDONED, timeout=WAIT_MS)
            for sock in sockets:
                sock.close()
            dropped = table.locator("option", has_text=re.compile(r"dropped:\sclient\sgone$"))
            await expect(dropped).to_have_count(ABANDONED, timeout=WAIT_MS)
            release.touch()  # the kernel is free: the table can be clicked
            await table.select_option(index=0)
            detail = monitor.locator(".mcp-detail", has_text="its client hung up")
            await detail.wait_for(timeout=WAIT_MS)
            await monitor.screenshot(path=str(ARTIFACTS / "dropped-calls-monitor.png"))
            assert ep.call_tool(session, "note", n=99)["content"][0]["text"] == "99"
            await expect(table.locator("option").first).to_have_text(
                re.compile(r"note.*done$"), timeout=WAIT_MS
            )
        finally:
            release.touch()
            await browser.close()
