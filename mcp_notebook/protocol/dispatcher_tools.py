"""The dispatcher: two stable tools for clients that never re-list (opt-in).

Some clients ignore ``notifications/tools/list_changed``, or re-list but then cannot call
what is new. With the dispatcher on, ``tools/list`` starts with two tools that never
change: :data:`LIST_TOOL` lists the notebook's tools as they are now (schemas and
descriptions, filtered by name or words), and :data:`CALL_TOOL` calls any of them by
name. :class:`DispatcherTools` is the outermost interceptor of ``tools/call``
(:mod:`.interceptors`). A call through :data:`CALL_TOOL` *is* a ``tools/call`` of the
named tool: the request's ``name`` and ``arguments`` are replaced and the rest of the
chain runs it, so
validation, confirmation, output capture, the call record (marked ``via``), errors,
content, progress and 2026-07-28 input requests are those of a direct call.

Who gets it: every session of a server started with ``dispatcher=True``
(``%mcp start --dispatcher``, ``mcp-notebook serve --dispatcher``), or a client that asks
with the experimental client capability :data:`CAPABILITY` (``mcp-notebook bridge
--dispatcher`` adds it to ``initialize`` and to each 2026-07-28 request's ``_meta``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..registry import Registry, views
from ..registry.content import error_result
from ..registry.validation import SchemaCheck, argument_problem
from ..wire import jsontext
from .calls import CallLog, CallRecord
from .codes import METHOD_NOT_FOUND
from .interceptors import Next, ToolCall
from .jsonrpc import Message, RpcError, invalid_params
from .names import META_CAPABILITIES
from .outcomes import Result
from .request import RequestContext
from .versions import TASKS_VERSION, modern_version

LIST_TOOL = "list_notebook_tools"
CALL_TOOL = "call_notebook_tool"
NAMES = frozenset({LIST_TOOL, CALL_TOOL})
# The experimental client capability that asks for the dispatcher on this session.
CAPABILITY = "mcp-notebook/dispatcher"
MAX_LISTED = 50  # definitions in one listing: a model asks again with a query
# The words are searched on the server's loop: a query's length bounds that work.
MAX_QUERY = 1000

_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "maxLength": MAX_QUERY,
            "description": "Words to look for in a tool's name, title or description "
            "(every word must appear, in any case). Leave out to list every tool.",
        },
        "name": {"type": "string", "description": "One tool's exact name."},
    },
}
_LIST_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tools": {"type": "array", "items": {"type": "object"}},
        "total": {"type": "integer", "description": "how many tools matched"},
    },
    "required": ["tools", "total"],
}
_CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": f"The tool's name, as {LIST_TOOL} gives it."},
        "arguments": {
            "type": "object",
            "description": "The tool's arguments, as its inputSchema describes them.",
        },
    },
    "required": ["name"],
}

DEFINITIONS: tuple[dict[str, Any], ...] = (
    {
        "name": LIST_TOOL,
        "title": "List the notebook's current tools",
        "description": (
            "List the tools this notebook offers right now, each with its description and "
            "input schema. The notebook changes while you work: running a cell adds or "
            "redefines tools, and your own tool list may not show that. If a tool you expect "
            "is not in your list, or a call says a tool is unknown or its arguments are "
            f"wrong, call this (a query narrows it down), then call the tool with {CALL_TOOL}."
        ),
        "inputSchema": _LIST_SCHEMA,
        "outputSchema": _LIST_OUTPUT,
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": CALL_TOOL,
        "title": "Call a notebook tool by name",
        "description": (
            "Call one of the notebook's tools by its name, with its arguments. It is the "
            "same as calling that tool directly: the same checks, confirmation and result. "
            f"Use it for a tool that {LIST_TOOL} shows but that is missing from your own "
            "tool list, or whose definition changed since you connected."
        ),
        "inputSchema": _CALL_SCHEMA,
    },
)

_checks: dict[str, SchemaCheck] = {}  # made when first needed: no schema compiled at import


def offered(everyone: bool, capabilities: dict[str, Any]) -> bool:
    """Whether a request sees the dispatcher: the server offers it to every session, or
    the client asked for it with the experimental capability."""
    if everyone:
        return True
    experimental = capabilities.get("experimental")
    return isinstance(experimental, dict) and CAPABILITY in experimental


# 2025-11-25 lists each tool's task support, and reads none as "forbidden": a call through
# the dispatcher may be a task as far as the named tool allows; a listing never is.
TASK_SUPPORT = {LIST_TOOL: "forbidden", CALL_TOOL: "optional"}


def listing(tools: Iterable[dict[str, Any]], task_support: bool = False) -> list[dict[str, Any]]:
    """``tools/list``'s items with the dispatcher: its two tools first (stable cursors for
    the rest), and no notebook tool of the same name (the dispatcher's win)."""
    own = DEFINITIONS
    if task_support:
        own = tuple({**d, "execution": {"taskSupport": TASK_SUPPORT[d["name"]]}} for d in own)
    return [*own, *(t for t in tools if t.get("name") not in NAMES)]


class DispatcherTools:
    """Interceptor: a call of one of the dispatcher's tools, for a request that sees them
    (``offered``); any other call goes on untouched."""

    def __init__(
        self, registry: Registry, calls: CallLog, offered: Callable[[RequestContext], bool]
    ) -> None:
        self.registry, self.calls, self.offered = registry, calls, offered

    def __call__(self, call: ToolCall, next: Next) -> Awaitable[Result]:
        if call.name not in NAMES or not self.offered(call.request):
            return next(call)
        return self._answer(call, next)

    async def _answer(self, call: ToolCall, next: Next) -> Result:
        """A ``tools/call`` of one of the dispatcher's tools (``call.name``)."""
        request, name, arguments = call.request, call.name, call.arguments
        params, session = request.params, request.session
        as_task = params.get("task") is not None and session.protocol_version == TASKS_VERSION
        if name == LIST_TOOL and as_task:  # its listed taskSupport is "forbidden"
            raise RpcError(METHOD_NOT_FOUND, "This tool cannot be called as a task")
        problem = _argument_error(name, arguments)
        if problem is not None or name == LIST_TOOL:
            record = self.calls.add(CallRecord("tools/call", name, arguments, session.client_label))
            if problem is not None:
                record.finish("error", error=ValueError(problem))
                return error_result(problem)
            result = _list(self.registry, arguments)
            record.finish("done", result=result)
            return result
        target = arguments["name"]
        if target in NAMES:
            raise invalid_params(
                f"Unknown tool: {target} ({CALL_TOOL} calls the notebook's tools; call "
                f"{target} directly)",
                {"name": target},
            )
        # The same request, now naming the tool: everything else (its _meta, progress
        # token, a 2026-07-28 retry's requestState and inputResponses) stays as the
        # client sent it.
        request.params = {**params, "name": target, "arguments": arguments.get("arguments")}
        request.via = name
        return await next(ToolCall.of(request, self.registry.tools))


def _argument_error(name: str, arguments: Any) -> str | None:
    """The message a direct call with such arguments gets (``Tool.argument_error``)."""
    check = _checks.get(name)
    if check is None:
        schema = _LIST_SCHEMA if name == LIST_TOOL else _CALL_SCHEMA
        check = _checks[name] = SchemaCheck(schema)
    return argument_problem(check, name, arguments)


def _list(registry: Registry, arguments: dict[str, Any]) -> dict[str, Any]:
    exact, query = arguments.get("name"), arguments.get("query")
    words = set(query.lower().split()) if isinstance(query, str) else set()
    found = [
        tool.definition
        for tool in registry.tools.values()
        if tool.name not in NAMES
        and (exact is None or tool.name == exact)
        and _matches(_searched(tool.definition), words)
    ]
    # The listing is the model's: never a tool only app views may call (MCP Apps).
    found = views.tools_for(found, ui=False)
    structured = {"tools": found[:MAX_LISTED], "total": len(found)}
    text = jsontext.dumps(structured).decode()
    if len(found) > MAX_LISTED:
        text = f"{MAX_LISTED} of {len(found)} tools; narrow it down with a query.\n{text}"
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured}


