"""Which tools a caller may call: the interceptor that turns a name into a visible tool.

An app-only tool (MCP Apps, ``visibility: ["app"]``) is not listed to a client without
the UI extension, nor to the model through the dispatcher (``request.via``): for them it
is not there either, the same -32602 as a name that no cell registered.
"""

from __future__ import annotations

from collections.abc import Awaitable

from ..registry import views
from .interceptors import Next, ToolCall
from .jsonrpc import invalid_params
from .outcomes import Result
from .request import RequestContext


def app_may_call(request: RequestContext) -> bool:
    """Whether an app-only tool may run for this request: from an MCP Apps host, not
    passed on by the dispatcher (whose caller is the model)."""
    return request.via is None and views.supports_ui(request.client_capabilities)


def visible(call: ToolCall, next: Next) -> Awaitable[Result]:
    """Interceptor: an unknown or hidden tool is -32602; a visible one goes on."""
    tool = call.tool
    if tool is None or (tool.app_only and not app_may_call(call.request)):
        raise invalid_params(f"Unknown tool: {call.name}", {"name": call.name})
    return next(call)
