"""Every JSON-RPC error code the package sends or recognises, defined once.

The server and the stdio bridge import them from here (``jsonrpc`` re-exports the
standard ones for its callers); a dialect plug-in keeps its own (protocol/seed/errors.py).
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
# Ours: the caller's OAuth token lacks a scope the tool needs (a call that reached the tool
# past the HTTP layer's 403, e.g. through the dispatcher); ``data`` names the scopes.
INSUFFICIENT_SCOPE = -32003
