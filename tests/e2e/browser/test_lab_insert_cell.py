"""End to end: in JupyterLab and in Notebook 7, in Chromium, the call monitor's "Insert as
cell" puts an agent's recorded call in a new cell below the current one, through mcp_notebook's
JupyterLab extension (js/labextension/, installed with the package); run, that cell gives
the call's result."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from jupyter_client import BlockingKernelClient
from playwright.async_api import Locator, Page, async_playwright, expect

from tests.conftest import Served, connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, kernel_idle, run_all_cells
from tests.kernel.frontend import Frontend
from tests.waiting import until, until_async

TOOL = '''\
import datetime

@mcp.tool
def days_between(start: datetime.date, end: datetime.date) -> int:
    """Days from start to end."""
    return (end - start).days

# What the kernel sends the extension, with any payload: it must refuse bad ones.
from mcp_notebook.ui import frontends
answers, heard = [], set()

@mcp.tool
def ask_front_end(data: dict) -> int:
    """Sends data on the comm the page's extension announced itself with."""
    registry = frontends.shared()
    channel = registry._comms[registry.sessions[-1]]
    if id(channel) not in heard:  # note its answers too, before the registry reads them
        heard.add(id(channel))
        read = channel._msg_callback
        channel.on_msg(lambda msg: (answers.append(msg["content"]["data"]), read(msg)))
    channel.send(data)
    return len(answers)

@mcp.tool
def front_end_answers() -> list:
    """The extension's answers so far."""
    return answers
