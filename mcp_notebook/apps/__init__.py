"""MCP Apps views from whatever a notebook can display (``mcp.app``, ``@mcp.tool(app=)``).

Imported only when a view is registered: it pulls in IPython's display formatter and,
for widget views, ipywidgets' embedding.
"""

from .view import AppView, is_view_function

__all__ = ["AppView", "is_view_function"]
