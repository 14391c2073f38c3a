"""The documentation site builds with warnings as errors, and its reference is the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_notebook.cli import _parser as cli_parser
from mcp_notebook.kernel.magicparser import magic_parser as magics_parser
from tests.docs.site import build


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(out)
    assert done.returncode == 0, f"the docs site does not build strictly:\n{done.stderr}"
    return out / "html"


def text_of(page: Path) -> str:
    html = page.read_text(encoding="utf-8")
    return re.sub(r"<[^>]+>", "", html).replace("&#8212;", "—").replace("&quot;", '"')


def test_the_site_builds_strictly_with_every_page(site: Path):
    for page in ("index", "getting-started", "tutorial", "benchmarks", "changelog"):
        assert (site / f"{page}.html").is_file(), page
    for page in ("security", "platforms", "seed-dialect", "architecture"):
        assert (site / f"{page}.html").is_file(), page


def test_the_cli_reference_is_argparse_s_help(site: Path):
    text = text_of(site / "reference" / "cli.html")
    for name, sub in _subparsers(cli_parser()).items():
        assert f"mcp-notebook {name}" in text
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in text, (name, flag)


def test_the_magics_reference_is_the_magics_parser(site: Path):
    text = text_of(site / "reference" / "magics.html")
    for name, sub in _subparsers(magics_parser()).items():
        assert f"%mcp {name}" in text
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in text, (name, flag)


def test_the_python_reference_documents_the_public_api(site: Path):
    text = text_of(site / "reference" / "python.html")
    for name in ("NotebookMCP", "Context", "ToolResult", "Image", "RpcError"):
        assert name in text, name
    for method in ("tool", "resource", "resource_template", "prompt", "app", "start", "stop"):
        assert f"mcp_notebook.NotebookMCP.{method}" in (
            site / "reference" / "python.html"
        ).read_text(encoding="utf-8"), method


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")
