"""In Chromium, in JupyterLab: the MCP panel's Registered section lists a notebook's skills
like its other registrations, one row a skill (not one a file). Screenshot in
test-artifacts/."""

from __future__ import annotations

from playwright.async_api import async_playwright, expect

from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_panel import open_notebook, without_toasts

SETUP = '''\
@mcp.tool
def load_sales(region: str) -> str:
    """The sales of one region."""
    return region

mcp.skill(
    "sales-analysis",
    description="Analyse this notebook's sales: load each region, then compare.",
    text="Call `load_sales` for each region, then say which leads.",
    files={"references/regions.md": "north, south"},
)
'''


async def test_the_panel_lists_each_skill_once(lab: Lab, chromium: str):
    ARTIFACTS.mkdir(exist_ok=True)
    path = lab.write_notebook("panel_skills", ["%load_ext mcp_notebook", SETUP, "%mcp start"])
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await open_notebook(page, lab, path)
            await page.locator(".mcp-toolbar-button").first.click()
            panel = page.locator("#mcp-notebook-panel")
            await panel.wait_for(state="visible")
            registered = panel.locator(".mcp-registered")
            rows = registered.locator(".mcp-registration")
            await expect(rows).to_have_count(2)  # the feed's first snapshot arrived
            await expect(registered).to_have_attribute("open", "")  # open from the start
            # The tool, and the skill once: its SKILL.md, references/regions.md and the
            # generated references/tools.md are one row.
            await expect(rows).to_have_count(2)
            skill = rows.filter(has_text="sales-analysis")
            await expect(skill).to_be_visible()
            await expect(skill.locator(".mcp-kind")).to_have_text("skill")
            await expect(skill.locator(".mcp-reg-about")).to_have_text(
                "Analyse this notebook's sales: load each region, then compare."
            )
            # Its name leads to the cell that made it, as a tool's does.
            await skill.locator(".mcp-reg-name").click()
            active = page.locator(".jp-Notebook .jp-Cell.jp-mod-active")
            await expect(active).to_contain_text("mcp.skill(")
            shot = str(ARTIFACTS / "panel-skills.png")
            await without_toasts(page, lambda: panel.screenshot(path=shot))
        finally:
            await browser.close()
