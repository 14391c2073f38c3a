"""The HTTP headers of a 2026-07-28 request, from its JSON-RPC body (SEP-2243).

Over stdio everything travels in the body; over Streamable HTTP the client mirrors some
of it into headers so that intermediaries need not parse bodies: ``MCP-Protocol-Version``
(from ``_meta``), ``Mcp-Method``, ``Mcp-Name`` and one ``Mcp-Param-<Name>`` for each tool
argument whose schema property carries ``"x-mcp-header": "<Name>"``. The server checks
that they match the body, so the bridge must produce exactly what an HTTP client would:
values are rendered and encoded by ``protocol.mirror``, which the server's check uses too.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..protocol.mirror import InvalidAnnotation, Path, encode_value, header_text, mirrored_paths
from ..protocol.names import (
    METHOD_HEADER,
    NAME_FIELDS,
    NAME_HEADER,
    PARAM_HEADER_PREFIX,
    VERSION_HEADER,
)

logger = logging.getLogger(__name__)


def request_headers(
    message: dict[str, Any], version: str, params_by_path: dict[Path, str] | None = None
) -> dict[str, str]:
    """The 2026-07-28 headers for one request; ``params_by_path`` for a ``tools/call``."""
    method = message["method"]
    params = given if isinstance(given := message.get("params"), dict) else {}
    headers = {VERSION_HEADER: version, METHOD_HEADER: method}
    name = params.get(NAME_FIELDS.get(method, ""))
    if isinstance(name, str):
        headers[NAME_HEADER] = encode_value(name)
    arguments = params.get("arguments")
    for path, header in (params_by_path or {}).items():
        value: Any = arguments
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        text = header_text(value)
        if text is not None:  # absent or null: no header, as the spec says
            headers[PARAM_HEADER_PREFIX + header] = encode_value(text)
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
                found = mirrored_paths(tool.get("inputSchema"))
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
