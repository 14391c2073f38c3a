"""End to end, in JupyterLab in Chromium: `%mcp config gemini-cli` shows the person the
lines to paste, and, since this Jupyter listens on loopback only, that another machine
cannot use the "From another machine" URL as it is, and how to change that."""

from __future__ import annotations

from playwright.async_api import async_playwright

from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, run_all_cells


async def test_config_shows_the_gemini_lines_and_says_jupyter_is_on_loopback(
    lab: Lab, chromium: str
):
    path = lab.write_notebook(
        "configured", ["%load_ext mcp_notebook", "%mcp start --port 0", "%mcp config gemini-cli"]
    )
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1100})
            await page.goto(lab.notebook_url(path, workspace="config"))
            await run_all_cells(page, lab)
            output = page.locator(".jp-OutputArea-output", has_text="From another machine")
            await output.wait_for(timeout=WAIT_MS)
            await output.screenshot(path=str(ARTIFACTS / "config-gemini-loopback.png"))
            text = await output.inner_text()
        finally:
            await browser.close()
    assert "gemini mcp add --scope user configured" in text
    assert "folders you trust" in text
    assert "Jupyter Server listens on loopback only (127.0.0.1)" in text
    assert "--ip=0.0.0.0" in text
