"""Whether a 2026-07-28 POST may be served, and the HTTP status of its reply.

Pure and tornado-free: the endpoint policy (policy.py) admits with it; both adapters
(handler.py, asgi.py) give a reply its status with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..protocol import Server, Session, modern
from ..protocol.jsonrpc import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    RpcError,
)
from ..protocol.names import VERSION_HEADER
from . import headers


def admit(
    message: dict[str, Any], request_headers: Mapping[str, str], server: Server
) -> Session | tuple[int, RpcError]:
    """The Session of a 2026-07-28 request that passes the revision's checks, or the HTTP
    status and error that refuse it. Pure: the tornado handler and the ASGI app share it."""
    mismatch = RpcError(
        HEADER_MISMATCH, f"Header mismatch: {VERSION_HEADER} must equal _meta's protocol version"
    )
    version_differs = request_headers.get(VERSION_HEADER) != modern.requested_version(message)
    try:
        session = modern.open_request(message)
    except RpcError as error:
        return 400, mismatch if error.code == UNSUPPORTED_VERSION and version_differs else error
    if version_differs:
        return 400, mismatch
    method = message["method"]
    problem = headers.mismatch(
        message, request_headers, server.registry.tools, lambda name: server.serves(name, "modern")
    )
    if problem is not None:
        return 400, RpcError(HEADER_MISMATCH, f"Header mismatch: {problem}")
    if not server.serves(method, "modern"):
        return 404, RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    return session


_ERROR_STATUS = {MISSING_CAPABILITY: 400, METHOD_NOT_FOUND: 404}


def reply_status(reply: dict[str, Any]) -> int:
    """The HTTP status of a 2026-07-28 reply: some errors have their own."""
    error = reply.get("error")
    return _ERROR_STATUS.get(error.get("code"), 200) if error else 200
