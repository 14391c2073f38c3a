"""2026-07-28 requests: no handshake; each request says who it is in ``_meta``.

``open_request`` checks that ``_meta`` and builds the short-lived Session a request runs
in; ``shape`` adds what every result of this revision carries. Transports add their own
checks (HTTP headers) around these.
"""

from __future__ import annotations

from typing import Any

from .codes import INVALID_PARAMS, UNSUPPORTED_VERSION
from .jsonrpc import Message, RpcError
from .names import META_CAPABILITIES as CAPABILITIES
from .names import META_CLIENT_INFO as CLIENT_INFO
from .names import META_LOG_LEVEL as LOG_LEVEL
from .names import META_VERSION as VERSION
from .session import LOG_LEVELS, Session
from .versions import FIRST_MODERN, MODERN_VERSIONS, meta_version

# Results a client may cache, and for how long. A notebook changes under the client's
# feet, so nothing is fresh for long: clients re-list, or listen for changes.
CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "skills/list",
        "skills/get",
    }
)
TTL_MS = 0
CACHE_SCOPE = "private"  # results can hold notebook data: no shared caches


# The ``_meta`` protocol version of a request, if it carries one.
requested_version = meta_version


def open_request(message: Message) -> Session:
    """The Session of one 2026-07-28 request, from its ``_meta`` (or a JSON-RPC error)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, f"Invalid params: the request needs _meta ({FIRST_MODERN})")
    version = meta.get(VERSION)
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, f"Invalid params: _meta needs {VERSION!r}")
    capabilities = meta.get(CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise RpcError(INVALID_PARAMS, f"Invalid params: _meta needs {CAPABILITIES!r}")
    if version not in MODERN_VERSIONS:
        raise RpcError(
            UNSUPPORTED_VERSION,
            f"Unsupported protocol version {version!r}",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
    info = meta.get(CLIENT_INFO)
    level = meta.get(LOG_LEVEL)
    return Session(
        era="modern",
        protocol_version=version,
        client_capabilities=capabilities,
        client_info=info if isinstance(info, dict) else {},
        log_level=level if level in LOG_LEVELS else None,
        initialized=True,
    )


def shape(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """Every result says its type; cacheable ones say how long they stay fresh."""
    result.setdefault("resultType", "complete")
    if method in CACHEABLE and result["resultType"] == "complete":
        result.setdefault("ttlMs", TTL_MS)
        result.setdefault("cacheScope", CACHE_SCOPE)
    return result
