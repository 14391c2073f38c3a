"""The official MCP conformance suite against the export of `notebooks/everything.ipynb`,
served without a kernel by uvicorn (`everything_mcp.asgi:app`): the same runs, the same
bar (no failure, no warning) as against `mcp-notebook serve`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from mcp_notebook.export.package import export_notebook
from tests import portable
from tests.e2e.conformance.node import NEEDS
from tests.e2e.conformance.suite import RUNS, assert_the_suite_passes
from tests.e2e.conformance.test_conformance import EVERYTHING


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Iterator[str]:
    portable.require_linux(NEEDS)
    result = export_notebook(EVERYTHING, tmp_path_factory.mktemp("everything-export"))
    env = {**os.environ, "PYTHONPATH": str(result.directory), "MCP_NOTEBOOK_NO_AUTH": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", f"{result.package}.asgi:app", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:  # its start-up line names the port
            found = re.search(r"running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                yield f"{found.group(1)}/mcp"
                break
        else:
            raise AssertionError(f"uvicorn did not start (exit {process.wait()})")
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.parametrize("run", list(RUNS))
def test_the_official_suite_passes_against_the_export(exported, run, tmp_path):
    assert_the_suite_passes(exported, run, tmp_path)
