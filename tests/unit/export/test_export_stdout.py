"""An exported package serving: its stdio stream, and figures drawn on a desktop.

`python -m PACKAGE` over stdio keeps stdout for protocol messages: a tool's `print`, and
what native code or a child process writes (on Windows: to the standard output handle,
which `bridge.protocol_stdout` points at stderr as well), goes to stderr; a client reading
stdout would otherwise fail on a line that is no JSON. A tool drawing with pyplot on a
worker thread draws off-screen, not with the desktop's GUI backend (macOS: a crash).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_notebook.export.package import export_notebook
from tests.sources import LOAD
from tests.sources import notebook as write_notebook

TOOL = """\
import subprocess, sys

@mcp.tool
def add(a: int) -> int:
    print("adding", a)
    subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
    return a + 1
"""


def test_a_printing_tool_leaves_the_stdio_stream_to_the_protocol(tmp_path):
    notebook = write_notebook(tmp_path / "calc.ipynb", LOAD, TOOL)
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


FIGURE_TOOL = """\
import matplotlib.pyplot as plt

@mcp.tool
def chart(n: int):
    figure, axes = plt.subplots()
    axes.plot(range(n))
    return figure
"""

# The exported package's tool, called as a client would, on its worker thread. Once the
# package is imported (its code imports pyplot), matplotlib is told there is a desktop
# session, as on macOS (a window server) or Windows, where a backend left to choose is a
# GUI one: macosx there, TkAgg here.
CALL_CHART = """\
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from chart_mcp.notebook import mcp
import matplotlib.cbook
matplotlib.cbook._get_running_interactive_framework = lambda: None
from mcp_notebook.export.runtime import server_of
from mcp_notebook.protocol import Session

server, session = server_of(mcp), Session()
init = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}
call = {"name": "chart", "arguments": {"n": 5}}

async def run():
    await server.handle({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                        session)
    return await server.handle(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, session)

reply = asyncio.run(run())
print(json.dumps({"content": reply["result"]["content"], "backend": matplotlib.get_backend()}))
"""


def test_an_exported_tool_draws_a_figure_off_screen_where_a_desktop_is(tmp_path):
    pytest.importorskip("matplotlib")
    notebook = write_notebook(tmp_path / "chart.ipynb", "%matplotlib inline", FIGURE_TOOL)
    result = export_notebook(notebook, tmp_path / "out", check=False)
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    done = subprocess.run(
        [sys.executable, "-c", CALL_CHART, str(result.directory)],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    found = json.loads(done.stdout.decode().splitlines()[-1])
    assert found["backend"].lower() == "agg"
    assert [block["type"] for block in found["content"]] == ["image"], found["content"]
