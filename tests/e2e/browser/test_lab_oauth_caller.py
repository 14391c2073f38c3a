"""End to end, in Chromium and JupyterLab: a notebook served with ``%mcp start
--auth-issuer`` names who called (the token's subject and client) in the MCP panel's calls
and on a confirmation it asks for. Screenshots go to test-artifacts/."""

from __future__ import annotations

import asyncio
import re
import types

from playwright.async_api import async_playwright, expect

from tests.conftest import connect
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, Lab
from tests.e2e.browser.test_lab_confirmations import WAIT_MS, kernel_idle, run_all_cells
from tests.oauth.issuer import running_issuer

TOOLS = '''\
@mcp.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

@mcp.tool(confirm=True)
def drop_rows(table: str) -> str:
    """Drop every row of a table."""
    return f"dropped {table}"
'''


async def test_the_panel_and_a_confirmation_name_the_tokens_holder(lab: Lab, chromium: str):
    ARTIFACTS.mkdir(exist_ok=True)
    with running_issuer() as issuer:
        path = lab.write_notebook(
            "oauth_caller",
            ["%load_ext mcp_notebook", TOOLS, f"%mcp start --auth-issuer {issuer.url}"],
        )
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1500, "height": 900})
                await page.goto(lab.notebook_url(path))
                await run_all_cells(page, lab)
                await kernel_idle(page, lab)
                served = await lab.discovered("oauth_caller")
                assert served.token is None  # no static token: the issuer's tokens only
                token = issuer.mint(aud=served.url, sub="alice", client_id="claude-app")
                endpoint = types.SimpleNamespace(
                    url=served.url, headers={"Authorization": f"Bearer {token}"}
                )
                await page.locator(".mcp-toolbar-button").first.click()
                panel = page.locator("#mcp-notebook-panel")
                await panel.wait_for(state="visible", timeout=WAIT_MS)
                async with connect(endpoint, "legacy") as client:  # type: ignore[arg-type]
                    assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
                    row = panel.locator(".mcp-call", has_text="as alice (client claude-app)")
                    await row.first.wait_for(timeout=WAIT_MS)
                    call = asyncio.ensure_future(client.call_tool("drop_rows", {"table": "orders"}))
                    card = panel.locator(".mcp-card", has_text="drop_rows")
                    await card.wait_for(timeout=WAIT_MS)
                    await expect(card).to_contain_text("as alice (client claude-app)")
                    status = page.locator(".mcp-status-item")
                    await expect(status).to_have_text(re.compile(r"1 client"), timeout=WAIT_MS)
                    await page.screenshot(path=str(ARTIFACTS / "lab-oauth-caller.png"))
                    await card.get_by_role("button", name="Approve").click()
                    result = await asyncio.wait_for(call, 60)
                    assert result.content[0].text == "dropped orders"
            finally:
                await browser.close()
