"""Where a client on another machine reaches this kernel's server: through Jupyter Server.

The kernel's own server listens on loopback. When the kernel was started by a Jupyter
Server running this package's extension (serverext/), the extension told it the server's
outside URL in :data:`URL_ENV` (under JupyterHub: the user's public server URL, or just
its path when the hub does not know its public address). Set :data:`URL_ENV` yourself
(``%env MCP_NOTEBOOK_JUPYTER_URL=https://hub.example/user/alice/`` before ``%mcp start``)
when a proxy in front has another name. A client authenticates to Jupyter there, not to
the kernel: with a Jupyter token, or an API token of the hub.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path
from urllib.parse import quote, urlsplit

URL_ENV = "MCP_NOTEBOOK_JUPYTER_URL"
PREFIX = "mcp-notebook"
TOKEN_PLACEHOLDER = "<JUPYTER_TOKEN>"
# Windows: processes between the Jupyter Server and the kernel it started (conda run, a
# launcher script) that the search for the server's info file looks past.
MAX_WRAPPERS = 2


@dataclass(frozen=True)
class Through:
    """The endpoint through Jupyter Server, and the credential it wants."""

    url: str  # absolute, or a path on the hub's address when the hub did not say its own
    token: str | None  # this Jupyter Server's token, when the kernel can read it
    token_hint: str  # where a person gets one, for the placeholder

    @property
    def absolute(self) -> bool:
        return "://" in self.url

    def header(self) -> str:
        return f"Authorization: token {self.token or TOKEN_PLACEHOLDER}"


def loopback_note(url: str) -> str | None:
    """What to say when ``url`` is on loopback: no other machine reaches it. None when
    it is not (or is only a path: a hub's address is its own business)."""
    host = urlsplit(url).hostname if "://" in url else None
    if host is None:
        return None
    try:
        loopback = host == "localhost" or ip_address(host).is_loopback
    except ValueError:
        return None  # a name: maybe reachable
    if not loopback:
        return None
    return (
        f"Jupyter Server listens on loopback only ({host}): another machine cannot reach "
        "this URL as it is. Start Jupyter with --ip=0.0.0.0 (or a name or address of this "
        "machine, and keep its token) and run %mcp config again; or, from the other "
        "machine, forward the port over SSH (ssh -L PORT:127.0.0.1:PORT this-machine) and "
        f"use the URL there; behind a proxy, set {URL_ENV} to its address before %mcp start."
    )


def endpoint_path(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{PREFIX}/{quote(name, safe='')}/mcp"


def through_jupyter(name: str, env: Mapping[str, str] | None = None) -> Through | None:
    """The URL of the server ``name`` through this kernel's Jupyter Server, or None when
    the kernel was not started by one with the extension (and none was given)."""
    env = os.environ if env is None else env
    base = env.get(URL_ENV)
    if not base:
        return None
    if env.get("JUPYTERHUB_SERVICE_PREFIX"):
        public_hub = env.get("JUPYTERHUB_PUBLIC_HUB_URL")  # ends in /hub/
        hub = public_hub or (env.get("JUPYTERHUB_BASE_URL") or "/").rstrip("/") + "/hub/"
        hint = f"an API token from {hub.rstrip('/')}/token"
        return Through(endpoint_path(base, name), None, hint)
    return Through(
        endpoint_path(base, name),
        _server_token(env),
        "the token of the Jupyter Server (`jupyter server list` shows it)",
    )


def _server_token(env: Mapping[str, str]) -> str | None:
    """The token of the Jupyter Server that started this kernel (its parent process), from
    the server's own info file in the runtime folder; None if it has none or hides it."""
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    for pid in _server_pids(env):
        try:
            info = json.loads((folder / f"jpserver-{pid}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        token = info.get("token") if isinstance(info, dict) else None
        return token if isinstance(token, str) and token else None
    return None


def _server_pids(env: Mapping[str, str]) -> list[int]:
    """Which process may be the Jupyter Server that started this kernel.

    POSIX: ``JPY_PARENT_PID``, which jupyter_client sets to the server's pid. On Windows
    it sets the same variable to a *handle* of the server process (inherited, for the
    kernel's parent poller), not a pid: there the server is one of our parent processes
    (the first, unless a kernelspec starts the kernel through a wrapper)."""
    pid = env.get("JPY_PARENT_PID")
    if not pid or not pid.isdigit():
        return []
    if sys.platform == "win32":
        return _parent_pids()
    return [int(pid)]


def _parent_pids() -> list[int]:
    import psutil

    try:
        return [parent.pid for parent in psutil.Process().parents()[: MAX_WRAPPERS + 1]]
    except psutil.Error:
        return [os.getppid()]
