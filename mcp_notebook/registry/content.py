"""Python values -> MCP content blocks and structured results."""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pydantic

from ..wire import jsontext
from .blocks import BLOCK_TYPES, ToolResult, bytes_block, sniff_mime
from .coercion import json_safe, not_json
from .frame_pages import ROWS_META, Rendered, Unframed, format_for, page, tool_view
from .frames import is_frame, is_series


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def to_json_value(value: Any) -> Any:
    """A JSON-compatible copy of dataclasses, models, tuples, enums, dates, numpy/pandas
    values (NaT and NA become null); :class:`NotJsonError` for what JSON cannot carry,
    such as NaN or an infinity."""
    data = json_safe(value)
    dumps(data)  # the one policy decides (wire/jsontext): refused here, with a clear error
    return data


def _json_and_text(value: Any) -> tuple[Any, str]:
    """``to_json_value`` and its JSON text, encoded once."""
    data = json_safe(value)
    return data, dumps(data)


def is_structured(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple, pydantic.BaseModel)) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def dumps(value: Any) -> str:
    """JSON text by the one policy (wire/jsontext); :class:`NotJsonError` if it is not JSON."""
    try:
        return jsontext.dumps_text(value)
    except (TypeError, ValueError) as exc:
        raise not_json(exc) from None


# Extra converters (e.g. the kernel's display formatter for plots and rich objects): each
# takes a value and returns a list of content blocks, or None when it does not apply. They
# run on the kernel thread, after the built-in cases (blocks, bytes, DataFrames).
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
    if type(value) in (int, float, bool):  # the commonest result, decided first
        if type(value) is float and not math.isfinite(value):
            raise not_json(ValueError("Out of range float"))
        result = {"content": [text_block(dumps(value))], "isError": False}
        if wrap_output:
            result["structuredContent"] = {"result": value}
        return result
    if isinstance(value, str):
        result = {"content": [text_block(value)], "isError": False}
        if wrap_output:
            result["structuredContent"] = {"result": value}
        return result
    if isinstance(value, (list, tuple)):
        parts = _parts(value)
        if parts is not None:  # a mix of text and blocks, figures, frames: one block each
            result = {"content": parts, "isError": False}
            if wrap_output:  # e.g. ``-> list[bytes]``
                result["structuredContent"] = {"result": [_structured(v) for v in value]}
            return result
    if is_frame(value) or is_series(value):
        return _frame_result(value)
    blocks = _converted(value)
    if blocks is not None:
        result = {"content": blocks, "isError": False}
        if wrap_output:  # e.g. ``-> bytes``: the output schema asks for the value as well
            result["structuredContent"] = {"result": _structured(value)}
        return result
    if is_structured(value) or wrap_output:
        data, text = _json_and_text(value)
        structured = {"result": data} if wrap_output or not isinstance(data, dict) else data
        return {
            "content": [text_block(text)],
            "structuredContent": structured,
            "isError": False,
        }
    if isinstance(value, (int, float, bool)) or _is_numpy_scalar(value):
        # numpy's int64 becomes a plain number; a NaN is refused
        return {"content": [text_block(_json_and_text(value)[1])], "isError": False}
    return {"content": [text_block(repr(value))], "isError": False}


def _is_numpy_scalar(value: Any) -> bool:
    return type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0


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
        return [text_block(_json_and_text(item)[1])]
    return [text_block(str(item))]


def _frame_result(value: Any) -> dict[str, Any]:
    """A markdown table of the first rows, and the same rows as ``structuredContent``."""
    text, rows, total = tool_view(value)
    return {
        "content": [text_block(text)],
        "structuredContent": {"result": rows},
        "isError": False,
        "_meta": {ROWS_META: {"shown": len(rows), "total": total}},
    }


def _structured(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return to_json_value(value)


def _parts(items: list[Any] | tuple[Any, ...]) -> list[dict[str, Any]] | None:
    """Content blocks for a list holding at least one block, frame or convertible value
    (a figure...); None for a plain JSON list. Each value is converted once."""
    converted: dict[int, list[dict[str, Any]]] = {}
    for position, item in enumerate(items):
        if _is_block(item):
            converted[position] = [item.block()]
        elif not _is_plain(item):
            blocks = _converted(item)
            if blocks is not None:
                converted[position] = blocks
    if not converted:
        return None
    return [
        block
        for position, item in enumerate(items)
        for block in converted.get(position) or content_blocks(item)
    ]


def _is_plain(value: Any) -> bool:
    # JSON-like values, and numpy numbers: never worth asking the converters about.
    return (
        value is None
        or isinstance(value, (str, int, float, bool))
        or is_structured(value)
        or _is_numpy_scalar(value)
    )


def _is_block(value: Any) -> bool:
    return isinstance(value, BLOCK_TYPES)


def _converted(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, BLOCK_TYPES):
        return [value.block()]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [bytes_block(bytes(value))]
    if is_frame(value) or is_series(value):
        return [text_block(tool_view(value)[0])]
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
    if isinstance(value, Unframed):
        return resource_contents(uri, value.value, None)
    if isinstance(value, Rendered):
        contents = {"uri": uri, "mimeType": value.mime_type, "text": value.text}
        return {**contents, "_meta": value.meta} if value.meta else contents
    if is_frame(value) or is_series(value):
        # A frame served without the page template (a callable's or a variable's value):
        # the same bounded first page, in the format the declared mime type implies.
        frame = value.to_frame() if is_series(value) else value
        return resource_contents(uri, page(frame, fmt=format_for(None, mime_type)), None)
    if is_structured(value):
        return {
            "uri": uri,
            "mimeType": mime_type or "application/json",
            "text": _json_and_text(value)[1],
        }
    rich = _rich_contents(uri, value)
    if rich is not None:
        return rich
    return {"uri": uri, "mimeType": mime_type or "text/plain", "text": str(value)}


def _rich_contents(uri: str, value: Any) -> dict[str, Any] | None:
    """A figure, image or other displayable value (via ``CONVERTERS``) as resource contents."""
    if isinstance(value, (int, float, bool)) or value is None:
        return None
    for convert in CONVERTERS:
        blocks = convert(value)
        if not blocks:
            continue
        block = blocks[0]
        if "data" in block:  # image or audio
            return {"uri": uri, "mimeType": block["mimeType"], "blob": block["data"]}
        if block.get("type") == "resource":
            return {**block["resource"], "uri": uri}
        if "text" in block:
            return {"uri": uri, "mimeType": "text/plain", "text": block["text"]}
    return None
