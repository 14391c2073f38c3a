"""The seed dialect's errors: its own codes, and the phrase-plus-detail shape it gives them."""

from __future__ import annotations

import json
from typing import Any

from .. import jsonrpc
from ..codes import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)
from ..jsonrpc import Message, RpcError

# The dialect's own codes, in the -32000 range JSON-RPC leaves to implementations.
TOOL_FAILED = -32000
OUTPUT_MISMATCH = -32001
NOT_INITIALIZED = -32002  # the value LSP uses, whose framing and handshake the seed borrows
PHRASES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}
DIALECT_PHRASES = {
    TOOL_FAILED: "Tool execution failed",
    OUTPUT_MISMATCH: "Tool output does not match its outputSchema",
    NOT_INITIALIZED: "Server not initialized",
}


class SeedError(RpcError):
    """An error in the document's shape: the code's phrase as message, a sentence as data."""

    def __init__(self, code: int, detail: str | None, phrase: str | None = None) -> None:
        phrase = phrase or PHRASES.get(code) or DIALECT_PHRASES.get(code) or "Server error"
        super().__init__(code, phrase, detail)


def error_reply(request_id: Any, error: RpcError) -> Message:
    """An error response; without ``id`` when the request's could not be read (the one
    rule of :func:`~mcp_notebook.protocol.jsonrpc.error_response`, as standard MCP)."""
    return jsonrpc.error_response(request_id, error)


def as_seed(error: RpcError) -> SeedError:
    """A standard error (from ``call``, or the dispatcher's) in the dialect's shape, its
    code kept."""
    if isinstance(error, SeedError):
        return error
    phrase = PHRASES.get(error.code)
    if phrase is None:  # e.g. the bridge's -32000: keep its own words
        return SeedError(error.code, _as_text(error.data), error.message)
    detail = error.message if error.message != phrase else _as_text(error.data)
    return SeedError(error.code, detail)


def internal(exc: BaseException) -> SeedError:
    return SeedError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


def not_found(method: str) -> SeedError:
    return SeedError(METHOD_NOT_FOUND, f"The MCP v1.0 dialect has no method {method!r}")


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
