"""Opaque-cursor pagination of list results."""

from __future__ import annotations

import base64
import json
from typing import Any

from .jsonrpc import invalid_params


def page(kind: str, items: list[Any], params: dict[str, Any], size: int) -> dict[str, Any]:
    start = _decode(params.get("cursor"), kind)
    end = start + size
    result: dict[str, Any] = {kind: items[start:end]}
    if end < len(items):
        result["nextCursor"] = _encode(kind, end)
    return result


def _encode(kind: str, offset: int) -> str:
    raw = json.dumps({"k": kind, "o": offset}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: Any, kind: str) -> int:
    if cursor is None:
        return 0
    try:
        padded = str(cursor) + "=" * (-len(str(cursor)) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded))
        if data["k"] == kind and isinstance(data["o"], int) and data["o"] >= 0:
            return data["o"]
    except (ValueError, KeyError, TypeError):
        pass
    raise invalid_params("Invalid cursor", {"cursor": cursor})
