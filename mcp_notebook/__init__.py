"""Turn a live Jupyter notebook into a Model Context Protocol server.

``%load_ext mcp_notebook`` puts :data:`mcp` in the namespace and registers ``%mcp``.

The public names are imported when first used (``from mcp_notebook import mcp`` works as
always): ``mcp-notebook serve`` and ``bridge`` start without loading the registry, pydantic
and the app they do not need in their own process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import lazy
from ._version import __version__

if TYPE_CHECKING:
    from .app import NotebookMCP, ServerInfo, mcp
    from .errors import McpNotebookError
    from .protocol.context import CapabilityError, Context, ElicitResult
    from .protocol.jsonrpc import RpcError
    from .registry.blocks import Audio, Blob, EmbeddedResource, Image, ResourceLink, ToolResult

_WHERE = {
    "Audio": ".registry.blocks",
    "Blob": ".registry.blocks",
    "CapabilityError": ".protocol.context",
    "Context": ".protocol.context",
    "ElicitResult": ".protocol.context",
    "EmbeddedResource": ".registry.blocks",
    "Image": ".registry.blocks",
    "McpNotebookError": ".errors",
    "NotebookMCP": ".app",
    "ResourceLink": ".registry.blocks",
    "RpcError": ".protocol.jsonrpc",
    "ServerInfo": ".app",
    "ToolResult": ".registry.blocks",
    "mcp": ".app",
}


def __getattr__(name: str) -> Any:
    return lazy.load(globals(), _WHERE, name)


def __dir__() -> list[str]:
    return lazy.names(globals())


def load_ipython_extension(ipython: Any) -> None:
    from .kernel.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
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
