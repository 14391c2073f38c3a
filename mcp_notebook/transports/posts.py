"""Which way one POST to the endpoint goes, from its headers and body alone.

The endpoint speaks three dialects on one URL; a POST is one of five ways, and the
handler has one method for each (``McpHandler._ways``):

- ``refused``: a content type, ``Accept`` or body the endpoint cannot take (415, 406, 400);
- ``seed``: a seed-000 dialect session without ``Mcp-Session-Id`` (seed_http.py);
- ``modern``: a 2026-07-28 request, which says so in ``_meta`` or ``MCP-Protocol-Version``
  (modern_post.py);
- ``initialize``: a handshake-era ``initialize``, which opens a session;
- ``handshake``: any other handshake-era message, on its session.

Pure: no tornado, no I/O, so the order of these checks is read (and tested) in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..protocol import jsonrpc, modern
from ..protocol.jsonrpc import RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import seed_http

PostWay = Literal["refused", "seed", "modern", "initialize", "handshake"]
SeedShape = Literal["single", "batch", "lines"]
JSON = "application/json"
SSE = "text/event-stream"


@dataclass(slots=True)
class Post:
    """One POST, classified; what its way needs."""

    way: PostWay
    message: Any = None  # the decoded body; None when it is not JSON
    kind: str = ""  # jsonrpc.kind: request, notification or response
    wants_json: bool = False  # the client accepts a JSON response (else SSE)
    wants_sse: bool = False
    seed: Sequence[Any] = ()  # "seed": the dialect's messages, in order
    shape: SeedShape = "single"  # "seed": how the replies are written back
    status: int = 400  # "refused": the HTTP status, and the error it carries
    error: RpcError | None = None


def classify(headers: Any, body: bytes) -> Post:
    """The way of a POST with these headers (tornado's ``HTTPHeaders``) and this body."""
    content_type = headers.get("Content-Type", "")
    if content_type.split(";")[0].strip().lower() not in (JSON, seed_http.NDJSON):
        return _refused(415, "Unsupported Media Type: send application/json")
    accept = headers.get("Accept", "*/*").lower()
    wants_json = JSON in accept or "*/*" in accept
    wants_sse = SSE in accept
    if not wants_json and not wants_sse and seed_http.NDJSON not in accept:
        return _refused(406, "Not Acceptable: accept application/json or text/event-stream")
    has_session = bool(headers.get(SESSION_HEADER))
    try:
        message = jsonrpc.parse(body)
    except RpcError as error:
        lines = None if has_session else seed_http.ndjson_messages(body)
        if lines and seed_http.first_is_seed(lines):
            return Post("seed", seed=lines, shape="lines")
        return Post("refused", error=error)
    is_modern = not has_session and _is_modern(message, headers)
    if not has_session and not is_modern and seed_http.first_is_seed([message]):
        shape: SeedShape = "batch" if isinstance(message, list) else "single"
        return Post("seed", message, seed=[message], shape=shape)
    try:
        kind = jsonrpc.kind(message)
    except RpcError as error:
        return Post("refused", message, error=error)
    if is_modern:
        way: PostWay = "modern"
    elif kind == "request" and message["method"] == "initialize":
        way = "initialize"
    else:
        way = "handshake"
    return Post(way, message, kind, wants_json, wants_sse)


def _is_modern(message: Any, headers: Any) -> bool:
    """A request of the stateless revision: its _meta or its header says so."""
    if modern.requested_version(message) is not None:
        return True
    header = headers.get(VERSION_HEADER)
    return header is not None and header not in HANDSHAKE_VERSIONS


def _refused(status: int, message: str) -> Post:
    return Post("refused", status=status, error=RpcError(jsonrpc.INVALID_REQUEST, message))
