"""End to end: notebooks/apps.ipynb in the MCP Inspector's web UI (npm
@modelcontextprotocol/inspector 2.12, installed with npm into the test cache and run on
Node 22 from the same cache). Its Apps tab renders the notebook's dashboard view; moving a
slider in it runs the widget's observer in the kernel, and the view shows the total the
kernel computed; the views' app-only setters are not listed as apps. Screenshots:
test-artifacts/inspector-apps.png, inspector-apps-list.png."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.async_api import async_playwright, expect

from tests import portable
from tests.conftest import Served
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, _free_port
from tests.e2e.conformance.node import _npm_install, cache_dir, node22
from tests.waiting import wait_until

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "apps.ipynb"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def served(kernel) -> Served:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            kernel.run(cell.source.replace("%mcp start", "%mcp start --port 0"))
    return Served(kernel, kernel.eval("mcp.url"), kernel.eval("mcp.token"))


@pytest.fixture(scope="module")
def inspector(served: Served, tmp_path_factory) -> Iterator[str]:
    """The Inspector's web UI, connected to the notebook with its token: its URL."""
    node = node22()
    prefix = cache_dir() / ("npm-" + INSPECTOR.replace("/", "+"))
    _npm_install(prefix, INSPECTOR, node_bin=node)
    launcher = prefix / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build"
    home = tmp_path_factory.mktemp("inspector")
    env = {
        **os.environ,
        "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "CLIENT_PORT": str(_free_port()),
        "MCP_SANDBOX_PORT": "0",
        "MCP_APP_ORIGIN_PORT": "0",
        "MCP_AUTO_OPEN_ENABLED": "false",
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "MCP_STORAGE_DIR": str(home),
    }
    log = home / "inspector.log"
    process = subprocess.Popen(
        [
            str(node),
            str(launcher / "index.js"),
            "--web",
            "--transport",
            "http",
            "--server-url",
            served.url,
            "--header",
            f"Authorization: Bearer {served.token}",
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        **portable.spawn_options(),
    )
    try:

        def started() -> re.Match[str] | str | None:
            found = re.search(
                r"(http://127\.0\.0\.1:\d+/?\?MCP_INSPECTOR_API_TOKEN=\w+)", log.read_text()
            )
            return found or ("exited" if process.poll() is not None else None)

        try:
            found = wait_until(started, "the Inspector to start", timeout=120)
        except AssertionError as late:
            raise AssertionError(f"{late}:\n" + log.read_text()) from None
        if found == "exited":
            raise AssertionError("the Inspector exited:\n" + log.read_text())
        yield found.group(1)
    finally:
        portable.stop(process)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


async def test_the_inspectors_apps_tab_renders_the_dashboard_and_its_slider_runs_the_kernel(
    served: Served, inspector: str, chromium: str
):
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(inspector)
            await page.get_by_role("switch").first.click(force=True)  # connect
            await page.get_by_text("Connected", exact=True).wait_for(timeout=WAIT_MS)
            await page.get_by_text("Apps", exact=True).first.click()
            await page.get_by_text("Order dashboard", exact=True).first.click()
            # The views' own setters (app-only "<name>.set") are no apps of their own.
            listed = page.get_by_text(re.compile(r"^MCP Apps \(\d+\)$"))
            await expect(listed).to_have_text("MCP Apps (4)", timeout=WAIT_MS)
            assert await page.get_by_text(re.compile("set a control")).count() == 0
            await page.screenshot(path=str(ARTIFACTS / "inspector-apps-list.png"))
            # The Inspector's sandbox proxy, then the view's own frame inside it.
            view = page.frame_locator("iframe").first.frame_locator("iframe").first
            await view.get_by_text("Total: 25.00").wait_for(timeout=WAIT_MS)
            quantity = view.locator(".noUi-handle").nth(1)
            await quantity.focus()
            await quantity.press("ArrowRight")
            await quantity.press("ArrowRight")
            await view.get_by_text("Total: 30.00").wait_for(timeout=WAIT_MS)
            await page.screenshot(path=str(ARTIFACTS / "inspector-apps.png"))
        finally:
            await browser.close()
    kernel = served.kernel
    assert kernel.eval("quantity.value") == 12
    calls = kernel.eval("[(c.status, c.view) for c in mcp.calls if c.target == 'dashboard.set']")
    assert calls and calls[-1] == ("done", "ui://notebook/dashboard")
