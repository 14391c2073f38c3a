"""JSON-RPC 2.0 message shapes and the errors the server can answer with.

Every exception that reaches a client is an :class:`RpcError`; anything else raised while
handling a request is turned into ``-32603`` in exactly one place (``dispatch.Dispatcher``).
"""

from __future__ import annotations

from typing import Any, TypedDict

from ..errors import McpNotebookError
from ..wire import jsontext
from .codes import (  # the codes live in codes.py; importable from here as before
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    SERVER_ERROR,
    UNSUPPORTED_VERSION,
)

Message = dict[str, Any]


class _ErrorFields(TypedDict):
    code: int
    message: str


class ErrorObject(_ErrorFields, total=False):
    """The ``error`` of an error reply (JSON-RPC 2.0 section 5.1); ``data`` only if any."""

    data: Any


__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_CAPABILITY",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "SERVER_ERROR",
    "UNSUPPORTED_VERSION",
    "ErrorObject",
    "Message",
    "RefusedText",
    "RpcError",
    "dumps",
    "encode_reply",
    "error_response",
    "invalid_params",
    "kind",
    "notification",
    "parse",
    "readable_id",
    "refused_id",
    "request_id_in",
    "response",
    "valid_id",
]


class RpcError(McpNotebookError):
    """An error that is sent to the client as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> ErrorObject:
        error: ErrorObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class RefusedText(RpcError):
    """``-32600`` for a JSON text our policy refuses past its grammar (a lone surrogate in
    a string, wire/jsontext.py): ``request_id`` is its id when a reply can carry it."""

    def __init__(self, message: str, request_id: Any = None) -> None:
        super().__init__(INVALID_REQUEST, message)
        self.request_id = request_id


def refused_id(error: RpcError) -> Any:
    """The id the reply to a payload :func:`parse` refused may name (None for most)."""
    return error.request_id if isinstance(error, RefusedText) else None


def invalid_params(message: str, data: Any = None) -> RpcError:
    return RpcError(INVALID_PARAMS, message, data)


def response(request_id: Any, result: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, error: RpcError) -> Message:
    """The one shape of an error reply, on every transport and in every dialect.

    MCP's schema (2025-11-25 and 2026-07-28: ``JSONRPCErrorResponse``) makes ``id``
    optional and never null, so an error to a message whose id cannot be read has none.
    """
    message: Message = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["error"] = error.to_error()
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    message: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def parse(data: bytes | str) -> Any:
    """Decode a JSON payload; raise ``-32700`` when it is not JSON, :class:`RefusedText`
    (``-32600``) when it is JSON no reply could echo (a lone surrogate)."""
    try:
        return jsontext.loads(data)
    except jsontext.LoneSurrogate as exc:
        raise RefusedText(f"Invalid Request: {exc}", exc.request_id) from None
    except jsontext.JsonTextError as exc:
        raise RpcError(PARSE_ERROR, f"Parse error: {exc}") from None


# One encoder for every message (wire/jsontext.py): NaN/Infinity are refused.
dumps = jsontext.dumps


def encode_reply(reply: Message) -> bytes:
    """``dumps`` for a reply the client waits for: one that is not JSON (a NaN some code
    put in a result, a value nested too deep) becomes a ``-32603`` error to the same id,
    so the client still gets its one reply."""
    try:
        return jsontext.dumps(reply)
    except (TypeError, ValueError) as exc:
        error = RpcError(INTERNAL_ERROR, f"Internal error: the reply is not JSON: {exc}")
        return jsontext.dumps(error_response(readable_id(reply), error))


def kind(message: Any) -> str:
    """Classify a decoded message: request, notification, response, or raise ``-32600``."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
    has_id = "id" in message
    if has_id and not valid_id(message["id"]):
        raise RpcError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if "method" in message:
        if not isinstance(message["method"], str):
            raise RpcError(INVALID_REQUEST, "Invalid Request: method must be a string")
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            raise RpcError(INVALID_REQUEST, "Invalid Request: params must be an object")
        if has_id and params and params.get("_meta") is not None:
            _check_meta(params["_meta"])
        return "request" if has_id else "notification"
    if has_id and (("result" in message) ^ ("error" in message)):
        return "response"
    raise RpcError(INVALID_REQUEST, "Invalid Request: neither a request nor a response")


def _check_meta(meta: Any) -> None:
    """A request's ``_meta`` as the schema has it; a progress token of another type
    would be echoed in notifications no client could read."""
    if not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: _meta must be an object")
    token = meta.get("progressToken")
    integral = isinstance(token, float) and token.is_integer()  # JSON Schema's integer: 1.0
    if token is not None and not valid_id(token) and not integral:
        raise RpcError(
            INVALID_PARAMS, "Invalid params: _meta.progressToken must be a string or an integer"
        )


def valid_id(value: Any) -> bool:
    """A request id MCP allows: a string or an integer (not null, not a boolean)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_id_in(data: bytes | str) -> Any:
    """The id a reply to the payload ``data`` may name, whether it parses or not."""
    try:
        return readable_id(parse(data))
    except RpcError as error:
        return refused_id(error)


def readable_id(message: Any) -> Any:
    """The id of a decoded message, or None when it has none that a reply may echo."""
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if valid_id(request_id) else None
