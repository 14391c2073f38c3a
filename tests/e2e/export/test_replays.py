"""Recorded calls become a pytest file (`%mcp record`, `mcp.calls.to_pytest`) that passes
against the notebook served by `mcp-notebook serve` and against its export, and fails once
a cell changes a tool's result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from tests.conftest import connect, start_server

CELLS = [
    "%load_ext mcp_notebook",
    '@mcp.tool\ndef add(a: int, b: int = 1) -> int:\n    """Add."""\n    return a + b',
    '@mcp.tool\ndef mean(xs: list[float]) -> dict:\n    """Mean."""\n'
    '    return {"mean": sum(xs) / len(xs), "n": len(xs)}',
    'mcp.prompt("greet", "Hello {name}")\nmcp.resource("some notes", name="notes")',
]


def _notebook(path: Path, cells: list[str]) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, path)
    return path


def _pytest(test_file: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )


async def test_a_recorded_session_replays_against_the_notebook_and_its_export(kernel, tmp_path):
    notebook = _notebook(tmp_path / "calc.ipynb", CELLS)
    served = start_server(kernel, "\n\n".join(CELLS[1:]))
    kernel.run("%mcp record start")
    async with connect(served) as client:
        await client.call_tool("add", {"a": 2, "b": 3})
        await client.call_tool("mean", {"xs": [0.1, 0.2, 0.4]})
        await client.read_resource("resource://notes")
        await client.get_prompt("greet", {"name": "Ada"})
        await client.call_tool("add", {"a": "not a number"})  # an error: not replayed
    kernel.run("%mcp record stop")
    nowhere, _ = kernel.try_run(f"%mcp export {tmp_path / 'nowhere'}")
    assert nowhere["content"]["ename"] == "UsageError"
    assert "does not know its notebook" in nowhere["content"]["evalue"]
    kernel.run(f"mcp.notebook_path = {str(notebook)!r}")
    test_file = tmp_path / "test_calc_calls.py"
    _, out = kernel.run(f"%mcp record save {test_file}")
    assert "4 calls replayed" in out and "ended error" in out

    passed = _pytest(test_file)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "4 passed" in passed.stdout

    # %mcp export from the kernel: the notebook as saved, pinned to the kernel's packages.
    _, out = kernel.run(f"%mcp export {tmp_path / 'export'}")
    assert f"exported calc_mcp to {tmp_path / 'export'}" in out and "tools: add, mean" in out
    against_export = _pytest(
        test_file,
        MCP_REPLAY_COMMAND=f"{sys.executable} -m calc_mcp",
        PYTHONPATH=str(tmp_path / "export"),
    )
    assert against_export.returncode == 0, against_export.stdout + against_export.stderr

    changed = [*CELLS]
    changed[1] = changed[1].replace("return a + b", "return a + b + 1")
    _notebook(notebook, changed)
    failed = _pytest(test_file)
    assert failed.returncode == 1
    assert "1 failed, 3 passed" in failed.stdout
    assert "result.content[0].text (as JSON): 6 != 5" in failed.stdout


SKILL_CELLS = [
    "%load_ext mcp_notebook",
    'mcp.skill("replayed", description="A skill whose manifest is replayed.", text="Step one.")',
]


async def test_a_recorded_skills_get_and_skill_read_replay_and_catch_a_changed_skill(
    kernel, tmp_path
):
    from mcp_types import Request
    from pydantic import TypeAdapter

    notebook = _notebook(tmp_path / "skilled.ipynb", SKILL_CELLS)
    served = start_server(kernel, SKILL_CELLS[1])
    kernel.run("%mcp record start")
    async with connect(served, "auto") as client:
        request = Request[dict, str](
            method="skills/get", params={"uri": "skill://replayed/SKILL.md"}
        )
        entry = await client.session.send_request(request, TypeAdapter(dict))
        assert entry["skill"]["frontmatter"]["name"] == "replayed"
        await client.read_resource("skill://replayed/SKILL.md")
    kernel.run("%mcp record stop")
    kernel.run(f"mcp.notebook_path = {str(notebook)!r}")
    test_file = tmp_path / "test_skilled_calls.py"
    _, out = kernel.run(f"%mcp record save {test_file}")
    assert "2 calls replayed" in out

    passed = _pytest(test_file)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "2 passed" in passed.stdout

    changed = [SKILL_CELLS[0], SKILL_CELLS[1].replace("Step one.", "Step two.")]
    _notebook(notebook, changed)
    failed = _pytest(test_file)
    assert failed.returncode == 1
    assert "2 failed" in failed.stdout  # the manifest's digest and the file's text
    assert "result.skill.resources[0].digest" in failed.stdout
