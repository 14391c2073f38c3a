"""The "MCP v1.0" dialect of seed 000, served by translating it onto standard MCP.

A :class:`SeedSession` speaks the dialect with one client and standard MCP with a server
through ``call(method, params)``, so the same code serves the dialect inside the notebook's
HTTP server and in the stdio bridge. Sans-IO: no sockets and no framing (``wire.framing``).

How each dialect method is served:

- ``initialize {clientCapabilities}``: standard ``initialize``, then ``*/list`` to see
  what is registered (the capability flags);
- ``mcp/listTools``: ``tools/list`` (all pages);
- ``mcp/executeTool {id, arguments}``: ``tools/list`` (id -> name, schemas), then
  ``tools/call``;
- ``mcp/listResources``: ``resources/list``, then ``resources/read`` of each (inline);
- ``mcp/listPrompts``: ``prompts/list``, then ``prompts/get`` of each;
- notifications ``mcp/resourceDidChange`` (we subscribe to every resource) and
  ``mcp/list{Tools,Resources,Prompts}DidChange`` from the standard ones.

The parts: ``session.py`` (lifecycle, the method table, standard notifications),
``tools.py`` / ``resources.py`` / ``prompts.py`` (the methods), ``translate.py`` (results
in the dialect's shapes), ``schemas.py`` (argument checks), ``naming.py`` (recognising
the dialect, mcpIds), ``errors.py`` (codes and the error shape). JSON-RPC itself is
``protocol/dispatch.py``'s, as for standard MCP.

What we do where the document is silent or contradicts itself: docs/seed-dialect.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import lazy

if TYPE_CHECKING:
    from .errors import NOT_INITIALIZED, OUTPUT_MISMATCH, TOOL_FAILED, SeedError, error_reply
    from .naming import is_seed_message, server_authority
    from .schemas import argument_problem
    from .session import SeedSession

# Imported when first used: recognising the dialect (``naming``) costs nothing, serving it
# loads the rest.
_WHERE = {
    "NOT_INITIALIZED": ".errors",
    "OUTPUT_MISMATCH": ".errors",
    "TOOL_FAILED": ".errors",
    "SeedError": ".errors",
    "SeedSession": ".session",
    "argument_problem": ".schemas",
    "error_reply": ".errors",
    "is_seed_message": ".naming",
    "server_authority": ".naming",
}

__all__ = [
    "NOT_INITIALIZED",
    "OUTPUT_MISMATCH",
    "TOOL_FAILED",
    "SeedError",
    "SeedSession",
    "argument_problem",
    "error_reply",
    "is_seed_message",
    "server_authority",
]


def __getattr__(name: str) -> Any:
    return lazy.load(globals(), _WHERE, name)


def __dir__() -> list[str]:
    return lazy.names(globals())
