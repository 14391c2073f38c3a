"""Which way one POST to the endpoint goes, from its headers and body alone.

The endpoint speaks both eras of MCP on one URL, and whatever dialect plug-ins claim
(dialects.py); a POST is one of five ways, which the endpoint policy (policy.py) turns
into what to do:

- ``refused``: a content type, ``Accept`` or body the endpoint cannot take (415, 406, 400);
- ``dialect``: claimed by a dialect plug-in, without ``Mcp-Session-Id`` (dialects.py);
- ``modern``: a 2026-07-28 request, which says so in ``_meta`` or ``MCP-Protocol-Version``
  (modern_checks.py);
- ``initialize``: a handshake-era ``initialize``, which opens a session;
- ``handshake``: any other handshake-era message, on its session.

Pure: no tornado, no I/O, so the order of these checks is read (and tested) in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..protocol import jsonrpc, modern
from ..protocol.jsonrpc import RpcError
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.versions import HANDSHAKE_VERSIONS, modern_version
from . import dialects
from .dialects import Claimed

PostWay = Literal["refused", "dialect", "modern", "initialize", "handshake"]
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
    claimed: Claimed | None = None  # "dialect": which plug-in took it, and its claim
    status: int = 400  # "refused": the HTTP status, and the error it carries
    error: RpcError | None = None


def classify(headers: Any, body: bytes) -> Post:
    """The way of a POST with these headers (tornado's ``HTTPHeaders``) and this body."""
    content_type = headers.get("Content-Type", "")
    extra = dialects.media_types()
    media_type = content_type.split(";")[0].strip().lower()
    if media_type != JSON and media_type not in extra:
        return _refused(415, "Unsupported Media Type: send application/json")
    accept = headers.get("Accept", "*/*").lower()
    wants_json = JSON in accept or "*/*" in accept
    wants_sse = SSE in accept
    if not wants_json and not wants_sse and not any(media in accept for media in extra):
        return _refused(406, "Not Acceptable: accept application/json or text/event-stream")
    has_session = bool(headers.get(SESSION_HEADER))
    try:
        message = jsonrpc.parse(body)
    except RpcError as error:
        claimed = None if has_session else dialects.claim(body, dialects.UNPARSED)
        if claimed is not None:
            return Post("dialect", claimed=claimed)
        return Post("refused", error=error)
    # Modern _meta makes a request stateless even beside a session header (versioning:
    # "a request carrying modern per-request _meta is served statelessly"); the header is
    # ignored then, as the 2026-07-28 transport says. The version header alone does not.
    is_modern = modern_version(message) is not None or (
        not has_session and _is_modern(message, headers)
    )
    if not has_session and not is_modern:
        claimed = dialects.claim(body, message)
        if claimed is not None:
            return Post("dialect", message, claimed=claimed)
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
