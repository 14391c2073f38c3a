"""`%mcp start` with a discovery folder another user owns: it serves, writes nothing
there, and the cell says why (discovery.py, ownerfolder.py)."""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() != 0,
    reason="a folder of another user takes root to make (chown)",
)
NOBODY = 65534


def test_start_serves_but_writes_no_token_into_another_users_folder(kernel, tmp_path):
    folder = tmp_path / "mcp_notebook"
    folder.mkdir(mode=0o777)
    os.chown(folder, NOBODY, NOBODY)
    kernel.run(f"%env MCP_NOTEBOOK_RUNTIME_DIR={tmp_path}")
    kernel.run("%load_ext mcp_notebook")
    _, printed = kernel.run("%mcp start --port 0 --name refused")
    try:
        assert kernel.eval("mcp.running") is True
        assert list(folder.iterdir()) == []
        assert "could not write the discovery file" in printed
        assert "refusing the discovery folder" in printed and "uid 65534" in printed
    finally:
        kernel.run("%mcp stop")
