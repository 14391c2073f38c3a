"""Python values -> MCP content blocks and structured results."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pydantic
from pydantic_core import to_jsonable_python

_IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def to_json_value(value: Any) -> Any:
    """A JSON-compatible copy of dataclasses, pydantic models, tuples, enums, dates..."""
    return to_jsonable_python(value, fallback=repr)


def is_structured(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple, pydantic.BaseModel)) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=repr)


def tool_result(value: Any, wrap_output: bool) -> dict[str, Any]:
    """The ``CallToolResult`` for what a tool function returned."""
    if value is None:
        return {"content": [], "isError": False}
    if isinstance(value, str):
        result: dict[str, Any] = {"content": [text_block(value)], "isError": False}
        if wrap_output:
            result["structuredContent"] = {"result": value}
        return result
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"content": [bytes_block(bytes(value))], "isError": False}
    if is_structured(value) or wrap_output:
        data = to_json_value(value)
        structured = {"result": data} if wrap_output or not isinstance(data, dict) else data
        return {
            "content": [text_block(dumps(data))],
            "structuredContent": structured,
            "isError": False,
        }
    if isinstance(value, (int, float, bool)):
        return {"content": [text_block(dumps(value))], "isError": False}
    return {"content": [text_block(repr(value))], "isError": False}


def error_result(message: str) -> dict[str, Any]:
    return {"content": [text_block(message)], "isError": True}


def bytes_block(data: bytes, mime_type: str | None = None) -> dict[str, Any]:
    mime_type = mime_type or sniff_mime(data)
    encoded = base64.b64encode(data).decode("ascii")
    if mime_type.startswith(("image/", "audio/")):
        kind = "image" if mime_type.startswith("image/") else "audio"
        return {"type": kind, "data": encoded, "mimeType": mime_type}
    return {
        "type": "resource",
        "resource": {"uri": "blob:tool-result", "mimeType": mime_type, "blob": encoded},
    }


def sniff_mime(data: bytes) -> str:
    for magic, mime in _IMAGE_MAGIC.items():
        if data.startswith(magic):
            return mime
    return "application/octet-stream"


def resource_contents(uri: str, value: Any, mime_type: str | None) -> dict[str, Any]:
    """One ``TextResourceContents`` or ``BlobResourceContents`` entry."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return {
            "uri": uri,
            "mimeType": mime_type or sniff_mime(data),
            "blob": base64.b64encode(data).decode("ascii"),
        }
    if isinstance(value, str):
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": value}
    if _is_dataframe(value):
        return {"uri": uri, "mimeType": mime_type or "text/csv", "text": value.to_csv(index=False)}
    if is_structured(value):
        return {
            "uri": uri,
            "mimeType": mime_type or "application/json",
            "text": dumps(to_json_value(value)),
        }
    return {"uri": uri, "mimeType": mime_type or "text/plain", "text": str(value)}


def _is_dataframe(value: Any) -> bool:
    # Checked by name so that pandas stays an optional dependency.
    return type(value).__name__ == "DataFrame" and hasattr(value, "to_csv")
