"""Per-tool OAuth scopes in the ``tools/call`` chain (``@mcp.tool(scopes=[...])``).

A direct ``tools/call`` over HTTP is refused earlier, with HTTP 403 ``insufficient_scope``
(transports/policy.py ``tool_scopes``: what starts a client's step-up). This interceptor
is the check for every other way to a tool: the dispatcher's ``call_notebook_tool``, a
resumed round. Plugged before the record (after visibility) only when a transport checks
OAuth tokens; a request without a verified caller (OAuth off for it) passes.
"""

from __future__ import annotations

from collections.abc import Awaitable

from .codes import INSUFFICIENT_SCOPE
from .interceptors import Next, ToolCall
from .jsonrpc import RpcError
from .outcomes import Result


def check_scopes(call: ToolCall, next: Next) -> Awaitable[Result]:
    tool, caller = call.tool, call.request.caller
    if tool is None or not tool.scopes or caller is None:
        return next(call)
    missing = caller.lacks(tool.scopes)
    if not missing:
        return next(call)
    needed = " ".join(sorted(tool.scopes | caller.scopes))
    raise RpcError(
        INSUFFICIENT_SCOPE,
        f"Forbidden: tool '{tool.name}' needs scope {' '.join(sorted(missing))}",
        {"error": "insufficient_scope", "scope": needed},
    )
