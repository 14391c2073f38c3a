"""``tools/call``: validate -> record -> run -> result, behind its interceptors.

The core knows tools, records, the executor and the reply; what else a call may meet
(the dispatcher's tools, app-only visibility, tasks, a resumed round, a confirmation,
the notices of a wait) is an interceptor (:mod:`.interceptors`), in the chain only while
its feature is in use. :meth:`ToolCalls.use` composes the chain; the server calls it
again when a feature is switched on or off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from ..registry import Registry, views
from ..registry.content import error_result
from .calls import CallLog, CallRecord
from .context import Context
from .executor import Executor, finishing
from .interceptors import Interceptor, Next, ToolCall, compose
from .outcomes import Result, recorded, response, settled, then, tool_outcome
from .request import RequestContext
from .rounds import Rounds, new_context


class ToolCalls:
    """The ``tools/call`` handler: ``await tool_calls(request)``."""

    def __init__(
        self, registry: Registry, calls: CallLog, executor: Executor, rounds: Rounds
    ) -> None:
        self.registry, self.calls, self.executor, self.rounds = registry, calls, executor, rounds
        self.before: tuple[Interceptor, ...] = ()
        self.around: tuple[Interceptor, ...] = ()
        self._around: Next = self._run
        self._handle: Next = self._record

    def use(self, before: Sequence[Interceptor], around: Sequence[Interceptor]) -> None:
        """The chain from now on: ``before`` the record step, then ``around`` the run,
        each list outermost first."""
        self.before, self.around = tuple(before), tuple(around)
        self._around = compose(self.around, self._run)
        self._handle = compose(self.before, self._record)

    def __call__(self, request: RequestContext) -> Awaitable[Result]:
        # validate: the name and the arguments' shape (-32602); the tool is looked up here,
        # and whether this caller may see it is the chain's (.visibility).
        return self._handle(ToolCall.of(request, self.registry.tools))

    async def _record(self, call: ToolCall) -> Result:
        """record: the call is in the history from now on; arguments the tool's schema
        refuses are a tool error. Then the run, behind the ``around`` interceptors."""
        tool, request = call.tool, call.request
        assert tool is not None  # visibility let it through
        record = self.calls.add(
            CallRecord(
                "tools/call",
                call.name,
                call.arguments,
                request.session.client_label,
                via=request.via,
                caller=request.caller,
                view=views.call_origin(tool.view_uri if tool.app_only else None, request.params),
            )
        )
        request.record = call.record = record  # a call whose client hangs up may be dropped
        problem = tool.argument_error(call.arguments)
        if problem is not None:
            record.finish("error", error=ValueError(problem))
            return error_result(problem)
        if tool.injected:
            call.context = new_context(request)
        return await settled(self._around, call, record, call.context)

    def _run(self, call: ToolCall) -> Awaitable[Result]:
        """run: the tool on the executor; its result is recorded where it ran, and the
        reply may leave from there first (see .request), unless something streams before
        it (a Context, a told wait) or the call is a task (its request has its answer)."""
        tool, request, record, context = call.tool, call.request, call.record, call.context
        assert tool is not None and record is not None
        early = context is None and not call.told and not call.as_task and request.offer_channel()

        def finish(ok: bool, value: Any) -> Result:
            outcome = tool_outcome(ok, value)
            if request.cancelled:
                return outcome[0]  # the server's thread records it as cancelled
            if early:
                # The reply first. Recording is bookkeeping, done before this thread runs
                # anything else (a cell that reads mcp.calls, for one).
                request.reply(response(request, outcome[0]))
            return recorded(record, outcome)

        convert: Callable[[Any], Any] = tool.result
        if tool.view_uri is not None:  # its view's rendering of this call is the caller's
            convert = partial(views.for_viewer, views.viewer_of(request.session), tool.result)
        arguments = call.arguments
        injected: dict[type, Any] = {Context: context} if context is not None else {}
        user_code = self.executor.prepare(
            lambda: then(tool.invoke(arguments, injected), convert), record
        )
        work = finishing(user_code, finish)
        if context is None or call.as_task or request.session.era != "modern":
            return self.executor.run(work, record)
        # 2026-07-28: what its Context asks the client become input requests (.rounds)
        return self.rounds.start(work, record, context, call.target, request)
