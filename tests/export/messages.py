"""Raw JSON-RPC messages that the export tests send by hand (no SDK client)."""

from __future__ import annotations

# A 2025-06-18 ``initialize`` with no client capabilities.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
