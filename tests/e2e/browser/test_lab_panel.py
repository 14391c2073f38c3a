"""End to end, in Chromium, in JupyterLab and in Notebook 7: the MCP panel and the
confirmations nobody can miss (js/labextension/src/panel*.ts, status.ts, feed.ts; the
kernel's side is mcp_notebook/ui/panelfeed.py).

A call waiting for approval raises a notification with the panel closed and the notebook
scrolled away; Approve there gives the client its result, Deny declines it. The panel,
opened from the notebook's toolbar, shows an SDK client's calls live, a failed call in
another colour than a finished one (light and dark theme), filters and search narrow the
table, and forty calls from one app view fold into one row. Two tabs on one kernel decide a
confirmation once. Screenshots go to test-artifacts/."""

from __future__ import annotations

import asyncio
import re

from playwright.async_api import Page, async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, kernel_idle, run_all_cells

SETUP = '''\
import pandas as pd

@mcp.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

@mcp.tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b

@mcp.tool(confirm=True, annotations={"destructiveHint": True})
def drop_rows(table: str) -> str:
    """Drop every row of a table."""
    return f"dropped {table}"

mcp.app("levels", pd.DataFrame({"level": [1]}), title="Levels")

@mcp.tool
def set_level(level: int) -> int:
    """What the view's slider calls on every step."""
    return level
'''
# Enough cells below the server's that the page scrolls it away.
FILLER = [f"# filler cell {n}\nprint({n})" for n in range(25)]


def write_notebook(lab: Lab, name: str) -> str:
    return lab.write_notebook(name, ["%load_ext mcp_notebook", SETUP, "%mcp start", *FILLER])


async def open_notebook(page: Page, lab: Lab, path: str, workspace: str | None = None) -> None:
    await page.goto(lab.notebook_url(path, workspace))
    await run_all_cells(page, lab)
    await kernel_idle(page, lab)


async def scroll_to_the_end(page: Page) -> None:
    """The last cell in view: the server's cells, and any monitor, are far above."""
    await page.locator(".jp-Notebook .jp-Cell").last.click()
    await page.keyboard.press("Escape")
    await page.keyboard.press("Control+End")
    last = page.locator(".jp-Notebook .jp-Cell", has_text="filler cell 24")
    await expect(last).to_be_in_viewport(timeout=WAIT_MS)
    await expect(page.get_by_text("%mcp start", exact=True)).not_to_be_in_viewport()


async def scroll_to_the_top(page: Page) -> None:
    """The server's cells in view again (the page the README shows)."""
    await page.locator(".jp-Notebook .jp-Cell").first.click()
    await page.keyboard.press("Escape")
    await page.keyboard.press("Control+Home")
    await expect(page.get_by_text("%mcp start", exact=True)).to_be_in_viewport(timeout=WAIT_MS)


def toast(page: Page, text: str):
    return page.locator(".jp-toast-message", has_text=text).locator("xpath=..")


async def dismiss_toasts(page: Page) -> None:
    """Close the notifications of calls already decided, as a person would."""
    close = page.locator('.jp-toastContainer [title="Hide notification"]')
    await close.first.wait_for(timeout=WAIT_MS)
    await close.evaluate_all("buttons => buttons.forEach(b => b.click())")
    await expect(close).to_have_count(0, timeout=WAIT_MS)


async def without_toasts(page: Page, shoot) -> None:
    """Run ``shoot`` with the notifications hidden (decided ones, Jupyter's news question):
    the screenshot is of the panel."""
    handle = await page.add_style_tag(content=".jp-toastContainer { display: none; }")
    try:
        await shoot()
    finally:
        await handle.evaluate("node => node.remove()")


async def status_colour(page: Page, status: str) -> str:
    row = page.locator(f".mcp-calls-scroll .mcp-call[data-status='{status}'] .mcp-c-status").first
    await row.wait_for(timeout=WAIT_MS)
    return await row.evaluate("node => getComputedStyle(node).color")


