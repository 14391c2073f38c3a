"""Tell the kernels a Jupyter Server starts where it can be reached from outside.

A kernel learns nothing of its server but the environment it inherits, so the extension
puts the server's URL (its ``custom_display_url`` when configured, else the URL it listens at,
with the base URL; never a token) into :data:`URL_ENV`. ``%mcp start`` then prints the endpoint a
client outside can use. Set the variable yourself to override it (a proxy in front).
"""

from __future__ import annotations

import os
from typing import Any

URL_ENV = "MCP_NOTEBOOK_JUPYTER_URL"


def server_url(serverapp: Any) -> str:
    url = serverapp.connection_url  # public_url would carry the server's token
    shown = getattr(serverapp, "custom_display_url", "")
    if shown:
        url = shown.split("?", 1)[0]  # the user's name for the server (a proxy in front)
    return url if url.endswith("/") else url + "/"


def announce(serverapp: Any) -> None:
    """Set :data:`URL_ENV` once the server listens (its port is known only then)."""
    if os.environ.get(URL_ENV):
        return  # given by the user: it knows better (a proxy, a public name)

    def publish() -> None:
        try:
            os.environ.setdefault(URL_ENV, server_url(serverapp))
        except Exception:  # never fail the server over a hint
            serverapp.log.debug("mcp_notebook: no server URL for kernels", exc_info=True)

    serverapp.io_loop.add_callback(publish)
