"""What a span of an MCP request is named and attributed, by the OpenTelemetry semantic
conventions for MCP: the server's spans (:mod:`.tracing`) and the relays' client spans
(:mod:`.forwarding`: the bridge's, the Jupyter Server relay's) alike. Imports no
``opentelemetry`` and nothing of the server.
"""

from __future__ import annotations

from typing import Any

from .jsonrpc import valid_id

TRACE_KEYS = ("traceparent", "tracestate")  # the W3C trace context, in _meta or headers


def request_attributes(method: str, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The attributes known from the request alone."""
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if valid_id(request_id):
        attributes["jsonrpc.request.id"] = str(request_id)
    name = params.get("name")
    if method == "tools/call" and isinstance(name, str):
        attributes["gen_ai.tool.name"] = name
        attributes["gen_ai.operation.name"] = "execute_tool"
    elif method == "prompts/get" and isinstance(name, str):
        attributes["gen_ai.prompt.name"] = name
    uri = params.get("uri")
    if method.startswith("resources/") and isinstance(uri, str):
        attributes["mcp.resource.uri"] = uri
    return attributes


def span_name(method: str, attributes: dict[str, Any]) -> str:
    """``{mcp.method.name} {target}``: the tool or prompt, when there is one."""
    target = attributes.get("gen_ai.tool.name") or attributes.get("gen_ai.prompt.name")
    return f"{method} {target}" if target else method


def meta_trace(params: Any) -> dict[str, str] | None:
    """The W3C trace context in ``params._meta`` (its string values), None without a
    ``traceparent`` key."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or "traceparent" not in meta:
        return None
    return {k: v for k in TRACE_KEYS if isinstance(v := meta.get(k), str)}
