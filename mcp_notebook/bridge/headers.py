"""The HTTP headers of a 2026-07-28 request, from its JSON-RPC body (SEP-2243).

Over stdio everything travels in the body; over Streamable HTTP the client mirrors some
of it into headers so that intermediaries need not parse bodies: ``MCP-Protocol-Version``
(from ``_meta``), ``Mcp-Method``, ``Mcp-Name`` and one ``Mcp-Param-<Name>`` for each tool
argument whose schema property carries ``"x-mcp-header": "<Name>"``. The server checks
that they match the body, so the bridge must produce exactly what an HTTP client would.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import McpNotebookError

logger = logging.getLogger(__name__)

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
META_KEYS = (
    VERSION_KEY,
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
)
# Versions with the initialize handshake; any other version is per-request (2026-07-28+).
HANDSHAKE_ERA = frozenset({"2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
# Which params field ``Mcp-Name`` mirrors (the tasks extension names its task the same way).
NAME_FIELDS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
ANNOTATION = "x-mcp-header"
HEADER_MISMATCH = -32020

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 field-name token
_PLAIN = re.compile(r"[\x20-\x7e\t]*")  # what a header value may hold as it is
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
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

Path = tuple[str, ...]


class InvalidAnnotation(McpNotebookError, ValueError):
    """A tool's ``x-mcp-header`` breaks the rules: an HTTP client must drop the tool."""


def modern_version(message: Any) -> str | None:
    """The per-request protocol version a message carries in ``_meta``, if it is not one
    of the handshake era's."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) and version not in HANDSHAKE_ERA else None


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


def render(value: Any) -> str | None:
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


def annotations(schema: Any) -> dict[Path, str]:
    """``x-mcp-header`` names by property path; raises :class:`InvalidAnnotation`."""
    found: dict[Path, str] = {}
    seen: set[str] = set()
    for path, where in _positions(schema, ()):
        if ANNOTATION not in where:
            continue
        if not path:
            spot = "the schema root" if path == () else "a subschema off the properties chain"
            raise InvalidAnnotation(f"{ANNOTATION} on {spot}")
        label = ".".join(path)
        name = where[ANNOTATION]
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise InvalidAnnotation(f"{ANNOTATION} of {label} is not a header name: {name!r}")
        if where.get("type") not in _PRIMITIVES:
            raise InvalidAnnotation(f"{label}: {ANNOTATION} needs a string, integer or boolean")
        if name.lower() in seen:
            raise InvalidAnnotation(f"{ANNOTATION} {name!r} is used twice")
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


def request_headers(
    message: dict[str, Any], version: str, params_by_path: dict[Path, str] | None = None
) -> dict[str, str]:
    """The 2026-07-28 headers for one request; ``params_by_path`` for a ``tools/call``."""
    method = message["method"]
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name = params.get(NAME_FIELDS.get(method, ""))
    if isinstance(name, str):
        headers["Mcp-Name"] = encode_value(name)
    arguments = params.get("arguments")
    for path, header in (params_by_path or {}).items():
        value: Any = arguments
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        text = render(value)
        if text is not None:  # absent or null: no header, as the spec says
            headers[f"Mcp-Param-{header}"] = encode_value(text)
    return headers


class ToolHeaders:
    """The ``x-mcp-header`` annotations of each tool, learnt from ``tools/list`` results.

    ``forget()`` on ``notifications/tools/list_changed``; ``complete`` says a whole listing
    was learnt since, so a tool still unknown has no annotations to mirror.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, dict[Path, str]] = {}
        self._generation = 0
        self.complete = False

    def get(self, name: str) -> dict[Path, str] | None:
        with self._lock:
            return self._known.get(name)

    def learn(self, tools: Any) -> list[Any]:
        """Remember a page of tools; return it without the tools an HTTP client must drop."""
        kept = []
        for tool in tools if isinstance(tools, list) else []:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            try:
                found = annotations(tool.get("inputSchema"))
            except InvalidAnnotation as exc:
                # What a Streamable HTTP client must do (SEP-2243): the server would refuse
                # every call of it for headers it cannot name.
                logger.warning("mcp-notebook bridge: dropped the tool %r: %s", name, exc)
                continue
            with self._lock:
                self._known[name] = found
            kept.append(tool)
        return kept

    def forget(self) -> None:
        with self._lock:
            self._known.clear()
            self._generation += 1
            self.complete = False

    def begin(self) -> int:
        with self._lock:
            return self._generation

    def finish(self, generation: int) -> None:
        with self._lock:
            self.complete = generation == self._generation
