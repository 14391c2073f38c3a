"""End to end: JupyterLab's Debugger panel, in Chromium, stops an agent's call in a tool
defined in a cell (``%mcp break``), shows the tool's frame and the argument the client
sent, and the client gets its result once Continue is clicked in the panel."""

from __future__ import annotations

import asyncio
import re

from playwright.async_api import async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, run_all_cells
from tests.sdk_scenarios import Progress

TOOL = '''\
@mcp.tool
def shout(word: str) -> str:
    """The word, loud."""
    loud = word.upper()
    return loud + "!"
'''


def write_notebook(lab: Lab) -> str:
    cells = ["%load_ext mcp_notebook", TOOL, "%mcp start", "%mcp break shout"]
    return lab.write_notebook("debugging", cells)


async def test_the_debugger_panel_stops_an_agents_call(lab: Lab, chromium: str):
    ARTIFACTS.mkdir(exist_ok=True)
    name = write_notebook(lab)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1500, "height": 1000})
            await page.goto(f"{lab.url}/lab/tree/{name}?token={lab.token}")
            await page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).wait_for(timeout=WAIT_MS)
            # The Debugger panel, in the right sidebar (its tab toggles it: open it once).
            tab = page.locator('.jp-SideBar li[data-id="jp-debugger-sidebar"]')
            await tab.wait_for(timeout=WAIT_MS)
            if "lm-mod-current" not in (await tab.get_attribute("class") or ""):
                await tab.click()
            sidebar = page.locator(".jp-DebuggerSidebar")
            await sidebar.wait_for(timeout=WAIT_MS)
            # The bug icon in the notebook's toolbar: the kernel's debugger, attached.
            bug = page.locator(".jp-DebuggerBugButton").first
            await bug.wait_for(timeout=WAIT_MS)
            await expect(bug).to_be_enabled(timeout=WAIT_MS)
            await bug.click()
            await expect(bug).to_have_attribute("aria-pressed", "true", timeout=WAIT_MS)
            await run_all_cells(page, lab)
            served = await lab.discovered("debugging")
            await page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).wait_for(timeout=WAIT_MS)

            progress = Progress()
            async with connect(served, "legacy") as agent:
                call = asyncio.ensure_future(
                    agent.call_tool("shout", {"word": "quietly"}, progress_callback=progress)
                )
                # The panel's call stack: the tool's frame, on its first line.
                frames = sidebar.locator(".jp-DebuggerCallstackFrame")
                frame = frames.first
                await expect(frame.locator(".jp-DebuggerCallstackFrame-name")).to_have_text(
                    "shout", timeout=WAIT_MS
                )
                # Run All numbered the tool's cell 2; line 4 is the first of its body.
                await expect(frame.locator(".jp-DebuggerCallstackFrame-location")).to_have_text(
                    "Cell [2]:4"
                )
                # Its variables: the argument the client sent.
                variables = sidebar.locator(".jp-DebuggerVariables").first
                await expect(variables).to_contain_text(
                    re.compile(r"word\W*quietly"), timeout=WAIT_MS
                )
                await asyncio.wait_for(progress.arrived.wait(), 60)
                assert progress.messages[0] == "paused at a breakpoint in shout"
                await page.screenshot(path=str(ARTIFACTS / "debugger.png"))
                assert not call.done()

                # The call stack's toolbar (in its section title): Continue.
                await sidebar.locator('jp-button[title^="Continue"]').first.click()
                result = await asyncio.wait_for(call, 60)
                assert not result.is_error
                assert result.content[0].text == "QUIETLY!"
                await expect(frames).to_have_count(0, timeout=WAIT_MS)
        finally:
            await browser.close()
    assert (ARTIFACTS / "debugger.png").stat().st_size > 0


LISTENING_BREAK = "%mcp break shout --when \"word == 'loud'\""


