"""Tool arguments mirrored into ``Mcp-Param-*`` headers (2026-07-28, SEP-2243), both ends.

The bridge renders an argument as header text with :func:`header_text` and wraps it with
:func:`encode_value`; the server unwraps with :func:`decode_value` and compares with
:func:`header_matches`, which starts from the same :func:`header_text`. One rendering on
both sides, so the bridge cannot send what the server would refuse (a ``42.0`` rendered
``"42"`` on one side and ``"42.0"`` on the other was exactly that).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from ..errors import McpNotebookError
from .names import HEADER_ANNOTATION

Path = tuple[str, ...]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 field-name token
_PLAIN = re.compile(r"[\x20-\x7e\t]*")  # what a header value may hold as it is
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
_BASE64_WRAPPED = re.compile(r"^=\?base64\?(.*)\?=$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"-?[0-9]+")
_PRIMITIVES = ("string", "integer", "boolean")
# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_ONE = (
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_NAMED = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")


class InvalidAnnotation(McpNotebookError, ValueError):
    """A tool's ``x-mcp-header`` breaks the rules: an HTTP client must drop the tool."""


# -- values ----------------------------------------------------------------------------------
def header_text(value: Any) -> str | None:
    """An argument as header text: strings as they are, integers in decimal, booleans as
    ``true``/``false``; None for anything else (no header)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # an integer that a JSON writer spelled 42.0
    if isinstance(value, str):
        return value
    return None


def header_matches(text: str, value: Any) -> bool:
    """Whether a decoded header carries ``value``. Numbers compare as numbers (the spec:
    ``42.0`` and ``42`` are equal), so any client's spelling of an integer passes."""
    if text == header_text(value):
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if not _NUMBER.fullmatch(text):
        return False  # int() and float() also take "4_2", " 42" and non-ASCII digits
    try:
        return (int(text) if _INTEGER.fullmatch(text) else float(text)) == value
    except ValueError:  # more digits than int() converts
        return False


def encode_value(text: str) -> str:
    """A header value as it is when safe, else ``=?base64?<UTF-8 base64>?=``."""
    plain = (
        text
        and _PLAIN.fullmatch(text)
        and text == text.strip(" \t")
        and not _SENTINEL.fullmatch(text)
    )
    if plain:
        return text
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def decode_value(value: str) -> str | None:
    """A header's value: ``=?base64?...?=`` decoded (strictly), anything else as it is;
    None for a wrapped value that is not valid base64 of UTF-8."""
    wrapped = _BASE64_WRAPPED.match(value)
    if wrapped is None:
        return value
    inner = wrapped.group(1)
    if len(inner) % 4 or not _BASE64.match(inner):
        return None
    try:
        return base64.b64decode(inner, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


# -- annotations -----------------------------------------------------------------------------
def mirrored_paths(schema: Any) -> dict[Path, str]:
    """``x-mcp-header`` names by property path; raises :class:`InvalidAnnotation`."""
    found: dict[Path, str] = {}
    seen: set[str] = set()
    for path, where in _positions(schema, ()):
        if HEADER_ANNOTATION not in where:
            continue
        if not path:
            spot = "the schema root" if path == () else "a subschema off the properties chain"
            raise InvalidAnnotation(f"{HEADER_ANNOTATION} on {spot}")
        label = ".".join(path)
        name = where[HEADER_ANNOTATION]
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise InvalidAnnotation(
                f"{HEADER_ANNOTATION} of {label} is not a header name: {name!r}"
            )
        if where.get("type") not in _PRIMITIVES:
            raise InvalidAnnotation(
                f"{label}: {HEADER_ANNOTATION} needs a string, integer or boolean"
            )
        if name.lower() in seen:
            raise InvalidAnnotation(f"{HEADER_ANNOTATION} {name!r} is used twice")
        seen.add(name.lower())
        found[path] = name
    return found


def _positions(schema: Any, path: Path | None) -> Iterator[tuple[Path | None, dict[str, Any]]]:
    """Every subschema, with its property path when only ``properties`` lead to it."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key, value in schema.items():
        if key in _ONE or key in _MANY:  # (``items`` is a list in older drafts)
            for item in value if isinstance(value, list) else [value]:
                yield from _positions(item, None)
        elif key in _NAMED and isinstance(value, dict):
            for name, item in value.items():
                inner = (*path, name) if key == "properties" and path is not None else None
                yield from _positions(item, inner)
