"""The Jupyter Server extension: a notebook's MCP server through Jupyter Server's own URL.

Enabled when the package is installed (``etc/jupyter/jupyter_server_config.d``). It serves

- ``<base_url>mcp-notebook/<name>/mcp``: relayed to the kernel's loopback endpoint named
  ``<name>`` in the discovery files, with the kernel's token (which never leaves the server);
- ``<base_url>mcp-notebook/api/servers``: the servers it can reach.

Jupyter Server authenticates and authorizes every request (token, cookie, JupyterHub
OAuth); the kernel's server stays on loopback. Imports neither IPython nor the kernel side.
"""

from __future__ import annotations

from typing import Any

from ..reach import URL_ENV


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "mcp_notebook.serverext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from ..protocol.forwarding import from_environment
    from . import handlers
    from .handlers import routes
    from .where import announce

    handlers.TRACING = from_environment()  # OTEL_* of the Jupyter Server process
    web_app = serverapp.web_app
    web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))
    announce(serverapp)
    serverapp.log.info(
        "mcp_notebook: MCP servers of kernels at %smcp-notebook/", serverapp.base_url
    )


__all__ = ["URL_ENV"]
