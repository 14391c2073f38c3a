"""Start-up stays light: importing the package, loading the extension and registering
tools load no HTTP server (tornado) until a server starts."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
