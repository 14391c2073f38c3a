"""The bridge's dialect plug-ins: the client's first message picks who relays it.

Standard MCP is the bridge's own (relay.py). Any other dialect is a :class:`Dialect`: a
``sniff`` of the connection's first message (is it mine?) and the relay that serves the
connection from then on. Built-in plug-ins register themselves when their module is
imported; the registry imports them the first time it is asked (``BUILT_IN``), so the
core relay names none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .channel import Channel
from .upstream import Target

# Modules that register a dialect on import, loaded on first use: the seed-000 dialect.
BUILT_IN = ("mcp_notebook.bridge.seed_dialect",)


class Relay(Protocol):
    """What the bridge drives: one per connection, fed every message the client sends."""

    def feed(self, message: Any) -> None: ...
    def settle(self, timeout: float) -> bool: ...
    def end_streams(self) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    sniff: Callable[[Any], bool]  # the connection's first message: is it this dialect?
    relay: Callable[[Target, Channel], Relay]


_registered: dict[str, Dialect] = {}
_loaded = False


def register(dialect: Dialect) -> None:
    """Add (or replace, by name) a dialect of the bridge."""
    _registered[dialect.name] = dialect


def sniff(first: Any) -> Dialect | None:
    """The dialect whose sniff takes the connection's first message, if any."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILT_IN:
            importlib.import_module(module)
    for dialect in _registered.values():
        if dialect.sniff(first):
            return dialect
    return None