async def switch_theme(page: Page, name: str) -> None:
    await page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Settings$")).click()
    await page.locator(".lm-Menu-item", has_text=re.compile(r"^Theme")).hover()
    await page.get_by_role("menuitem", name=name, exact=True).click()
    await expect(page.locator("body")).to_have_attribute(
        "data-jp-theme-name", name, timeout=WAIT_MS
    )


async def test_the_panel_shows_calls_live_and_notifications_decide(front_end: Lab, chromium: str):
    lab = front_end
    prefix = f"{lab.app}-panel"
    ARTIFACTS.mkdir(exist_ok=True)
    path = write_notebook(lab, f"panel_{lab.app}")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1500, "height": 1000})
            await open_notebook(page, lab, path)
            served = await lab.discovered(f"panel_{lab.app}")
            await scroll_to_the_end(page)
            assert not await page.locator("#mcp-notebook-panel").is_visible()
            async with connect(served, "legacy") as client:
                # A call waits: a notification, with the panel closed and the cell far away.
                call = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "orders"}))
                waiting = toast(page, "asks to run drop_rows")
                await waiting.wait_for(timeout=WAIT_MS)
                if lab.app == "lab":
                    await expect(page.locator(".mcp-status-item")).to_have_text(
                        re.compile(r"MCP · serving · 1 client · .* · 1 waiting"), timeout=WAIT_MS
                    )
                await page.screenshot(path=str(ARTIFACTS / f"{prefix}-notification.png"))
                assert not call.done()
                await waiting.get_by_role("button", name="Approve").click()
                result = await asyncio.wait_for(call, 60)
                assert not result.is_error and result.content[0].text == "dropped orders"
                await toast(page, "approved in the notification").wait_for(timeout=WAIT_MS)

                call = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "users"}))
                waiting = toast(page, "asks to run drop_rows")
                await waiting.wait_for(timeout=WAIT_MS)
                await waiting.get_by_role("button", name="Deny").click()
                result = await asyncio.wait_for(call, 60)
                assert result.is_error and "declined" in result.content[0].text

                # The panel, from the notebook's toolbar: calls arrive live.
                await page.locator(".mcp-toolbar-button").first.click()
                panel = page.locator("#mcp-notebook-panel")
                await panel.wait_for(state="visible", timeout=WAIT_MS)
                assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
                assert (await client.call_tool("divide", {"a": 1, "b": 0})).is_error
                table = panel.locator(".mcp-calls-scroll")
                await table.locator(".mcp-call[data-status='error']").wait_for(timeout=WAIT_MS)
                await table.locator(".mcp-call[data-status='done']", has_text="add").wait_for()
                await table.locator(".mcp-call[data-status='denied']").wait_for()
                light = {s: await status_colour(page, s) for s in ("done", "error", "denied")}
                assert len(set(light.values())) == 3, light

                # With the panel open, a card too: a countdown, the arguments editable.
                await scroll_to_the_top(page)
                await dismiss_toasts(page)
                call = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "logs"}))
                card = panel.locator(".mcp-card", has_text="drop_rows")
                await card.wait_for(timeout=WAIT_MS)
                asking = toast(page, "asks to run drop_rows")
                await expect(asking).to_be_in_viewport(ratio=1, timeout=WAIT_MS)
                await page.screenshot(path=str(ARTIFACTS / f"{prefix}-page.png"))
                await expect(card.locator(".mcp-countdown")).to_have_text(
                    re.compile(r"Denied in [0-2]:\d\d unless approved")
                )
                await card.locator("textarea").fill('{"table": "archive"}')
                await card.screenshot(path=str(ARTIFACTS / f"{prefix}-card.png"))
                await card.get_by_role("button", name="Approve").click()
                result = await asyncio.wait_for(call, 60)
                assert result.content[0].text == "dropped archive"
                await card.wait_for(state="detached", timeout=WAIT_MS)
                await toast(page, "approved in the panel").wait_for(timeout=WAIT_MS)

                # Forty steps of a slider in the app view (its host says where a call
                # comes from, as the views' bridge does): one row, with its count.
                view = {"mcp-notebook/view": {"from": "ui://notebook/levels"}}
                for level in range(40):
                    await client.call_tool("set_level", {"level": level}, meta=view)
                burst = table.locator(".mcp-call", has_text="set_level")
                times_40 = "\N{MULTIPLICATION SIGN}40"
                await expect(burst.locator(".mcp-burst")).to_have_text(times_40, timeout=WAIT_MS)
                assert await burst.count() == 1

                # Filters and search narrow the table.
                rows = table.locator(".mcp-call")
                await panel.locator("select.mcp-filter-status").select_option("error")
                await expect(rows).to_have_count(1)
                await expect(rows.first).to_contain_text("divide")
                await panel.locator("select.mcp-filter-status").select_option("")
                await panel.locator("input.mcp-search").fill("notification")
                await expect(rows).to_have_count(2)  # the approved call and the denied one
                await panel.locator("input.mcp-search").fill("")

                # The failed call's details: its arguments and the trimmed traceback.
                await table.locator(".mcp-call[data-status='error']").click()
                detail = panel.locator(".mcp-detail")
                await detail.locator(".mcp-part-traceback", has_text="ZeroDivisionError").wait_for(
                    timeout=WAIT_MS
                )
                await expect(detail.locator(".mcp-part-arguments")).to_contain_text('"b": 0')
                light_shot = str(ARTIFACTS / f"{prefix}-light.png")
                await without_toasts(page, lambda: panel.screenshot(path=light_shot))

                await switch_theme(page, "JupyterLab Dark")
                dark = {s: await status_colour(page, s) for s in ("done", "error", "denied")}
                assert len(set(dark.values())) == 3, dark
                dark_shot = str(ARTIFACTS / f"{prefix}-dark.png")
                await without_toasts(page, lambda: panel.screenshot(path=dark_shot))
                await page.screenshot(path=str(ARTIFACTS / f"{prefix}-page-dark.png"))
                await switch_theme(page, "JupyterLab Light")
        finally:
            await browser.close()


