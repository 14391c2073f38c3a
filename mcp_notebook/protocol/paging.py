"""Opaque-cursor pagination of list results."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..wire import jsontext
from .jsonrpc import invalid_params


def page(kind: str, items: list[Any], params: dict[str, Any], size: int) -> dict[str, Any]:
    start = _decode(params.get("cursor"), kind)
    end = start + size
    result: dict[str, Any] = {kind: items[start:end]}
    if end < len(items):
        result["nextCursor"] = _encode(kind, end)
    return result


def _encode(kind: str, offset: int) -> str:
    raw = jsontext.dumps({"k": kind, "o": offset})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: Any, kind: str) -> int:
    if cursor is None:
        return 0
    if isinstance(cursor, str):
        try:
            data = jsontext.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (ValueError, binascii.Error):
            data = None
        offset = data.get("o") if isinstance(data, dict) and data.get("k") == kind else None
        if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
            return offset
    # The cursor is echoed only when it is one (a string): never a client's whole value.
    raise invalid_params("Invalid cursor", {"cursor": cursor} if isinstance(cursor, str) else None)
