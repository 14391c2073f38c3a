"""One notebook, protected by an authorization server, served every way: ``%mcp start`` in
a live kernel, ``mcp-notebook serve``, its export's ASGI app under uvicorn, and the
export's replicas on Ray Serve."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import nbformat

from mcp_notebook.export.package import export_notebook
from tests.kernels import Kernel
from tests.oauth.authorization_server import AuthorizationServer
from tests.serving import ServeProcess

# Every request needs READ (the server's --auth-scopes); one tool also needs WRITE, which
# the user may have when asked (a step-up); another needs ADMIN, which the user lacks.
READ, WRITE, ADMIN = "notebook:read", "notebook:write", "notebook:admin"
GRANTABLE = (READ, WRITE)

CELLS = [
    "%load_ext mcp_notebook",
    "from mcp_notebook import Context",
    '''@mcp.tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool
def whoami(ctx: Context) -> str:
    """The caller as the server verified it: subject, then granted scopes."""
    caller = ctx.caller
    return " ".join([caller.subject, *sorted(caller.scopes)])''',
    f'''@mcp.tool(scopes=[{WRITE!r}])
def note(text: str) -> str:
    """Keep a note (needs {WRITE})."""
    return "noted: " + text


@mcp.tool(scopes=[{ADMIN!r}])
def wipe() -> str:
    """Wipe everything (needs {ADMIN})."""
    return "wiped"''',
]


def protected_notebook(folder: Path) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    path = folder / "protected.ipynb"
    nbformat.write(notebook, path)
    return path


def exported(folder: Path) -> Path:
    """The notebook exported as the package ``protected_mcp``; the folder that holds it."""
    export_notebook(protected_notebook(folder), folder / "out")
    return folder / "out"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def auth_environ(issuer: AuthorizationServer, url: str) -> dict[str, str]:
    """What an export reads: the issuer, this deployment's URL as the audience, scopes."""
    return {"MCP_AUTH_ISSUER": issuer.issuer, "MCP_AUTH_AUDIENCE": url, "MCP_AUTH_SCOPES": READ}


def package_path(package_dir: Path) -> str:
    """PYTHONPATH for an export run here: the package, then what this run imports (its
    runtime is the mcp_notebook under test)."""
    return os.pathsep.join([str(package_dir), os.environ.get("PYTHONPATH", "")])


@dataclass
class Running:
    url: str
    stop: object  # () -> None


def start_serve(issuer: AuthorizationServer, folder: Path) -> Running:
    served = ServeProcess(
        str(protected_notebook(folder)),
        "--port",
        "0",
        "--auth-issuer",
        issuer.issuer,
        "--auth-scopes",
        READ,
    )
    return Running(served.wait_for_url(), served.stop)


def start_uvicorn(issuer: AuthorizationServer, folder: Path) -> Running:
    """``uvicorn protected_mcp.asgi:app`` configured by ``MCP_AUTH_*`` alone."""
    package_dir, port = exported(folder), free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, **auth_environ(issuer, url), "PYTHONPATH": package_path(package_dir)}
    env.pop("MCP_NOTEBOOK_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "protected_mcp.asgi:app", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=folder,
    )
    seen: list[str] = []
    started = threading.Event()

    def read() -> None:  # all of stderr, so that a full pipe never blocks the server
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if re.search(r"running on http://127\.0\.0\.1:\d+", line, re.IGNORECASE):
                started.set()
        started.set()  # it ended

    threading.Thread(target=read, daemon=True).start()
    started.wait(120)  # its start-up line, or its end
    if process.poll() is not None or not started.is_set():
        process.kill()
        raise AssertionError(f"uvicorn did not start (exit {process.wait()}):\n{''.join(seen)}")

    def stop() -> None:
        process.terminate()
        process.wait(30)

    return Running(url, stop)


def start_kernel(issuer: AuthorizationServer, folder: Path) -> Running:
    """The notebook's cells run in a live kernel, then ``%mcp start --auth-issuer``."""
    kernel = Kernel()
    for source in CELLS:
        kernel.run(source)
    kernel.run(f"%mcp start --port 0 --auth-issuer {issuer.issuer} --auth-scopes {READ}")
    return Running(kernel.eval("mcp.url"), kernel.shutdown)