async def test_two_tabs_on_one_kernel_decide_once(lab: Lab, chromium: str):
    path = write_notebook(lab, "panel_two_tabs")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport={"width": 1300, "height": 900})
            first, second = await context.new_page(), await context.new_page()
            await open_notebook(first, lab, path, workspace="tab-one")
            await second.goto(lab.notebook_url(path, workspace="tab-two"))
            await kernel_idle(second, lab)
            served = await lab.discovered("panel_two_tabs")
            async with connect(served, "legacy") as client:
                call = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "t"}))
                waiting = [toast(p, "asks to run drop_rows") for p in (first, second)]
                for shown in waiting:
                    await shown.wait_for(timeout=WAIT_MS)
                await waiting[1].get_by_role("button", name="Approve").click()
                result = await asyncio.wait_for(call, 60)
                assert result.content[0].text == "dropped t"
                # The other tab hears it was decided, and where: its buttons are gone.
                for page in (first, second):
                    await toast(page, "approved in the notification").wait_for(timeout=WAIT_MS)
                await expect(waiting[0].get_by_role("button", name="Approve")).to_have_count(0)
                await first.screenshot(path=str(ARTIFACTS / "panel-two-tabs-decided.png"))
        finally:
            await browser.close()


HISTORY = """\
from mcp_notebook.protocol import CallRecord
mcp.calls.maxlen = 10_000
for n in range(10_000):
    record = CallRecord("tools/call", "add", {"a": n, "b": 1}, "agent 1.0")
    mcp.calls.add(record)
    record.finish("done" if n % 10 else "error", n + 1)
"""


