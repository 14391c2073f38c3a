"""Tell the kernels a Jupyter Server starts where it can be reached from outside.

A kernel learns nothing of its server but the environment it inherits, so the extension
puts the server's outside URL into :data:`~mcp_notebook.reach.URL_ENV`, which ``%mcp
start`` reads (reach.py). Never a token. Under JupyterHub that is the user's public
server URL (``JUPYTERHUB_PUBLIC_URL``), or only its path when the hub was not told its
public address; else the server's ``custom_display_url`` if set, or the URL it listens at,
with the base URL. A value already set (by the user) is kept.
"""

from __future__ import annotations

import os
from typing import Any

from ..reach import URL_ENV


def server_url(serverapp: Any, env: dict[str, str] | os._Environ[str]) -> str:
    if env.get("JUPYTERHUB_SERVICE_PREFIX"):
        return env.get("JUPYTERHUB_PUBLIC_URL") or env["JUPYTERHUB_SERVICE_PREFIX"]
    url: str = serverapp.connection_url  # public_url would carry the server's token
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
            os.environ.setdefault(URL_ENV, server_url(serverapp, os.environ))
        except Exception:  # never fail the server over a hint
            serverapp.log.debug("mcp_notebook: no server URL for kernels", exc_info=True)

    serverapp.io_loop.add_callback(publish)