'''
ARGUMENTS = {"start": "2026-12-02", "end": "2026-12-25"}
# Positions in the notebook of the current cell and of the monitor's.
INDICES = """() => {
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    return {
        active: cells.findIndex(c => c.classList.contains('jp-mod-active')),
        monitor: cells.findIndex(c => c.querySelector('.mcp-monitor') !== null),
    };
}"""


def write_notebook(lab: Lab, name: str) -> str:
    cells = ["%load_ext mcp_notebook", TOOL, "%mcp start", "%mcp monitor"]
    return lab.write_notebook(name, cells)


async def until_answers(agent, count: int, timeout: float = 60) -> list[dict]:

    async def answers() -> list[dict] | None:
        result = await agent.call_tool("front_end_answers", {})
        answered = json.loads(result.content[0].text)
        return answered if len(answered) >= count else None

    return await until_async(answers, "the JupyterLab extension to answer", timeout)


async def open_notebook(page: Page, lab: Lab, name: str) -> dict:
    """Write and open the notebook, run it; the page's configuration."""
    path = write_notebook(lab, name)
    await page.goto(lab.notebook_url(path, workspace=name))
    config = json.loads(await page.locator("#jupyter-config-data").text_content() or "")
    await run_all_cells(page, lab)
    return config


async def call_and_select(page: Page, lab: Lab, name: str) -> tuple[Locator, Served, str]:
    """An agent's call, selected in the monitor; the monitor, the server, the result."""
    monitor = page.locator(".mcp-monitor").first
    await monitor.wait_for(timeout=WAIT_MS)
    served = await lab.discovered(name)
    await kernel_idle(page, lab)
    async with connect(served, "legacy") as agent:
        result = await agent.call_tool("days_between", ARGUMENTS)
    assert not result.is_error
    recorded = result.content[0].text
    assert recorded == "23"
    table = monitor.locator(".mcp-calls select")
    await expect(table.locator("option").first).to_have_text(
        re.compile(r"days_between.*done$"), timeout=WAIT_MS
    )
    await table.select_option(index=0)
    await expect(monitor.locator("pre.mcp-cell-code")).to_contain_text(
        "days_between(", timeout=WAIT_MS
    )
    return monitor, served, recorded


async def test_insert_as_cell_puts_the_call_below_and_it_reproduces_the_result(
    front_end: Lab, chromium: str
):
    lab, shot = front_end, f"{front_end.app}-" if front_end.app != "lab" else ""
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1400})
            config = await open_notebook(page, lab, "insert_cell")
            # The extension is installed where this Lab runs, and enabled (a missing
            # install fails here, not as a missing cell later).
            extensions = {e["name"]: e for e in config["federated_extensions"]}
            assert "mcp-notebook" in extensions, sorted(extensions)
            assert "mcp-notebook" not in config.get("disabledExtensions", [])
            monitor, served, recorded = await call_and_select(page, lab, "insert_cell")
            code_view = monitor.locator("pre.mcp-cell-code")
            code = await code_view.inner_text()
            assert "start=datetime.date(2026, 12, 2)," in code  # as the tool received it

            cells = page.locator(".jp-Notebook .jp-Cell")
            count = await cells.count()
            await monitor.locator("button.mcp-insert-cell").click()
            note = monitor.locator(".mcp-insert-note")
            await expect(note).to_contain_text("Inserted below the current cell", timeout=WAIT_MS)
            await expect(cells).to_have_count(count + 1, timeout=WAIT_MS)
            # The click made the monitor's cell current: the new cell is right below it,
            # current in turn, a code cell, not run.
            where = await page.evaluate(INDICES)
            assert where["active"] == where["monitor"] + 1, where
            new = cells.nth(where["active"])
            await expect(new).to_have_class(re.compile(r"\bjp-CodeCell\b"))
            source = await new.locator(".jp-InputArea-editor .cm-content").inner_text()
            assert source.strip() == code.strip()
            await expect(new.locator(".jp-OutputArea-output")).to_have_count(0)  # not run
            await page.screenshot(path=str(ARTIFACTS / f"{shot}insert-cell.png"))

            # Run it: its output is the recorded call's result.
            await new.locator(".jp-InputArea-editor").click()
            await page.keyboard.press("Shift+Enter")
            output = new.locator(".jp-OutputArea-output")
            await expect(output).to_have_text(recorded, timeout=WAIT_MS)
            await page.screenshot(path=str(ARTIFACTS / f"{shot}insert-cell-run.png"))

            # Payloads the button never sends are refused, and insert nothing.
            count = await cells.count()
            async with connect(served, "legacy") as agent:
                for data in (
                    {"request": 1001, "code": 5},
                    {"request": 1002, "code": "1", "run": True},
                    {"code": "1"},
                ):
                    await agent.call_tool("ask_front_end", {"data": data})
                answers = await until_answers(agent, 3)
            assert [a["inserted"] for a in answers] == [False, False, False]
            assert [a["request"] for a in answers] == [1001, 1002, None]
            assert answers[0]["error"] == '"code" must be a string'
            assert answers[1]["error"] == answers[2]["error"]
            assert "exactly two fields" in answers[1]["error"]
            assert await cells.count() == count
        finally:
            await browser.close()
    assert (ARTIFACTS / f"{shot}insert-cell.png").stat().st_size > 0


async def test_without_the_extension_the_note_says_so_and_the_code_stays_to_copy(
    front_end: Lab, chromium: str
):
    """JupyterLab with the extension disabled (as one without it): it closes the comm on
    the unknown target unanswered, and the monitor says what to do instead."""
    lab, shot = front_end, f"{front_end.app}-" if front_end.app != "lab" else ""
    page_config = lab.root.parent / "config" / "labconfig" / "page_config.json"
    page_config.parent.mkdir(exist_ok=True)
    page_config.write_text(json.dumps({"disabledExtensions": {"mcp-notebook": True}}))
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1400, "height": 1400})
                config = await open_notebook(page, lab, "no_extension")
                assert "mcp-notebook" in config["disabledExtensions"]
                monitor, _, _ = await call_and_select(page, lab, "no_extension")
                cells = page.locator(".jp-Notebook .jp-Cell")
                count = await cells.count()
                await monitor.locator("button.mcp-insert-cell").click()
                note = monitor.locator(".mcp-insert-note")
                await expect(note).to_contain_text("extension is not active", timeout=WAIT_MS)
                await expect(note).to_contain_text(".to_cell()")
                await expect(monitor.locator("pre.mcp-cell-code")).to_be_visible()
                assert await cells.count() == count
                shot_path = ARTIFACTS / f"{shot}insert-cell-no-extension.png"
                await monitor.screenshot(path=str(shot_path))
            finally:
                await browser.close()
    finally:
        page_config.unlink()


def connection_file(lab: Lab, path: str) -> Path:
    """The connection file of the kernel the server runs for the notebook at ``path``."""
    request = urllib.request.Request(
        f"{lab.url}/api/sessions", headers={"Authorization": f"token {lab.token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        sessions = json.load(reply)
    (kernel,) = [s["kernel"]["id"] for s in sessions if s["path"] == path]
    return lab.runtime / f"kernel-{kernel}.json"


@contextmanager
def without_the_extension(lab: Lab, path: str) -> Iterator[Frontend]:
    """A front end on the notebook's kernel that closes the kernel's hello at once, as
    VS Code or a page without mcp_notebook's extension does (tests/kernel/frontend.py)."""
    client = BlockingKernelClient(connection_file=str(connection_file(lab, path)))
    client.load_connection_file()
    front = Frontend(SimpleNamespace(manager=client), lacks=("mcp_notebook.cells",))
    try:
        yield front
    finally:
        front.close()


async def saved_with_the_monitor(lab: Lab, page: Page, path: str) -> None:
    """Save from the page (a second page opens the file, outputs and all)."""
    await page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
    await page.keyboard.press("Escape")
    await page.keyboard.press("Control+s")
    await until(
        lambda: "application/vnd.jupyter.widget-view+json" in (lab.root / path).read_text(),
        "the page to save the notebook with its monitor",
        timeout=60,
    )


async def test_with_other_front_ends_on_the_kernel_the_tab_that_clicked_inserts_once(
    front_end: Lab, chromium: str
):
    """Two tabs on one notebook and its kernel, and a front end without the extension that
    closes the kernel's comm before either tab can answer: the click inserts the cell in
    the tab it came from, not in the other, and the note says so."""
    lab, shot = front_end, f"{front_end.app}-" if front_end.app != "lab" else ""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            first = await browser.new_page(viewport={"width": 1400, "height": 1400})
            await open_notebook(first, lab, "several")
            await call_and_select(first, lab, "several")
            await saved_with_the_monitor(lab, first, "several.ipynb")
            with without_the_extension(lab, "several.ipynb") as vscode:
                second = await browser.new_page(viewport={"width": 1400, "height": 1400})
                await second.goto(lab.notebook_url("several.ipynb", workspace="several-2"))
                await kernel_idle(second, lab)
                monitor = second.locator(".mcp-monitor").first
                button = monitor.locator("button.mcp-insert-cell")
                await expect(button).to_be_visible(timeout=WAIT_MS)  # the kernel's state
                cells = [p.locator(".jp-Notebook .jp-Cell") for p in (first, second)]
                counts = [await c.count() for c in cells]
                await button.click()
                note = monitor.locator(".mcp-insert-note")
                inserted = "Inserted below the current cell"
                await expect(note).to_contain_text(inserted, timeout=WAIT_MS)
                await expect(cells[1]).to_have_count(counts[1] + 1, timeout=WAIT_MS)
                # The second tab was not heard from before its click: the kernel asked who
                # has the extension, and the front end without it refused first.
                assert vscode.refused
                assert await cells[0].count() == counts[0]  # no copy in the other tab
                await second.screenshot(path=str(ARTIFACTS / f"{shot}insert-cell-two-tabs.png"))
        finally:
            await browser.close()
