"""Turn a live Jupyter notebook into a Model Context Protocol server.

``%load_ext mcp_notebook`` puts :data:`mcp` in the namespace and registers ``%mcp``.
"""

__version__ = "0.1.0"

from .app import NotebookMCP, ServerInfo, mcp


def load_ipython_extension(ipython):  # pragma: no cover - exercised through real kernels
    from .kernel.extension import load

    load(ipython)


def unload_ipython_extension(ipython):  # pragma: no cover
    from .kernel.extension import unload

    unload(ipython)


__all__ = ["NotebookMCP", "ServerInfo", "__version__", "mcp"]
