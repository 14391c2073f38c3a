"""Python values -> MCP content blocks and structured results."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pydantic
from pydantic_core import to_jsonable_python

from .blocks import BLOCK_TYPES, ToolResult, bytes_block, sniff_mime


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


# Extra converters (e.g. the kernel's display formatter for plots and rich objects): each
# takes a value and returns a list of content blocks, or None when it does not apply.
CONVERTERS: list[Callable[[Any], list[dict[str, Any]] | None]] = []


def tool_result(value: Any, wrap_output: bool) -> dict[str, Any]:
    """The ``CallToolResult`` for what a tool function returned."""
    if isinstance(value, ToolResult):
        result: dict[str, Any] = {
            "content": [block for item in value.content for block in content_blocks(item)],
            "isError": value.is_error,
        }
        if value.structured is not None:
            result["structuredContent"] = to_json_value(value.structured)
        if value.meta:
            result["_meta"] = value.meta
        return result
    if value is None:
        return {"content": [], "isError": False}
    if isinstance(value, str):
        result = {"content": [text_block(value)], "isError": False}
        if wrap_output:
            result["structuredContent"] = {"result": value}
        return result
    if isinstance(value, (list, tuple)) and any(_is_block(v) for v in value):
        # A mix of text and content blocks: several blocks in one result.
        return {"content": [b for item in value for b in content_blocks(item)], "isError": False}
    blocks = _converted(value)
    if blocks is not None:
        return {"content": blocks, "isError": False}
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


def content_blocks(item: Any) -> list[dict[str, Any]]:
    """One item of a multi-part result as content blocks."""
    if isinstance(item, str):
        return [text_block(item)]
    if isinstance(item, BLOCK_TYPES):
        return [item.block()]
    if isinstance(item, dict) and isinstance(item.get("type"), str):
        return [item]  # already a content block
    if isinstance(item, (bytes, bytearray, memoryview)):
        return [bytes_block(bytes(item))]
    converted = _converted(item)
    if converted is not None:
        return converted
    if is_structured(item):
        return [text_block(dumps(to_json_value(item)))]
    return [text_block(str(item))]


def _is_block(value: Any) -> bool:
    return isinstance(value, BLOCK_TYPES)


def _converted(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, BLOCK_TYPES):
        return [value.block()]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [bytes_block(bytes(value))]
    for convert in CONVERTERS:
        blocks = convert(value)
        if blocks is not None:
            return blocks
    return None


def error_result(message: str) -> dict[str, Any]:
    return {"content": [text_block(message)], "isError": True}


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
