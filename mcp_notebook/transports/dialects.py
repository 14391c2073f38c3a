"""The HTTP endpoint's dialect plug-ins: a dialect claims the POSTs that are its own.

The endpoint speaks standard MCP; anything else on the same URL is a plug-in. A plug-in
is a :class:`Dialect`: a media type it adds to what the endpoint accepts, a ``claim``
(does this POST belong to me? -- from its body alone, before any session is looked up)
and ``serve``, which answers the claimed POST on the tornado handler (an ``HttpExchange``:
http_exchange.py names what it offers). The ASGI app serves
no plug-in: it refuses a claimed POST, naming the dialect.

Built-in plug-ins register themselves when their module is imported; the registry imports
them the first time it is asked (``BUILT_IN``), so the shared endpoint code names none.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..protocol import Server

# Modules that register a dialect on import, loaded on first use: the seed-000 dialect.
BUILT_IN = ("mcp_notebook.transports.seed_http",)


@dataclass(frozen=True, slots=True)
class Dialect:
    """One plug-in. ``claim(body, message)`` gets the raw body and the decoded message
    (``UNPARSED`` when the body is not one JSON value) and returns what ``serve`` needs,
    or None when the POST is not the dialect's. ``serve(handler, server, claim)`` answers
    it on the tornado handler (handler.py)."""

    name: str
    media_type: str
    claim: Callable[[bytes, Any], Any]
    serve: Callable[[Any, Server, Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Claimed:
    """A POST a dialect took, with what its ``serve`` needs."""

    dialect: Dialect
    claim: Any


UNPARSED = object()  # the ``message`` of a body that is not one JSON value
_registered: dict[str, Dialect] = {}
_loaded = False


def register(dialect: Dialect) -> None:
    """Add (or replace, by name) a dialect of the endpoint."""
    _registered[dialect.name] = dialect


def registered() -> tuple[Dialect, ...]:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILT_IN:
            importlib.import_module(module)
    return tuple(_registered.values())


def media_types() -> tuple[str, ...]:
    """The media types the plug-ins add to ``application/json`` (asked on every POST:
    one or two, so a tuple is the quickest to search)."""
    if not _loaded:
        registered()
    return tuple(dialect.media_type for dialect in _registered.values())


def claim(body: bytes, message: Any) -> Claimed | None:
    """The first dialect that claims this session-less POST, with its claim."""
    for dialect in registered():
        taken = dialect.claim(body, message)
        if taken is not None:
            return Claimed(dialect, taken)
    return None