def _matches(text: str, words: set[str]) -> bool:
    return all(word in text for word in words)


def _searched(definition: dict[str, Any]) -> str:
    parts = (definition.get(key) for key in ("name", "title", "description"))
    return " ".join(p for p in parts if isinstance(p, str)).lower()


def asking(message: Message) -> Message:
    """``message`` as a client that asks for the dispatcher sends it (the bridge's
    ``--dispatcher``): the capability in ``initialize``, and in each 2026-07-28 request's
    ``_meta`` (which carries the client's capabilities there). Others are returned as they
    are; the client's own message is never changed."""
    params = message.get("params")
    if not isinstance(params, dict):
        return message
    if message.get("method") == "initialize":
        return {**message, "params": _with_capability(params, "capabilities")}
    if modern_version(message) is not None:
        meta = params.get("_meta")
        if isinstance(meta, dict):
            return {
                **message,
                "params": {**params, "_meta": _with_capability(meta, META_CAPABILITIES)},
            }
    return message


def _with_capability(holder: dict[str, Any], key: str) -> dict[str, Any]:
    capabilities = given if isinstance(given := holder.get(key), dict) else {}
    experimental = given if isinstance(given := capabilities.get("experimental"), dict) else {}
    return {**holder, key: {**capabilities, "experimental": {**experimental, CAPABILITY: {}}}}


__all__ = [
    "CALL_TOOL",
    "CAPABILITY",
    "DEFINITIONS",
    "LIST_TOOL",
    "NAMES",
    "DispatcherTools",
    "asking",
    "listing",
    "offered",
]
