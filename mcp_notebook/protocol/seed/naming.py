"""Recognising the dialect, and the ``mcpId`` URIs it names tools, resources and prompts by."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any
from urllib.parse import quote


def is_seed_message(message: Any) -> bool:
    """Whether a decoded message (a batch: its first one) speaks the seed dialect.

    ``mcp/*``, ``$/*`` and ``initialized`` exist only in the dialect; its ``initialize``
    has no ``protocolVersion``, which the standard one always carries.
    """
    if isinstance(message, list):
        return bool(message) and is_seed_message(message[0])
    method = message.get("method") if isinstance(message, dict) else None
    if not isinstance(method, str):
        return False
    if method.startswith(("mcp/", "$/")) or method == "initialized":
        return True
    params = message.get("params")
    return method == "initialize" and isinstance(params, dict) and "protocolVersion" not in params


def server_authority(name: Any) -> str:
    """A server name as the host part of an mcpId: lowercase letters, digits, '.', '-'."""
    slug = re.sub(r"[^a-z0-9.-]+", "-", str(name or "").lower()).strip("-.")
    return slug or "mcp-notebook"


def mcp_id(server: str | None, kind: str, name: str) -> str:
    """``mcp://<server>/<kind>/<name>:v1``, the name percent-encoded."""
    return f"mcp://{server}/{kind}/{quote(name, safe='')}:v1"


def resource_ids(server: str | None, resources: list[dict[str, Any]]) -> list[str]:
    """mcpIds by name; by URI for names that several resources share (so ids stay unique)."""
    names = Counter(r.get("name") for r in resources)
    ids = []
    for resource in resources:
        name = resource.get("name")
        unique = isinstance(name, str) and name and names[name] == 1
        ids.append(mcp_id(server, "resources", str(name if unique else resource["uri"])))
    return ids
