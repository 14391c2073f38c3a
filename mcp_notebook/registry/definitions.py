"""What a listing may hold, checked when a component is registered.

A definition is computed once and then copied into every ``*/list`` reply, so one bad
value in it (``annotations=5``, a ``nan`` default in a signature, ``meta=[1]``) would make
the whole list fail, for every client, far from the cell that caused it. Each one is
checked here instead, against the shapes the MCP schema gives these fields, and the
registration fails with the parameter named.
"""

from __future__ import annotations

import math
from typing import Any

from .validation import SchemaCheck

_TEXT = {"type": "string"}
_META = {"type": "object"}
_ICONS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["src"],
        "properties": {
            "src": _TEXT,
            "mimeType": _TEXT,
            "sizes": {"type": "array", "items": _TEXT},
            "theme": {"enum": ["light", "dark"]},
        },
    },
}
_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_TOOL_ANNOTATIONS = {
    "type": "object",
    "properties": {"title": _TEXT, **{hint: {"type": "boolean"} for hint in _HINTS}},
}
_ANNOTATIONS = {
    "type": "object",
    "properties": {
        "audience": {"type": "array", "items": {"enum": ["user", "assistant"]}},
        "priority": {"type": "number", "minimum": 0, "maximum": 1},
        "lastModified": _TEXT,
    },
}
# The 2025-11-25 schema: an input and an output schema both describe an object.
_OBJECT_SCHEMA = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"const": "object"}},
}
_COMMON = {"name": _TEXT, "title": _TEXT, "description": _TEXT, "icons": _ICONS, "_meta": _META}
_SHAPES: dict[str, dict[str, Any]] = {
    "Tool": {
        **_COMMON,
        "inputSchema": _OBJECT_SCHEMA,
        "outputSchema": _OBJECT_SCHEMA,
        "annotations": _TOOL_ANNOTATIONS,
    },
    "Resource": {
        **_COMMON,
        "uri": _TEXT,
        "mimeType": _TEXT,
        "size": {"type": "integer", "minimum": 0},
        "annotations": _ANNOTATIONS,
    },
    "Resource template": {
        **_COMMON,
        "uriTemplate": _TEXT,
        "mimeType": _TEXT,
        "annotations": _ANNOTATIONS,
    },
    "Prompt": {
        **_COMMON,
        "arguments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": _TEXT,
                    "title": _TEXT,
                    "description": _TEXT,
                    "required": {"type": "boolean"},
                },
            },
        },
    },
}
# The keyword a user gave for each field of the wire definition.
_PARAMETER = {
    "_meta": "meta",
    "inputSchema": "input_schema",
    "outputSchema": "output_schema",
    "mimeType": "mime_type",
    "uriTemplate": "uri_template",
}
_CHECKS: dict[str, SchemaCheck] = {}


def check_definition(kind: str, name: str, definition: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the parameter if ``definition`` (a ``kind``'s listing
    entry) holds what JSON cannot carry or what the MCP schema does not allow there."""
    where, value = _not_json(definition, ())
    if where:
        raise ValueError(
            f"{kind} {name!r}: {_parameter(where)} holds {value!r}, which JSON cannot "
            "carry (a default of nan or inf in the signature, or a value that is not a "
            "str, number, bool, None, list or dict)"
        )
    check = _CHECKS.get(kind)
    if check is None:
        check = _CHECKS[kind] = SchemaCheck({"type": "object", "properties": _SHAPES[kind]})
    error = check.error(definition)
    if error is not None:
        path = tuple(error.absolute_path)
        raise ValueError(f"{kind} {name!r}: {_parameter(path)}: {error.message}")


def _not_json(value: Any, path: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    """The path to the first value in ``value`` that JSON cannot carry, and that value
    (an empty path when there is none)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (*path, key), key
            found = _not_json(item, (*path, key))
            if found[0]:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _not_json(item, (*path, index))
            if found[0]:
                return found
    elif isinstance(value, float):
        if not math.isfinite(value):
            return path, value
    elif not (value is None or isinstance(value, (str, int, bool))):
        return path, value
    return (), None


def _parameter(path: tuple[Any, ...]) -> str:
    field = str(path[0]) if path else "its definition"
    shown = _PARAMETER.get(field, field)
    rest = ".".join(str(part) for part in path[1:])
    return f"{shown}= (at {rest})" if rest else f"{shown}="
