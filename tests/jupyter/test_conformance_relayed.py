"""The official conformance suite through Jupyter Server: everything.ipynb, run in a kernel
that Jupyter Server started, reached at ``<base_url>mcp-notebook/everything/mcp``.

The suite can send no credentials (some scenarios drop even a ``?token=`` query), so this
Jupyter Server accepts requests without a token and without XSRF cookies; that Jupyter's
login guards the relay is shown in test_relay.py. The kernel's server keeps a token of its
own, which only the relay holds: every scenario passing proves the relay adds it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .. import portable
from ..conformance.node import NEEDS, conformance_command
from ..conformance.test_conformance import RUNS, checks_in
from .server import JupyterServer

EVERYTHING = Path(__file__).resolve().parents[2] / "notebooks" / "everything.ipynb"


@pytest.fixture(scope="module")
def everything() -> Iterator[str]:
    portable.require_linux(NEEDS)
    server = JupyterServer("/base/", "--ServerApp.disable_check_xsrf=True", token="")
    kernel = None
    try:
        kernel = server.start_kernel()
        notebook = json.loads(EVERYTHING.read_text())
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                kernel.run("".join(cell["source"]))
        kernel.run("%mcp start --port 0 --name everything")
        assert kernel.eval("mcp.token")  # the kernel's server still wants its own token
        yield server.endpoint("everything")
    finally:
        if kernel is not None:
            kernel.shutdown()
        server.stop()


@pytest.mark.parametrize("run", list(RUNS))
def test_the_official_suite_passes_through_jupyter_server(everything, run, tmp_path):
    version, extra, expected_scenarios = RUNS[run]
    command = [
        *conformance_command(version),
        "server",
        "--url",
        everything,
        "--suite",
        "all",
        *extra,
        "-o",
        str(tmp_path),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    checks = checks_in(tmp_path)
    bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    summary = "\n".join(
        f"{c['scenario']}: {c['id']} {c['status']} {c.get('errorMessage', '')}" for c in bad
    )
    assert result.returncode == 0, summary or result.stdout[-4000:] + result.stderr[-4000:]
    assert not bad, summary
    assert len({c["scenario"] for c in checks}) >= expected_scenarios