async def break_cell_says(page, said: str) -> None:
    """Run the notebook's last cell (the break) until its output says ``said``: the panel's
    bug button shows pressed once the kernel answered ``initialize``, but the kernel's
    debugger client may still be attaching when the cell first runs again. Each run is
    waited for by its new execution count, so a stale output is never read as an answer."""
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(3)
    prompt = cell.locator(".jp-InputPrompt")
    output = cell.locator(".jp-OutputArea-output")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_MS / 1000
    while True:
        before = (await prompt.inner_text()).strip()
        await cell.locator(".jp-InputArea-editor").click()
        await page.keyboard.press("Shift+Enter")
        await expect(prompt).not_to_have_text(before, timeout=WAIT_MS)
        await expect(prompt).to_have_text(re.compile(r"\[\d+\]"), timeout=WAIT_MS)
        if said in await output.inner_text() or loop.time() > deadline:
            break
    await expect(output).to_contain_text(said)


async def test_the_break_says_whether_the_debugger_panel_listens(lab: Lab, chromium: str):
    """Without the panel attached the break says so, and calls run on; attached, a call
    whose quoted condition is false runs through and the matching one stops."""
    ARTIFACTS.mkdir(exist_ok=True)
    cells = ["%load_ext mcp_notebook", TOOL, "%mcp start", LISTENING_BREAK]
    name = lab.write_notebook("listening", cells)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1500, "height": 1000})
            # A workspace of its own: the default one reopens the notebook of the test above.
            where = f"{lab.url}/lab/workspaces/listening/tree/{name}"
            await page.goto(f"{where}?reset&token={lab.token}")
            await page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).wait_for(timeout=WAIT_MS)
            await run_all_cells(page, lab)
            served = await lab.discovered("listening")
            break_cell = page.locator(".jp-Notebook .jp-CodeCell").nth(3)
            output = break_cell.locator(".jp-OutputArea-output")
            await expect(output).to_contain_text(
                "No debugger is listening to this kernel", timeout=WAIT_MS
            )
            await break_cell.screenshot(path=str(ARTIFACTS / "break-no-debugger.png"))
            async with connect(served, "legacy") as agent:
                ran = await asyncio.wait_for(agent.call_tool("shout", {"word": "loud"}), 20)
                assert ran.content[0].text == "LOUD!"  # nobody to stop for: it ran on

                tab = page.locator('.jp-SideBar li[data-id="jp-debugger-sidebar"]')
                if "lm-mod-current" not in (await tab.get_attribute("class") or ""):
                    await tab.click()
                sidebar = page.locator(".jp-DebuggerSidebar")
                await sidebar.wait_for(timeout=WAIT_MS)
                bug = page.locator(".jp-DebuggerBugButton").first
                await expect(bug).to_be_enabled(timeout=WAIT_MS)
                await bug.click()
                await expect(bug).to_have_attribute("aria-pressed", "true", timeout=WAIT_MS)
                await break_cell_says(page, "stops at its first line in the debugger")
                await expect(output).not_to_contain_text("No debugger")
                await break_cell.screenshot(path=str(ARTIFACTS / "break-listening.png"))

                quiet = asyncio.ensure_future(agent.call_tool("shout", {"word": "quiet"}))
                done, _ = await asyncio.wait([quiet], timeout=20)  # within the client's 30 s
                if not done:
                    await sidebar.locator('jp-button[title^="Continue"]').first.click()
                    raise AssertionError("a call whose --when is false stopped")
                assert quiet.result().content[0].text == "QUIET!"
                loud = asyncio.ensure_future(agent.call_tool("shout", {"word": "loud"}))
                frames = sidebar.locator(".jp-DebuggerCallstackFrame")
                await expect(frames.first.locator(".jp-DebuggerCallstackFrame-name")).to_have_text(
                    "shout", timeout=WAIT_MS
                )
                await sidebar.locator('jp-button[title^="Continue"]').first.click()
                assert (await asyncio.wait_for(loud, 60)).content[0].text == "LOUD!"

                # The panel detached: debugpy still has its client, but nobody listens.
                await bug.click()
                await expect(bug).to_have_attribute("aria-pressed", "false", timeout=WAIT_MS)
                await break_cell_says(page, "No debugger is listening to this kernel")
                again = await asyncio.wait_for(agent.call_tool("shout", {"word": "loud"}), 20)
                assert again.content[0].text == "LOUD!"
        finally:
            await browser.close()
