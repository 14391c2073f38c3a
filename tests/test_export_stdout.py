"""`python -m PACKAGE` over stdio keeps stdout for protocol messages (an export, served).

A tool's `print`, and what native code or a child process writes (on Windows: to the
standard output handle, which `bridge.protocol_stdout` points at stderr as well), goes
to stderr; a client reading stdout would otherwise fail on a line that is no JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat

from mcp_notebook.export.package import export_notebook

TOOL = """\
import subprocess, sys

@mcp.tool
def add(a: int) -> int:
    print("adding", a)
    subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
    return a + 1
"""


def test_a_printing_tool_leaves_the_stdio_stream_to_the_protocol(tmp_path):
    notebook = tmp_path / "calc.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext mcp_notebook"),
        nbformat.v4.new_code_cell(TOOL),
    ]
    nbformat.write(nb, notebook)
    result = export_notebook(notebook, tmp_path / "out", check=False)
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1}},
        },
    ]
    done = subprocess.run(
        [sys.executable, "-m", result.package],
        input="".join(json.dumps(m) + "\n" for m in messages).encode(),
        capture_output=True,
        cwd=result.directory,
        env={**os.environ, "PYTHONPATH": str(result.directory)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[1]["result"]["content"] == [{"type": "text", "text": "2"}]
    assert b"adding 1" in done.stderr and b"from a child" in done.stderr
