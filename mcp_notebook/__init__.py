"""Turn a live Jupyter notebook into a Model Context Protocol server.

``%load_ext mcp_notebook`` puts :data:`mcp` in the namespace and registers ``%mcp``.
"""

from ._version import __version__
from .app import NotebookMCP, ServerInfo, mcp
from .errors import McpNotebookError
from .protocol.context import CapabilityError, Context, ElicitResult
from .protocol.jsonrpc import RpcError
from .registry.blocks import Audio, Blob, EmbeddedResource, Image, ResourceLink, ToolResult


def load_ipython_extension(ipython):
    from .kernel.extension import load

    load(ipython)


def unload_ipython_extension(ipython):
    from .kernel.extension import unload

    unload(ipython)


__all__ = [
    "Audio",
    "Blob",
    "CapabilityError",
    "Context",
    "ElicitResult",
    "EmbeddedResource",
    "Image",
    "McpNotebookError",
    "NotebookMCP",
    "ResourceLink",
    "RpcError",
    "ServerInfo",
    "ToolResult",
    "__version__",
    "mcp",
]
