"""The MCP Inspector's CLI (from npm), a client that reads skills over MCP, verifies every
skill a notebook serves (`--method skills/list --verify`: SEP-2640 conformance of each
entry, each file read and its digest and size checked, the frontmatter compared), over
HTTP on 2026-07-28."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

from tests import agent_clis
from tests.serving import ServeProcess

SKILLS = '''\
%load_ext mcp_notebook
import pathlib

@mcp.tool
def load_sales(region: str) -> str:
    """The sales of one region."""
    return region

mcp.skill(from_cells={"heading": "How to use"}, name="how-to")
mcp.skill("team/notes", description="Notes on the data.", text="Call `load_sales`.",
          files={"data/regions.csv": "region\\nnorth\\n", "assets/mark.bin": bytes(range(256))})
folder = pathlib.Path("refunds")
(folder / "examples").mkdir(parents=True, exist_ok=True)
skill_md = "---\\nname: refunds\\ndescription: Refund policy.\\n---\\nAsk.\\n"
(folder / "SKILL.md").write_text(skill_md)
(folder / "examples" / "email.md").write_text("Dear customer, ...\\n")
mcp.skill(path=folder)
'''
EXPECTED = {"skill://how-to/SKILL.md", "skill://team/notes/SKILL.md", "skill://refunds/SKILL.md"}


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    document = nbformat.v4.new_notebook()
    document.cells = [
        nbformat.v4.new_markdown_cell("# Sales\n\n## How to use\n\nCall `load_sales` first."),
        nbformat.v4.new_code_cell(SKILLS),
    ]
    path = tmp_path / "sales.ipynb"
    nbformat.write(document, str(path))
    return path


def verified(target: list[str], tmp_path: Path) -> list[dict]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = agent_clis.environment(home)
    # A stdio server gets only the variables the CLI passes: this checkout's package too.
    # (PYTHONPATH only when set: the CLI refuses an empty value.)
    python_path = env.get("PYTHONPATH")
    passed = [*(["-e", f"PYTHONPATH={python_path}"] if python_path else []), "-e", f"HOME={home}"]
    options = ["--protocol-era", "modern", "--method", "skills/list", "--verify"]
    # The options first: what follows a server command is that command's own arguments.
    argv = [*agent_clis.inspector(), *passed, *options, *target]
    done = agent_clis.run(argv, env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {r["uri"] for r in reports} == EXPECTED, done.stdout
    for report in reports:
        assert report["ok"] and report["outcome"] == "verified", report
        assert report["conformance"] == [] and report["frontmatter"] == [], report
        assert all(f["status"] == "verified" for f in report["files"]), report
    return reports


def test_the_inspector_verifies_every_skill_over_http(notebook, tmp_path):
    served = ServeProcess(str(notebook), "--port", "0", "--no-auth", cwd=str(tmp_path))
    try:
        reports = verified(["--server-url", served.wait_for_url()], tmp_path)
    finally:
        served.stop()
    files = {f["uri"] for r in reports for f in r["files"]}
    assert "skill://team/notes/assets/mark.bin" in files  # a blob's digest checked too


def test_the_inspector_verifies_every_skill_over_stdio(notebook, tmp_path):
    """The CLI spawns ``mcp-notebook serve --transport stdio``; "--" ends the CLI's own
    options, which include a ``--transport`` of its own."""
    serve = [sys.executable, "-m", "mcp_notebook", "serve", str(notebook), "--transport", "stdio"]
    reports = verified(["--", *serve], tmp_path)
    files = {f["uri"] for r in reports for f in r["files"]}
    assert "skill://refunds/examples/email.md" in files
