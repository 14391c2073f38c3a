"""``tools/call`` as a thin core and an ordered chain of interceptors.

The core (:mod:`.toolcalls`) validates a call, records it, runs it and returns its
result. Everything else a call may meet is an interceptor, one typed signature::

    async def interceptor(call: ToolCall, next: Next) -> Result

It may answer itself (the dispatcher's tools, a resumed round, a task handle), change the
call and pass it on (confirmed arguments), or wrap what comes after it (the notices of a
call that waits). The chain is composed once per server and again only when a feature
is switched on or off (a confirmation hook set, say): a feature not in use is not in it.
An interceptor that has nothing to do for a call returns ``next(call)`` from a plain
``def``: no coroutine of its own on the path.

The core's record step stands at a fixed place: interceptors that decide whether there
is a call to record come **before** it (they see ``call.record`` None), those that wrap
the recorded call's run come **around** the run (``call.record`` is set)::

    validate ─ before: dispatcher, visibility, task mode, resumption
             ─ record ─ around: tasks, confirmation, wait notices ─ run ─ result

Which interceptors, in which order, and where plugged ones go: :mod:`.toolchain`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..registry import Tool
from .calls import CallRecord
from .context import Context
from .mrtr import Asker
from .outcomes import Result, required_str, tool_arguments
from .request import RequestContext
from .tasklink import TaskLink


@dataclass(eq=False, slots=True)
class ToolCall:
    """One ``tools/call`` on its way through the chain."""

    request: RequestContext
    name: str
    arguments: dict[str, Any]
    tool: Tool | None  # the registry's tool of that name, if any (visibility decides)
    record: CallRecord | None = None  # set by the core's record step
    context: Context | None = None  # the tool's Context, for a tool that takes one
    as_task: bool = False  # it may become a task (the task mode said so)
    # How a task's questions to the client travel: its input requests (2026-07-28)
    # or its task's name (2025-11-25).
    asker: Asker | TaskLink | None = None
    # Progress goes on the request's stream before the reply: none may leave early.
    told: bool = False

    @classmethod
    def of(cls, request: RequestContext, tools: Mapping[str, Tool]) -> ToolCall:
        """The call ``request`` asks for (its params checked: -32602 if malformed)."""
        params = request.params
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            name = required_str(params, "name")  # -32602
        if not isinstance(arguments, dict):
            arguments = tool_arguments(params)  # {} when absent, else -32602
        return cls(request, name, arguments, tools.get(name))

    @property
    def target(self) -> str:
        """What a suspended round or a task says it belongs to."""
        return f"tools/call {self.name}"


Next = Callable[[ToolCall], Awaitable[Result]]
Interceptor = Callable[[ToolCall, Next], Awaitable[Result]]


def compose(interceptors: Iterable[Interceptor], core: Next) -> Next:
    """``core`` behind ``interceptors``, the first one outermost."""
    handler = core
    for interceptor in reversed(list(interceptors)):
        handler = _bound(interceptor, handler)
    return handler


def _bound(interceptor: Interceptor, after: Next) -> Next:
    def handle(call: ToolCall) -> Awaitable[Result]:
        return interceptor(call, after)

    return handle