async def test_ten_thousand_calls_make_a_table_of_a_few_rows_in_the_page(lab: Lab, chromium: str):
    path = lab.write_notebook("panel_history", ["%load_ext mcp_notebook", HISTORY, "%mcp start"])
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1300, "height": 900})
            await open_notebook(page, lab, path, workspace="history")
            await page.locator(".mcp-toolbar-button").first.click()
            panel = page.locator("#mcp-notebook-panel")
            count = panel.locator(".mcp-count")
            await expect(count).to_have_text("10000 of 10000", timeout=WAIT_MS)
            table = panel.locator(".mcp-calls-scroll")
            in_page = await table.locator(".mcp-call").count()
            assert 0 < in_page < 100  # virtualised: the rows in view, not 10,000
            await expect(table.locator(".mcp-call").first).to_contain_text('"a":9999')
            await table.evaluate("node => { node.scrollTop = node.scrollHeight; }")
            await expect(table.locator(".mcp-call", has_text='{"a":0,"b":1}')).to_have_count(1)
            await panel.locator("select.mcp-filter-status").select_option("error")
            await expect(count).to_have_text("1000 of 10000")
        finally:
            await browser.close()


WHILE_HELD_MS = 20_000
# The last cell of a Run All holds the kernel until the test lets it go (at once, the
# first time: the page opens the panel's feed only when the kernel is free).
LONG_CELL = """\
import os, time
if not os.path.exists({release!r}):
    print("holding the kernel", flush=True)
deadline = time.monotonic() + 120  # bounds the hold if the test fails
while not os.path.exists({release!r}) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


async def test_mcp_monitor_opens_the_panel_under_run_all_and_a_call_behind_a_long_cell_shows(
    lab: Lab, chromium: str
):
    """Run All: ``%mcp monitor`` opens the panel. Run All again: the monitor is made anew,
    and the long cell after it starts at once. Calls made while it runs show as waiting
    there and then, not once it ends: queued behind the cell in the panel and in the
    monitor, the confirmation asked for in a notification and counted in the status bar."""
    release = lab.root / "panel_monitor.release"
    cells = ["%load_ext mcp_notebook", SETUP, "%mcp start", "%mcp monitor"]
    path = lab.write_notebook("panel_monitor", [*cells, LONG_CELL.format(release=str(release))])
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1300, "height": 900})
            release.touch()
            await open_notebook(page, lab, path, workspace="monitor")
            panel = page.locator("#mcp-notebook-panel")
            await panel.wait_for(state="visible", timeout=WAIT_MS)
            await expect(panel.locator(".mcp-server")).to_contain_text("serving")
            await kernel_idle(page, lab)
            release.unlink()
            await run_all_cells(page, lab)
            holding = page.locator(".jp-OutputArea-output", has_text="holding the kernel")
            await holding.wait_for(timeout=WAIT_MS)
            served = await lab.discovered("panel_monitor")
            # The client gives up on a call silent for 30 s: what the cell holds is checked
            # well before.
            async with connect(served) as client:
                added = asyncio.ensure_future(client.call_tool("add", {"a": 2, "b": 3}))
                dropped = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "orders"}))
                row = panel.locator(".mcp-call[data-status='behind']", has_text="add")
                await row.wait_for(timeout=WHILE_HELD_MS)
                monitor = page.locator(".mcp-monitor").last
                queued = monitor.locator(
                    "select option", has_text=re.compile(r"queued\sbehind\scell\s\[\d+\]")
                )
                await expect(queued).to_have_count(1, timeout=WHILE_HELD_MS)
                asking = toast(page, "asks to run drop_rows")
                await asking.wait_for(timeout=WHILE_HELD_MS)
                await expect(page.locator(".mcp-status-item")).to_have_text(
                    re.compile(r"MCP · serving · 1 client · .* · 1 waiting"), timeout=WHILE_HELD_MS
                )
                assert not added.done() and not dropped.done()  # the cell still runs
                await page.screenshot(path=str(ARTIFACTS / "panel-behind-a-long-cell.png"))
                await monitor.scroll_into_view_if_needed()
                await monitor.screenshot(path=str(ARTIFACTS / "monitor-behind-a-long-cell.png"))
                release.touch()
                assert (await asyncio.wait_for(added, 60)).content[0].text == "5"
                await panel.locator(".mcp-call[data-status='done']", has_text="add").wait_for(
                    timeout=WAIT_MS
                )
                await asking.get_by_role("button", name="Approve").click()
                assert (await asyncio.wait_for(dropped, 60)).content[0].text == "dropped orders"
        finally:
            release.touch()
            await browser.close()
