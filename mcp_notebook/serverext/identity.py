"""What the relay tells the kernel's server about the client: who Jupyter says it is.

The kernel's server believes these headers only next to its relay key, a secret of the
discovery file that no client snippet carries: a client holding just the bearer token
cannot claim to have come through Jupyter Server. The relay drops whatever the client
sent under these names (relay.py passes only the MCP headers on).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..transports.relayed import RELAY_KEY_HEADER, RELAY_USER_HEADER


def user_name(user: Any) -> str:
    """The Jupyter user's name as Jupyter Server knows it (JupyterHub: the hub's name)."""
    # jupyter_server's User: ``name`` is what people read (a token's anonymous user has a
    # random ``username``); under JupyterHub both are the hub's user name.
    name = getattr(user, "name", None) or getattr(user, "username", None)
    if not name and isinstance(user, dict):
        name = user.get("name") or user.get("username")
    return str(name or "unknown")


def relay_headers(record: Any, user: Any) -> dict[str, str]:
    key = getattr(record, "relay_key", None)
    if not key:
        return {}  # a server of an older version: it would not know what to do with them
    # Header values are Latin-1 on the wire: percent-encode any other name.
    return {RELAY_KEY_HEADER: key, RELAY_USER_HEADER: quote(user_name(user), safe=" @.-_+")}
