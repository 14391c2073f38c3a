"""``%load_ext mcp_notebook``."""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from ..app import mcp
from ..protocol.calls import CallRecord
from ..registry.content import CONVERTERS
from . import rich
from .live import VariableWatcher
from .magics import McpMagics

_loaded: dict[str, Any] = {}


def load(ipython: Any) -> None:
    mcp.kernel_id = _kernel_id()
    mcp.notebook_path = _notebook_path(ipython)
    mcp.namespace = ipython.user_ns
    ipython.push({"mcp": mcp})
    ipython.register_magics(McpMagics(ipython, mcp))
    CallRecord.code_name = partial(_cell_name, ipython)  # "Cell In[5]" in tracebacks
    if rich.convert not in CONVERTERS:  # figures, images, IPython display objects
        CONVERTERS.append(rich.convert)
    if "watcher" not in _loaded:
        _loaded["watcher"] = VariableWatcher(mcp, ipython.user_ns)
        ipython.events.register("post_run_cell", _loaded["watcher"])
    if "ui" not in _loaded and _in_kernel(ipython):
        # Monitors, confirmation prompts, per-call output capture (mcp_notebook/ui).
        from ..ui.hub import Hub
        from . import breaks, capture, cellcode, cells

        capture.install(ipython)
        breaks.BREAKS.tools = lambda: mcp.registry.tools  # %mcp break finds the function
        breaks.BREAKS.namespace = lambda: ipython.user_ns  # --when sees the globals
        CallRecord.cell_maker = partial(cellcode.to_cell, mcp)  # call.to_cell()
        CallRecord.cell_coder = partial(cellcode.cell_code, mcp)  # shown in the monitor
        loop = asyncio.get_running_loop()
        # The executor knows which cell holds the loop: a queued call says so (cells.py).
        watch = cells.install(ipython)
        _loaded["ui"] = mcp.ui = Hub(
            mcp,
            loop,
            headless=mcp.headless,  # pinned by `mcp-notebook serve` before this loads
            executor=partial(capture.CapturingExecutor, loop, watch),
            replay=capture.replay,
            cells=watch,
            pauses=breaks.BREAKS,  # the monitor's "Pause next call"
        )
    if "ipython" not in _loaded:
        # Close the socket and the server thread with the kernel (shutdown or restart).
        atexit.register(mcp.stop)
        _loaded["ipython"] = ipython


def unload(ipython: Any) -> None:
    mcp.stop()


def _cell_name(ipython: Any, filename: str) -> str | None:
    """A cell's file as IPython names it in tracebacks ("Cell In[5]"), else None."""
    named = ipython.compile.format_code_name(filename)
    return " ".join(named) if named else None


def _in_kernel(ipython: Any) -> bool:
    """A kernel with a running loop (not terminal IPython): where widgets can live."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return getattr(ipython, "kernel", None) is not None


def _kernel_id() -> str | None:
    if "ipykernel" not in sys.modules:  # no kernel runs this (plain IPython): importing it
        return None  # would only load jupyter_client and tornado for nothing
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).stem
    except Exception:  # not in a kernel (e.g. plain IPython)
        return None
    # Jupyter names it kernel-<id>.json; other launchers use temporary names, not ids.
    return name.removeprefix("kernel-") if name.startswith("kernel-") else None


def _notebook_path(ipython: Any) -> str | None:
    # Jupyter Server exports the notebook path; VS Code puts it in the namespace.
    for value in (
        ipython.user_ns.get("__vsc_ipynb_file__"),
        os.environ.get("JPY_SESSION_NAME"),
        ipython.user_ns.get("__session__"),
    ):
        if isinstance(value, str) and value.endswith(".ipynb"):
            return value
    return None
