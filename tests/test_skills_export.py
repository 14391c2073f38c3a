"""`mcp-notebook export` carries a notebook's skills: the package serves the same skills,
byte for byte (the same manifests and digests), as the notebook's own server did."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import nbformat

from mcp_notebook import NotebookMCP
from mcp_notebook.export.package import export_notebook
from mcp_notebook.protocol import Server, modern

TOOL = '''
@mcp.tool
def load_sales(region: str) -> str:
    """The sales of one region."""
    return region
'''
SKILLS = """
mcp.skill(from_cells={"heading": "How to use"}, name="how-to")
mcp.skill()
mcp.skill("notes", description="Notes on the data.", text="Call `load_sales`.",
          files={"data/regions.csv": "region\\nnorth\\n"})
"""


def write_notebook(path: Path) -> Path:
    document = nbformat.v4.new_notebook()
    document.cells = [
        nbformat.v4.new_markdown_cell("# Quarterly Sales\n\nThe sales of each quarter."),
        nbformat.v4.new_code_cell("%load_ext mcp_notebook"),
        nbformat.v4.new_code_cell(TOOL),
        nbformat.v4.new_markdown_cell("## How to use\n\nCall `load_sales` per region."),
        nbformat.v4.new_code_cell(SKILLS),
        nbformat.v4.new_markdown_cell("Tagged.", metadata={"tags": ["skill"]}),
    ]
    nbformat.write(document, str(path))
    return path


async def skills_list(app: NotebookMCP) -> list[dict[str, Any]]:
    server = Server(app.registry, name="t", version="1")
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "skills/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    reply = await server.handle(message, modern.open_request(message))
    return reply["result"]["skills"]


def live(notebook: Path) -> NotebookMCP:
    """What the notebook's kernel registers: its code cells run with ``mcp`` knowing the
    notebook file (as the extension sets it)."""
    app = NotebookMCP("sales")
    app.notebook_path = str(notebook)
    namespace: dict[str, Any] = {"mcp": app}
    exec(TOOL, namespace)
    exec(SKILLS, namespace)
    return app


async def test_an_export_serves_the_notebooks_skills_byte_for_byte(tmp_path, monkeypatch):
    notebook = write_notebook(tmp_path / "sales.ipynb")
    result = export_notebook(notebook, tmp_path / "out", package="sales_export")
    assert sum(u.startswith("skill://") for u in result.registered["resources"]) == 7
    copied = nbformat.read(str(tmp_path / "out" / "sales_export" / "notebook.ipynb"), 4)
    assert {c.cell_type for c in copied.cells} == {"markdown"}  # no code, no outputs
    monkeypatch.syspath_prepend(str(tmp_path / "out"))
    try:
        exported = importlib.import_module("sales_export.notebook").mcp
    finally:
        for name in [n for n in sys.modules if n.startswith("sales_export")]:
            del sys.modules[name]
    expected = await skills_list(live(notebook))
    assert {e["uri"] for e in expected} == {
        "skill://how-to/SKILL.md",
        "skill://quarterly-sales/SKILL.md",
        "skill://notes/SKILL.md",
    }
    assert await skills_list(exported) == expected
