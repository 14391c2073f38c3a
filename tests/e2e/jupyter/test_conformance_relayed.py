"""The official conformance suite through Jupyter Server: everything.ipynb, run in a kernel
that Jupyter Server started, reached at ``<base_url>mcp-notebook/everything/mcp``.

The suite can send no credentials (some scenarios drop even a ``?token=`` query), so this
Jupyter Server accepts requests without a token and without XSRF cookies; that Jupyter's
login guards the relay is shown in test_relay.py. The kernel's server keeps a token of its
own, which only the relay holds: every scenario passing proves the relay adds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import portable
from tests.e2e.conformance.node import NEEDS
from tests.e2e.conformance.suite import (
    RUNS,
    SKILL_SCENARIOS,
    assert_the_scenario_passes,
    assert_the_suite_passes,
)
from tests.e2e.jupyter.server import JupyterServer

EVERYTHING = Path(__file__).resolve().parents[3] / "notebooks" / "everything.ipynb"


@pytest.fixture(scope="module")
def everything() -> Iterator[str]:
    portable.require_linux(NEEDS)
    server = JupyterServer("/base/", "--ServerApp.disable_check_xsrf=True", token="")
    kernel = None
    try:
        kernel = server.start_kernel()
        notebook = json.loads(EVERYTHING.read_text())
        # The kernel runs the cells without the file: its skill, made from the notebook's
        # markdown cells, is told where they are (as Jupyter tells a notebook's kernel).
        kernel.run(f"%load_ext mcp_notebook\nmcp.notebook_path = {str(EVERYTHING)!r}")
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
    assert_the_suite_passes(everything, run, tmp_path)


@pytest.mark.parametrize("scenario", SKILL_SCENARIOS)
def test_the_skills_extension_scenarios_pass_through_jupyter_server(everything, scenario, tmp_path):
    assert_the_scenario_passes(everything, scenario, tmp_path)
