"""`mcp-notebook export` carries a notebook's skills: the package serves the same skills,
byte for byte (the same manifests and digests), as the notebook's own server did."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.base import BaseMCP
from mcp_notebook.export.package import export_notebook
from mcp_notebook.export.skill_folders import copy_folders
from mcp_notebook.notebookfile import code_cells
from mcp_notebook.protocol import Server, modern
from mcp_notebook.registry.skills import SkillError
from tests.export.notebooks import skill_folder_notebook

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


async def request(app: BaseMCP, method: str, **params: Any) -> dict[str, Any]:
    """The result of one stateless (2026-07-28) request to a server of ``app``."""
    server = Server(app.registry, name="t", version="1")
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    reply = await server.handle(message, modern.open_request(message))
    result: dict[str, Any] = reply["result"]
    return result


async def skills_list(app: BaseMCP) -> list[dict[str, Any]]:
    skills: list[dict[str, Any]] = (await request(app, "skills/list"))["skills"]
    return skills


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


async def everything_served(app: BaseMCP) -> dict[str, Any]:
    """skills/list, skills/get of each skill and resources/read of each file it lists."""
    listed = await skills_list(app)
    got = {e["uri"]: await request(app, "skills/get", uri=e["uri"]) for e in listed}
    files = {r["uri"] for e in listed for r in e["resources"]}
    read = {uri: await request(app, "resources/read", uri=uri) for uri in sorted(files)}
    return {"list": listed, "get": got, "read": read}


async def test_an_export_carries_the_skill_folders_it_read(tmp_path, monkeypatch):
    notebook_dir, elsewhere, away = tmp_path / "project", tmp_path / "other", tmp_path / "away"
    away.mkdir()
    notebook = skill_folder_notebook(notebook_dir, elsewhere)
    monkeypatch.chdir(notebook_dir)  # where the notebook's kernel runs
    app = NotebookMCP("folders")
    exec(code_cells(notebook)[-1].source, {"mcp": app})
    expected = await everything_served(app)
    assert sorted(expected["get"]) == [
        "skill://sales/SKILL.md",
        "skill://sales/forecast/SKILL.md",
        "skill://team/glossary/SKILL.md",
    ]
    logo = expected["read"]["skill://sales/assets/logo.png"]["contents"][0]
    assert "blob" in logo

    monkeypatch.chdir(away)  # the exporter runs from anywhere
    export_notebook(notebook, tmp_path / "out", package="folders_export")
    # The package runs with neither folder where the notebook had it, nor the cwd there.
    shutil.rmtree(notebook_dir / "skills")
    shutil.rmtree(elsewhere)
    monkeypatch.syspath_prepend(str(tmp_path / "out"))
    try:
        exported = importlib.import_module("folders_export.notebook").mcp
    finally:
        for name in [n for n in sys.modules if n.startswith("folders_export")]:
            del sys.modules[name]
    assert await everything_served(exported) == expected


def test_exporting_again_copies_the_folder_as_it_is_now(tmp_path, monkeypatch):
    """The probe reads the notebook's folder, not an earlier export's copy of it."""
    notebook = skill_folder_notebook(tmp_path / "project", tmp_path / "other")
    guide = tmp_path / "project" / "skills" / "sales" / "references" / "guide.md"
    copy = tmp_path / "out" / "again_export" / "skill_folders" / "relative" / "skills"
    export_notebook(notebook, tmp_path / "out", package="again_export")
    guide.write_bytes(b"# Guide\n\nBy region and by quarter.\n")
    (guide.parent / "old.md").write_bytes(b"gone soon")
    export_notebook(notebook, tmp_path / "out", package="again_export")
    (guide.parent / "old.md").unlink()
    export_notebook(notebook, tmp_path / "out", package="again_export")
    copied = copy / "sales" / "references"
    assert (copied / "guide.md").read_bytes() == b"# Guide\n\nBy region and by quarter.\n"
    assert sorted(p.name for p in copied.iterdir()) == ["guide.md"]


def test_a_folder_path_that_climbs_out_is_copied_inside_the_package(tmp_path):
    """``..`` or an absolute path names where the folder was, never where its copy goes."""
    notebook_dir = tmp_path / "project"
    skill_folder_notebook(notebook_dir, tmp_path / "other")
    package = tmp_path / "out" / "pkg"
    folder = str(notebook_dir / "skills" / "sales")
    index = copy_folders({"../../../../etc/sales": folder, folder: folder}, package)
    assert sorted(index.values()) == ["outside/1-sales", "outside/2-sales"]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and package not in p.parents]
    assert sorted(p.relative_to(tmp_path).parts[0] for p in written) == ["other"] + ["project"] * 6


def test_a_symlink_put_in_the_folder_after_the_probe_is_not_copied(tmp_path):
    """The copy follows read_folder's rules again: a link to a secret made between the
    probe's read and the copy makes the export fail, and copies none of it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    skill_folder_notebook(tmp_path / "project", tmp_path / "other")
    folder = tmp_path / "project" / "skills" / "sales"
    (folder / "references" / "leak.md").symlink_to(secret)
    with pytest.raises(SkillError, match="leads out of the skill folder"):
        copy_folders({"skills/sales": str(folder)}, tmp_path / "pkg")
    assert not list((tmp_path / "pkg").rglob("*.md"))
