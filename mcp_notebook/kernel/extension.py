"""``%load_ext mcp_notebook``."""

from __future__ import annotations

import atexit
from typing import Any

from ..app import mcp
from .magics import McpMagics

_loaded: dict[str, Any] = {}


def load(ipython: Any) -> None:
    ipython.push({"mcp": mcp})
    ipython.register_magics(McpMagics(ipython, mcp))
    if not _loaded:
        # Close the socket and the server thread with the kernel (shutdown or restart).
        atexit.register(mcp.stop)
        _loaded["ipython"] = ipython


def unload(ipython: Any) -> None:
    mcp.stop()
