"""Start-up stays light: importing the package, loading the extension and registering
tools load no HTTP server (tornado) until a server starts."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python(code: str) -> str:
    """Run ``code`` in a fresh interpreter that imports this tree; its stdout."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_importing_the_package_loads_no_tornado():
    code = """\
import sys
import mcp_notebook
from mcp_notebook import mcp

@mcp.tool
def add(a: int, b: int) -> int:
    return a + b

mcp.limits.max_sessions = 10
print(mcp_notebook.__file__)
print("tornado" in sys.modules)
"""
    where, loaded = python(code).split()
    assert Path(where).is_relative_to(ROOT)
    assert loaded == "False"


def test_loading_the_extension_in_ipython_loads_tornado_only_when_a_server_starts():
    code = """\
import sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "mcp_notebook")
shell.run_cell("@mcp.tool\\ndef add(a: int, b: int) -> int:\\n    return a + b\\n")
print("tornado loaded:", "tornado" in sys.modules)
shell.run_line_magic("mcp", "start --port 0")
print("tornado loaded:", "tornado" in sys.modules)
shell.run_line_magic("mcp", "stop")
"""
    lines = python(code).splitlines()
    loaded = [line.split(": ")[1] for line in lines if line.startswith("tornado loaded:")]
    assert loaded == ["False", "True"], lines


def test_jsonschema_is_imported_only_for_a_call_that_does_not_fit():
    """``import jsonschema`` costs over a second (its format checkers, rfc3987_syntax):
    valid calls are checked by jsonschema-rs alone; the first invalid one imports it and
    gets the same precise message as always."""
    code = """\
import asyncio, json, sys
from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session

app = NotebookMCP()

@app.tool
def add(a: int, b: int) -> int:
    return a + b

@app.tool
def scale(factor: float, values: list[float]) -> list[float]:
    return [factor * v for v in values]

def call(request_id, name, arguments):
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

async def main():
    server, session = Server(app.registry), Session()
    init = {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}
    await server.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
                        session)
    good = await server.handle(call(1, "add", {"a": 1, "b": 2}), session)
    scaled = await server.handle(call(2, "scale", {"factor": 2, "values": [1.5]}), session)
    print(json.dumps([good["result"]["structuredContent"], scaled["result"]["structuredContent"],
                      "jsonschema" in sys.modules]))
    bad = await server.handle(call(3, "add", {"a": "one", "b": 2}), session)
    print(json.dumps([bad["result"]["content"][0]["text"], "jsonschema" in sys.modules]))

asyncio.run(main())
"""
    first, second = (json.loads(line) for line in python(code).splitlines())
    assert first == [{"result": 3}, {"result": [3.0]}, False]
    text, loaded = second
    assert loaded is True
    assert "'one' is not of type 'integer'" in text, text


def test_serves_start_path_loads_no_jsonschema_nbformat_or_pydantic():
    """What `serve --transport stdio` does before its kernel is up (read the notebook,
    answer the client's initialize) imports none of the modules that cost it seconds
    (jupyter_client, which starts the kernel, brings a little of tornado's: not ours)."""
    quickstart = ROOT / "notebooks" / "quickstart.ipynb"
    code = f"""\
import io, json, pathlib, sys
from mcp_notebook import __version__, cli, headless, notebookstart
from mcp_notebook.bridge import Bridge
from mcp_notebook.bridge.startup import LateTarget, Startup
from mcp_notebook.protocol.lifecycle import Identity

cells = notebookstart.read_code_cells(pathlib.Path({str(quickstart)!r}))
startup = Startup("quickstart", Identity("quickstart", __version__))
output = io.BytesIO()
bridge = Bridge(LateTarget(startup), output, startup=startup)
bridge.feed({{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{
    "protocolVersion": "2025-11-25", "capabilities": {{}}, "clientInfo": {{"name": "t"}}}}}})
reply = json.loads(output.getvalue().splitlines()[0])
heavy = ("jsonschema", "nbformat", "pydantic", "IPython", "ipywidgets", "mcp_notebook.registry")
print(json.dumps([len(cells), reply["result"]["serverInfo"]["name"],
                  [name for name in heavy if name in sys.modules]]))
startup.fail("done")
"""
    cells, name, loaded = json.loads(python(code))
    assert (cells, name) == (5, "quickstart")
    assert loaded == []
