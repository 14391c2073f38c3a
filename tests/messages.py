"""Raw JSON-RPC messages that tests of every tier send by hand (no SDK client)."""

from __future__ import annotations

from typing import Any

PROTOCOL = "2025-11-25"


def initialize_message(request_id: int) -> dict[str, Any]:
    """A handshake-era ``initialize`` with no client capabilities."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "raw-http-test", "version": "1"},
        },
    }
