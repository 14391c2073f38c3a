"""The documentation site, built strictly, as a reader's browser shows it (headless Chromium):
the home page with its navigation and image, and a reference page generated from the code.
Screenshots: test-artifacts/docs-home.png, test-artifacts/docs-reference.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from tests.docs.site import build
from tests.e2e.browser.conftest import ARTIFACTS, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(out)
    assert done.returncode == 0, done.stderr
    return out / "html"


async def test_the_built_site_shows_its_pages_in_a_browser(site: Path, chromium: str):
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            await page.goto((site / "index.html").as_uri())
            sidebar = page.locator(".sidebar-tree")
            for caption in ("How-to guides", "Reference", "Explanation"):
                await sidebar.get_by_text(caption).first.wait_for()
            image = page.locator("article img").first
            await image.wait_for()
            # The screenshot of the notebook side loaded (a broken image has no width).
            assert await image.evaluate("img => img.complete && img.naturalWidth > 0")
            await page.screenshot(path=str(ARTIFACTS / "docs-home.png"))

            await page.goto((site / "reference" / "magics.html").as_uri())
            await page.get_by_text("%mcp start", exact=True).first.wait_for()
            await page.get_by_text("--allow-remote-no-auth").first.wait_for()
            # The part generated from the parser: the subcommand's help as argparse prints it.
            generated = page.locator("#mcp-start")
            await generated.scroll_into_view_if_needed()
            await page.get_by_text("usage: %mcp start").first.wait_for()
            await page.screenshot(path=str(ARTIFACTS / "docs-reference.png"))
        finally:
            await browser.close()
