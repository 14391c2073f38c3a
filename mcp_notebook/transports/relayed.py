"""Requests relayed by the Jupyter Server extension (serverext/): who the client is.

The relay authenticates to the kernel's server with the kernel's bearer token, like any
client, and adds two headers: the relay key (a secret of the discovery file, which no
client snippet carries) and the Jupyter user's name. The user header counts only next to
the right key, so a client holding the bearer token alone cannot pose as a Jupyter user.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Protocol
from urllib.parse import unquote

RELAY_KEY_HEADER = "X-Mcp-Notebook-Relay"
RELAY_USER_HEADER = "X-Mcp-Notebook-Jupyter-User"
MAX_USER = 200  # characters of a user name kept


def jupyter_user(headers: Mapping[str, str], relay_key: str | None) -> str | None:
    """The Jupyter user a request came through Jupyter Server as, or None (direct)."""
    key = headers.get(RELAY_KEY_HEADER)
    if not relay_key or not key or not hmac.compare_digest(key.encode(), relay_key.encode()):
        return None
    user = unquote(headers.get(RELAY_USER_HEADER) or "")[:MAX_USER]
    return user or "unknown"


class _HasRelayKey(Protocol):
    relay_key: str | None


def via(headers: Mapping[str, str], guard: _HasRelayKey) -> str | None:
    """What a session records of who passed its client on: "Jupyter user alice", or None."""
    user = jupyter_user(headers, guard.relay_key)
    return f"Jupyter user {user}" if user is not None else None
