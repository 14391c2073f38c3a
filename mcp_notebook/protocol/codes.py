"""Every JSON-RPC error code the package sends or recognises, defined once.

The server, the seed dialect and the stdio bridge import them from here (``jsonrpc``
re-exports the standard ones for its callers).
"""

from __future__ import annotations

# JSON-RPC 2.0.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# JSON-RPC leaves -32000..-32099 to implementations: ours mean "the bridge (or the server
# under load) could not get an answer", retry later.
SERVER_ERROR = -32000
# The spec's "resource not found" (2025-11-25 server/resources.mdx); 2026-07-28 uses -32602.
RESOURCE_NOT_FOUND = -32002
# 2026-07-28 (basic/index.mdx "Error codes").
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
# The seed-000 "MCP v1.0" dialect's own codes (protocol/seed/), in the same -32000 range.
SEED_TOOL_FAILED = -32000
SEED_OUTPUT_MISMATCH = -32001
SEED_NOT_INITIALIZED = -32002  # the value LSP uses, whose framing and handshake the seed borrows
