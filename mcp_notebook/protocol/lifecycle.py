"""What a server says about itself: the ``initialize`` and ``server/discover`` results.

They depend on the server's name, version and instructions, never on what is registered
(every capability is offered, with ``listChanged``, whatever the notebook holds), so a
process that has no registry yet can give the same answer the notebook's server would:
``mcp-notebook serve --transport stdio`` answers the client's handshake while the kernel
still starts (bridge/held.py). :class:`~.server.Server` builds its results here too: the
two cannot drift apart. Light on purpose: no registry, no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .jsonrpc import invalid_params
from .names import APPS_EXTENSION, META_SERVER_INFO, SKILLS_EXTENSION, TASKS_EXTENSION
from .versions import ALL_VERSIONS, TASKS_VERSION, negotiate


def capabilities(version: str | None = None) -> dict[str, Any]:
    """The server's capabilities (a fresh copy: callers may change theirs); a 2025-11-25
    session's include its experimental tasks (protocol/taskcalls.py)."""
    offered: dict[str, Any] = {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "logging": {},
        "completions": {},
        # MCP Apps: tools may come with ui:// views (registry/views.py), in both eras.
        "extensions": {APPS_EXTENSION: {}},
    }
    if version == TASKS_VERSION:
        offered["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    return offered


@dataclass(frozen=True)
class Identity:
    """Who the server is: the part of its handshake results that can vary."""

    name: str
    version: str
    instructions: str | None = None

    def initialize_result(self, params: dict[str, Any]) -> dict[str, Any]:
        """The result of a handshake-era ``initialize`` (``-32602`` without a version)."""
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise invalid_params("initialize needs a protocolVersion string")
        version = negotiate(requested)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": capabilities(version),
            "serverInfo": {"name": self.name, "version": self.version},
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def discover_result(self) -> dict[str, Any]:
        """The result of a 2026-07-28 ``server/discover`` (before the era's ``shape``)."""
        offered = capabilities()
        result: dict[str, Any] = {
            "supportedVersions": list(ALL_VERSIONS),
            # The Tasks and Skills extensions (2026-07-28; protocol/taskcalls.py, skills.py).
            "capabilities": {
                **offered,
                "extensions": {
                    **offered["extensions"],
                    TASKS_EXTENSION: {},
                    SKILLS_EXTENSION: {"directoryRead": True},
                },
            },
            "_meta": {META_SERVER_INFO: {"name": self.name, "version": self.version}},
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result
